#!/bin/sh
# Cold start of the norma binary (issue 20), whole process: `norma --help`,
# `norma policy explain --tool Bash ...` and
# `norma sandbox exec --net none -- /bin/true` beside the equivalent bwrap
# command line (the flags of sandbox's BenchmarkBwrapTrue), interleaved in
# one run (bench/coldstart/main.go; medians of wall and CPU time).
# It measures norma as scripts/build installs it (bin/norma: static,
# stripped) beside what `go build ./cmd/norma` (or `go install`) gives,
# unstripped and dynamically linked ("single").
# BASELINE, when given, is another norma binary (say, built from main, or
# the front build of the pair before issue 30 with norma-full beside it)
# measured in the same run, for before/after.
# Usage: bench/coldstart.sh [RUNS] [BASELINE]   (from the repository root)
set -eu
runs=${1:-200}
base=${2:-}
command -v bwrap >/dev/null 2>&1 || { echo "bwrap missing: apt-get install -y bubblewrap" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
scripts/build "$tmp/bin"
go build -o "$tmp/single/norma" ./cmd/norma
(cd bench && go build -o "$tmp/coldstart" ./coldstart)
# The floor: a Go program that does nothing, built the same way (static).
printf 'package main\n\nfunc main() {}\n' >"$tmp/empty.go"
CGO_ENABLED=0 go build -o "$tmp/empty" "$tmp/empty.go"
mkdir -p "$tmp/ws" "$tmp/home"
cd "$tmp/ws"
export NORMA_HOME="$tmp/home"
set --
for b in "$tmp/bin/norma" "$tmp/single/norma" $base; do
	set -- "$@" "$b --help" "$b policy explain --tool Bash --input {\"command\":\"ls\"}" \
		"$b sandbox exec --net none -- /bin/true"
done
# bwrap sets no memory limit; norma's default is a memory cgroup.
set -- "$@" "$tmp/bin/norma sandbox exec --net none --memory 0 -- /bin/true" "$tmp/empty"
"$tmp/coldstart" -n "$runs" "$@" \
	"$(command -v bwrap) --unshare-all --die-with-parent --ro-bind /usr /usr --symlink usr/lib /lib --symlink usr/lib64 /lib64 --symlink usr/bin /bin --symlink usr/sbin /sbin --proc /proc --dev /dev --tmpfs /tmp --new-session --clearenv /bin/true" |
	sed "s|$tmp/||g"
