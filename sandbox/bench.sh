#!/bin/sh
# Benchmark sandbox launch against bubblewrap, side by side in one run.
# Installs the Debian package bubblewrap when it is missing (needs root and
# apt). Usage: sandbox/bench.sh [COUNT]   (from the repository root)
set -eu
count=${1:-10}
if ! command -v bwrap >/dev/null 2>&1; then
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
		apt-get update -qq && apt-get install -y -qq bubblewrap >/dev/null
	else
		echo "bwrap missing and cannot install it; BenchmarkBwrapTrue will skip" >&2
	fi
fi
out=$(mktemp)
trap 'rm -f "$out"' EXIT
go test -run '^$' -bench '^Benchmark(LaunchTrue|BwrapTrue)$' -benchtime 200x -count "$count" ./sandbox/ | tee "$out"
echo
echo "medians over $count runs of 200 launches each:"
for b in LaunchTrue BwrapTrue; do
	grep "^Benchmark$b" "$out" | awk '{print $3}' | sort -n |
		awk -v name="$b" '{v[NR]=$1} END {if (NR==0) {print name ": skipped"; exit}
			m = (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2;
			printf "%-12s median %.0f ns/op (%.2f ms)\n", name, m, m/1e6}'
done
