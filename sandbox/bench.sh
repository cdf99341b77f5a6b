#!/bin/sh
# Benchmark sandbox launch against bubblewrap, side by side in one run.
# Installs the Debian package bubblewrap when it is missing (needs root and
# apt). Usage: sandbox/bench.sh [COUNT [LAUNCHES]]   (from the repository root)
#
# The two benchmarks alternate, COUNT rounds of LAUNCHES launches each, so
# that both see the same load on a shared machine; the medians are printed.
# BASE_TEST=path/to/old/sandbox.test adds a third column (an older build of
# the package's test binary, e.g. from `git archive REV`) in the same rounds.
set -eu
count=${1:-10}
launches=${2:-200}
if ! command -v bwrap >/dev/null 2>&1; then
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
		apt-get update -qq && apt-get install -y -qq bubblewrap >/dev/null
	else
		echo "bwrap missing and cannot install it; BenchmarkBwrapTrue will skip" >&2
	fi
fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
go test -c -o "$dir/sandbox.test" ./sandbox/
cd sandbox
bench() { # name binary benchmark
	"$2" -test.run '^$' -test.bench "^Benchmark$3\$" -test.benchtime "${launches}x" -test.benchmem |
		grep "^Benchmark" | sed "s/^Benchmark$3/$1/" | tee -a "$dir/out"
}
i=0
while [ "$i" -lt "$count" ]; do
	bench LaunchTrue "$dir/sandbox.test" LaunchTrue
	bench BwrapTrue "$dir/sandbox.test" BwrapTrue
	if [ -n "${BASE_TEST:-}" ]; then bench BaseLaunchTrue "$BASE_TEST" LaunchTrue; fi
	i=$((i + 1))
done
echo
echo "medians over $count alternating rounds of $launches launches each:"
for b in LaunchTrue BwrapTrue BaseLaunchTrue; do
	grep "^$b-" "$dir/out" | awk '{print $3}' | sort -n |
		awk -v name="$b" '{v[NR]=$1} END {if (NR==0) exit
			m = (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2;
			printf "%-15s median %.0f ns/op (%.2f ms)\n", name, m, m/1e6}'
done
