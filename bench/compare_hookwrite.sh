#!/bin/sh
# The hook decision of a Claude Code Write (agenthook BenchmarkDecideWrite)
# on this tree and on REF, side by side in one run: the benchmark file is
# copied into a worktree of REF, and the two are run in turns, COUNT times
# each; medians of wall and CPU time per decision and their ratios are
# printed (issue 27: within 10 %). On a loaded machine compare the CPU
# time (cpu-ns/op): wall time also counts waiting for a core.
#   usage: bench/compare_hookwrite.sh [REF] [COUNT]     (default 16a0e12 10)
set -eu
cd "$(dirname "$0")/.."
ref=${1:-16a0e12}
count=${2:-10}
wt=$(mktemp -d "${TMPDIR:-/tmp}/norma-hookwrite.XXXXXX")
trap 'git worktree remove --force "$wt" >/dev/null 2>&1 || true; rm -rf "$wt"' EXIT
git worktree add -q --detach "$wt" "$ref"
cp door/agenthook/bench_write_test.go "$wt/agenthook/"
go test -c -o "$wt/new.test" ./door/agenthook
(cd "$wt" && go test -c -o "$wt/old.test" ./agenthook)
out=$(for i in $(seq "$count"); do
	for v in old new; do
		"$wt/$v.test" -test.run '^$' -test.bench 'BenchmarkDecideWrite/' -test.benchtime 300x | sed -n "s/^BenchmarkDecideWrite\/\([a-z]*\)-[0-9]*/\1-$v/p"
	done
done)
printf '%s\n' "$out"
printf '%s\n' "$out" | awk '
{ n[$1]++; v[$1, n[$1]] = $3; n[$1 "cpu"]++; v[$1 "cpu", n[$1 "cpu"]] = $5 }
function median(k,   i, j, t, m, a) {
	m = n[k]
	for (i = 1; i <= m; i++) a[i] = v[k, i]
	for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
	return m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
}
END {
	for (i = 1; i <= 2; i++) {
		c = i == 1 ? "plain" : "link"
		o = median(c "-old"); w = median(c "-new")
		printf "\n%-5s median ns/op: %s %.0f, this tree %.0f, ratio %.3f (goal <= 1.10)\n", c, "'"$ref"'", o, w, w / o
		o = median(c "-oldcpu"); w = median(c "-newcpu")
		printf "%-5s median cpu-ns/op: %s %.0f, this tree %.0f, ratio %.3f (goal <= 1.10)\n", c, "'"$ref"'", o, w, w / o
	}
}'
