#!/bin/sh
# Team load (issue 19): RUNS `norma run` processes started at once, each in
# its own state directory and workspace with a generated script of TURNS
# turns of CALLS tool calls (3 of 5 allowed: Read, Glob, an Edit appending
# its id to a file; 2 of 5 denied: a Read of .env, a Write outside the
# workspace), against one store. Side by side in one go test process
# (the built binary, without -race):
#   - one SQLite file shared by every state directory (--store PATH);
#   - one database of a private PostgreSQL server (internal/pgtest);
#   - the same on PostgreSQL with a kill -9 of the server at half the load,
#     restart, norma run --resume of every run;
#   - the same with a kill -9 of norma serve --team at half the load.
# Each checks that every decision is stored exactly once, no edit ran
# twice, nothing denied happened and audit verify passes (see
# cmd/norma/load_test.go). The "teamload:" lines are the figures of
# BENCHMARKS.md: decisions/s over the wall time from the first start to the
# last exit, and the p50/p99 latency of a turn (CALLS decisions, from the
# previous turn's results to this turn's, as the --json output shows them).
# Usage: bench/teamload.sh [RUNSxTURNSxCALLS]   (default 8x100x10; from
# the repository root; needs PostgreSQL's initdb and postgres)
set -eu
size=${1:-8x100x10}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
# A missing PostgreSQL fails instead of skipping.
status=0
NORMA_REQUIRE_SANDBOX=1 NORMA_LOAD_SIZE=$size go test -count=1 -v -timeout 60m \
	-run 'TestDoorLoad(SQLite|Postgres|PostgresKill9|TeamServerKill9)$' ./cmd/norma >"$out" 2>&1 || status=$?
grep -E '^(--- |ok|FAIL)|load_test.go' "$out" | cut -c1-300
exit $status
