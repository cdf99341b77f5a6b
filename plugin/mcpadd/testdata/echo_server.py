#!/usr/bin/python3
# A minimal stdio MCP server (newline-delimited JSON-RPC, no dependencies)
# for the tests: one read-only tool, echo; it prints its argv and the
# variables named in ECHO_SHOW to stderr.
import json, os, sys


def main():
    for line in sys.stdin:
        msg = json.loads(line)
        method, mid = msg.get("method"), msg.get("id")
        if mid is None:
            continue
        if method == "initialize":
            res = {"protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}},
                   "serverInfo": {"name": "echo", "version": "0.1.0"}}
        elif method == "tools/list":
            res = {"tools": [{"name": "echo", "description": "Echo the text back.",
                              "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
                              "annotations": {"readOnlyHint": True, "openWorldHint": False}}]}
        elif method == "tools/call":
            text = msg["params"].get("arguments", {}).get("text", "")
            res = {"content": [{"type": "text", "text": "echo: " + text + " argv=" + " ".join(sys.argv[1:])}]}
        else:
            sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": method}}) + "\n")
            sys.stdout.flush()
            continue
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": mid, "result": res}) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
