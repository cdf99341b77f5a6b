#!/usr/bin/env python3
"""A minimal stdio MCP server for `norma plugin usage`'s door test: fetch
GETs a URL (through the broker in HTTP_PROXY, with the API_TOKEN
placeholder as a bearer token), read reads a file, post is never called."""
import json, os, sys, urllib.request

TOOLS = ["fetch", "read", "post"]

def call(name, a):
    if name == "fetch":
        req = urllib.request.Request(a["url"], headers={"Authorization": "Bearer " + os.environ.get("API_TOKEN", "")})
        with urllib.request.urlopen(req, timeout=20) as r:
            return "%d %s" % (r.status, r.read().decode())
    if name == "read":
        with open(a["path"]) as f:
            return f.read()
    raise ValueError("not implemented: " + name)

def answer(msg):
    m, p = msg.get("method"), msg.get("params") or {}
    if m == "initialize":
        return {"protocolVersion": p.get("protocolVersion", "2025-06-18"), "capabilities": {"tools": {}},
                "serverInfo": {"name": "usageserver", "version": "1.0.0"}}
    if m == "ping":
        return {}
    if m == "tools/list":
        return {"tools": [{"name": t, "description": "test tool " + t, "inputSchema": {"type": "object"}} for t in TOOLS]}
    if m == "tools/call":
        try:
            return {"content": [{"type": "text", "text": call(p["name"], p.get("arguments") or {})}]}
        except Exception as e:
            return {"content": [{"type": "text", "text": "%s: %s" % (type(e).__name__, e)}], "isError": True}
    raise LookupError(m)

for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    try:
        out = {"jsonrpc": "2.0", "id": msg["id"], "result": answer(msg)}
    except LookupError as e:
        out = {"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "no method %s" % e}}
    sys.stdout.write(json.dumps(out) + "\n")
    sys.stdout.flush()
