#!/usr/bin/env python3
"""A minimal stdio MCP server for the egress door test (issue 29): fetch
GETs a URL and send POSTs a body to one, both through the broker in
HTTPS_PROXY; an answer's status and body (a broker's denial included)
are the tool's result."""
import json, sys, urllib.error, urllib.request

TOOLS = ["fetch", "send"]

def call(name, a):
    data = None
    if name == "send":
        data = a.get("body", "").encode()
    elif name != "fetch":
        raise ValueError("not implemented: " + name)
    req = urllib.request.Request(a["url"], data=data, method="POST" if data is not None else "GET")
    try:
        with urllib.request.urlopen(req, timeout=20) as r:
            return "%d %s" % (r.status, r.read().decode())
    except urllib.error.HTTPError as e:
        return "%d %s" % (e.code, e.read().decode())

def answer(msg):
    m, p = msg.get("method"), msg.get("params") or {}
    if m == "initialize":
        return {"protocolVersion": p.get("protocolVersion", "2025-06-18"), "capabilities": {"tools": {}},
                "serverInfo": {"name": "egressserver", "version": "1.0.0"}}
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
