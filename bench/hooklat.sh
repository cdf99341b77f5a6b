#!/bin/sh
# Hook latency (issue 18): what one decision costs Claude Code, side by
# side in one run (bench/hooklat/main.go; medians and p90):
#   - command hooks, process start to answer (norma as scripts/build
#     installs it, the unstripped binary of go build, and BASELINE, another
#     norma binary, when given, deciding itself and forwarding to the same
#     daemon), stdin = a real-shaped PreToolUse JSON (a Read of a
#     workspace file), with each process's CPU time and minor faults: `norma hook
#     claude-code` deciding itself, the same forwarding to a running
#     `norma serve`, and a minimal Python, Node and Go hook that only read
#     the JSON and answer allow (the Go one, built as norma is, is the
#     floor of any Go command hook: process start and encoding/json);
#   - http hooks on a kept-alive connection: `norma serve --http`, and a
#     minimal Python and Node server that do the same as their hooks.
# Usage: bench/hooklat.sh [RUNS] [BASELINE]   (from the repository root)
set -eu
runs=${1:-200}
base=${2:-}
tmp=$(mktemp -d /tmp/hooklat.XXXXXX)
pids=
trap 'for p in $pids; do kill "$p" 2>/dev/null || true; done; rm -rf "$tmp"' EXIT
scripts/build "$tmp/bin"                  # as installed: one static, stripped binary
go build -o "$tmp/single/norma" ./cmd/norma # the single binary go install gives
(cd bench && go build -o "$tmp/hooklat" ./hooklat &&
	CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$tmp/gohook" ./hooklat/gohook)
cp bench/hooklat/*.py bench/hooklat/*.js "$tmp/"
python=$(python3 -c 'import sys; print(sys.executable)') # not a pyenv shim
node=$(command -v node)
mkdir -p "$tmp/ws/docs" "$tmp/self" "$tmp/self2" "$tmp/self3" "$tmp/daemon"
echo '# Intro' >"$tmp/ws/docs/intro.md"
printf '{"session_id":"9f1c2a7e-0b3d-4c56-8e9f-1a2b3c4d5e6f","transcript_path":"%s/t.jsonl","cwd":"%s","prompt_id":"p-1","permission_mode":"default","effort":"medium","hook_event_name":"PreToolUse","tool_name":"Read","tool_input":{"file_path":"%s/docs/intro.md"},"tool_use_id":"toolu_01"}' \
	"$tmp/ws" "$tmp/ws" "$tmp/ws" >"$tmp/pre.json"
export XDG_CONFIG_HOME="$tmp/config" NORMA_MANAGED_SETTINGS="$tmp/none.yaml"

"$tmp/bin/norma" --home "$tmp/daemon" serve --http 127.0.0.1:0 2>"$tmp/serve.log" &
pids="$pids $!"
"$python" "$tmp/http_hook.py" >"$tmp/py.port" &
pids="$pids $!"
"$node" "$tmp/http_hook.js" >"$tmp/node.port" &
pids="$pids $!"
i=0
until grep -q 'listening on http' "$tmp/serve.log" && [ -s "$tmp/py.port" ] && [ -s "$tmp/node.port" ]; do
	i=$((i + 1)); [ $i -lt 200 ] || { cat "$tmp/serve.log" >&2; exit 1; }
	sleep 0.05
done
url=$(sed -n 's|.*listening on \(http://[0-9.:]*\).*|\1|p' "$tmp/serve.log")
tok=$(cat "$tmp/daemon/serve.token")

cd "$tmp/ws"
"$tmp/hooklat" -n "$runs" -input "$tmp/pre.json" \
	"cmd:$tmp/bin/norma --home $tmp/self hook claude-code" \
	"cmd:$tmp/bin/norma --home $tmp/daemon hook claude-code" \
	"cmd:$tmp/single/norma --home $tmp/self2 hook claude-code" \
	${base:+"cmd:$base --home $tmp/self3 hook claude-code"} \
	${base:+"cmd:$base --home $tmp/daemon hook claude-code"} \
	"cmd:$python $tmp/hook.py" \
	"cmd:$node $tmp/hook.js" \
	"cmd:$tmp/gohook" \
	"http:$url/hooks/claude-code $tok" \
	"http:http://127.0.0.1:$(cat "$tmp/py.port")/ " \
	"http:http://127.0.0.1:$(cat "$tmp/node.port")/ " |
	sed "s|$tmp/||g; s|$python|python3|; s|$node|node|; s| $tok||"
n=$(grep -c 'via unix' "$tmp/serve.log" || true)
echo "norma serve answered $n forwarded command hooks (runs+1 expected, twice that with a BASELINE)"
# The daemon's own time per request (its log: read, decide, audit commit),
# to split the http hook's latency from the transport's.
for via in unix http; do
	sed -n "s/.*via $via: .*bytes, \([0-9.]*\)\([µm]*s\)$/\1 \2/p" "$tmp/serve.log" |
		awk '{ v = $1; if ($2 == "µs") v /= 1000; else if ($2 == "s") v *= 1000; print v }' | sort -n |
		awk -v via="$via" '{ a[NR] = $1 } END { if (NR) printf "norma serve, time inside the daemon per %s request: median %.3f ms\n", via, a[int((NR + 1) / 2)] }'
done
