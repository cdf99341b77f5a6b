#!/bin/sh
# Runs the egress-proxy benchmarks (direct HTTPS GET, through Norma's broker,
# through stripe/smokescreen v0.1.0) in one run and prints the medians of the
# -count runs, each proxy's added latency over the direct GET, and the
# ratio, then the same for the process's CPU per request (cpu-ns/op), which
# holds on a loaded machine where wall time does not. Target from issues 8
# and 20: Norma's added latency within 2x of smokescreen's. The bare
# TLS-terminating proxy (bare_test.go) is the floor of terminating TLS.
#   usage: ./compare_broker.sh [extra go test flags]
#   ./compare_broker.sh -bench 'GETNewConn$' runs the new-connection-per-request
#   variants instead (the last -bench flag wins).
set -eu
cd "$(dirname "$0")"
out=$(go test -run '^$' -bench 'GET$' -benchtime 2s -count 3 "$@" .)
printf '%s\n' "$out"
printf '%s\n' "$out" | awk '
# A log line of the proxy (stderr is merged) can split a result line in two:
# the figure is attributed to the last benchmark name seen.
/^Benchmark/ {
	pending = $1; sub(/-[0-9]+$/, "", pending); sub(/^Benchmark/, "", pending)
}
pending != "" {
	for (i = 2; i <= NF; i++) if ($i == "cpu-ns/op") {
		cn[pending]++; cv[pending, cn[pending]] = $(i - 1) + 0
	}
	for (i = 2; i <= NF; i++) if ($i == "ns/op") {
		n[pending]++; v[pending, n[pending]] = $(i - 1) + 0
		if (cn[pending] == n[pending]) pending = ""
		break
	}
}
function median(k) { return med(k, 0) }
function cmedian(k) { return med(k, 1) }
function med(k, c,   i, j, t, m, a) {
	m = c ? cn[k] : n[k]; if (m == 0) return 0
	for (i = 1; i <= m; i++) a[i] = c ? cv[k, i] : v[k, i]
	for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
	return m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
}
function report(sfx,   d, nb, s, r, bt) {
	d = median("DirectGET" sfx); nb = median("NormaBrokerGET" sfx); s = median("SmokescreenGET" sfx)
	if (d == 0 && nb == 0 && s == 0) return
	if (d == 0 || nb == 0 || s == 0) { printf "GET%s: missing results\n", sfx; return }
	printf "\nMedians, GET%s:\n", sfx
	printf "  direct       %10.0f ns/op\n", d
	printf "  norma broker %10.0f ns/op  added %9.0f ns\n", nb, nb - d
	printf "  smokescreen  %10.0f ns/op  added %9.0f ns\n", s, s - d
	if (s - d <= 0) {
		printf "  ratio: undefined (smokescreen added latency %.0f ns is within run-to-run noise)\n", s - d
		return
	}
	r = (nb - d) / (s - d)
	printf "  ratio (norma added / smokescreen added): %.2fx  target <= 2x  %s\n", r, (r <= 2 ? "ok" : "MISSED")
	bt = median("BareTLSProxyGET" sfx)
	if (bt > 0) printf "  bare TLS-terminating proxy %10.0f ns/op  added %9.0f ns (%.2fx smokescreen)\n", bt, bt - d, (bt - d) / (s - d)
	d = cmedian("DirectGET" sfx); nb = cmedian("NormaBrokerGET" sfx); s = cmedian("SmokescreenGET" sfx)
	if (d == 0 || nb == 0 || s == 0 || s - d <= 0) return
	printf "CPU of the whole process (client, proxy, server), medians, GET%s:\n", sfx
	printf "  direct       %10.0f cpu-ns/op\n", d
	printf "  norma broker %10.0f cpu-ns/op  added %9.0f ns\n", nb, nb - d
	printf "  smokescreen  %10.0f cpu-ns/op  added %9.0f ns\n", s, s - d
	printf "  ratio (norma added / smokescreen added): %.2fx\n", (nb - d) / (s - d)
	bt = cmedian("BareTLSProxyGET" sfx)
	if (bt > 0) printf "  bare TLS-terminating proxy %10.0f cpu-ns/op  added %9.0f ns (%.2fx smokescreen)\n", bt, bt - d, (bt - d) / (s - d)
}
END {
	report("")
	report("NewConn")
}'
