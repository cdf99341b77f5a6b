#!/bin/sh
# Runs the Norma vs cedar-go benchmarks and prints the Cedar/Norma ratios
# (medians of the -count runs). Targets from issue 3: >= 20x on the typical
# decisions, >= 1000x at 10,000 rules.
#   usage: ./compare.sh [extra go test flags]
set -eu
cd "$(dirname "$0")"
out=$(go test -run '^$' -bench '(Typical|10kRules)$' -benchtime 1s -count 3 "$@" .)
printf '%s\n' "$out"
printf '%s\n' "$out" | awk '
/^Benchmark/ && $4 == "ns/op" {
	name = $1; sub(/-[0-9]+$/, "", name); sub(/^Benchmark/, "", name)
	n[name]++; v[name, n[name]] = $3
}
function median(k,   i, j, t, m, a) {
	m = n[k]; if (m == 0) return 0
	for (i = 1; i <= m; i++) a[i] = v[k, i]
	for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
	return m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
}
function row(label, c, nn, target,   cm, nm, r) {
	cm = median(c); nm = median(nn)
	if (cm == 0 || nm == 0) { printf "%-12s missing\n", label; return }
	r = cm / nm
	printf "%-12s cedar %12.1f ns/op  norma %8.1f ns/op  ratio %9.1fx  target >= %dx  %s\n", label, cm, nm, r, target, (r >= target ? "ok" : "MISSED")
}
END {
	print ""
	print "Cedar/Norma (medians):"
	row("typical/net", "CedarTypical/net", "NormaTypical/net", 20)
	row("typical/fs", "CedarTypical/fs", "NormaTypical/fs", 20)
	row("10k rules", "Cedar10kRules", "Norma10kRules", 1000)
}'
