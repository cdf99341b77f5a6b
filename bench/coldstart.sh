#!/bin/sh
# Cold start of the norma binary (issue 20), whole process, with hyperfine:
# `norma --help`, `norma policy explain --tool Bash ...` and
# `norma sandbox exec --net none -- /bin/true` beside the equivalent bwrap
# command line (the flags of sandbox's BenchmarkBwrapTrue), all in one run.
# BASELINE, when given, is another norma binary (say, built from main)
# measured in the same run for before/after.
# Usage: bench/coldstart.sh [RUNS] [BASELINE]   (from the repository root)
set -eu
runs=${1:-200}
base=${2:-}
for c in hyperfine bwrap; do
	command -v $c >/dev/null 2>&1 || { echo "$c missing: apt-get install -y hyperfine bubblewrap" >&2; exit 1; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/norma" ./cmd/norma
mkdir -p "$tmp/ws" "$tmp/home"
cd "$tmp/ws"
export NORMA_HOME="$tmp/home"
input="'{\"command\":\"ls\"}'"
set -- "$tmp/norma --help" "$tmp/norma policy explain --tool Bash --input $input" \
	"$tmp/norma sandbox exec --net none -- /bin/true"
if [ -n "$base" ]; then
	set -- "$@" "$base --help" "$base policy explain --tool Bash --input $input" \
		"$base sandbox exec --net none -- /bin/true"
fi
hyperfine -N -w 10 -r "$runs" --export-csv "$tmp/out.csv" "$@" \
	"bwrap --unshare-all --die-with-parent --ro-bind /usr /usr --symlink usr/lib /lib --symlink usr/lib64 /lib64 --symlink usr/bin /bin --symlink usr/sbin /sbin --proc /proc --dev /dev --tmpfs /tmp --new-session --clearenv /bin/true" >/dev/null
echo "median wall time over $runs runs each (hyperfine -N); user and sys are means:"
awk -F, -v tmp="$tmp/" 'NR>1 {c=$1; gsub(tmp, "", c); gsub(/""/, "\"", c); sub(/^"/, "", c); sub(/"$/, "", c)
	printf "%8.2f ms  user %5.2f  sys %5.2f  %s\n", $4*1000, $5*1000, $6*1000, c}' "$tmp/out.csv"
