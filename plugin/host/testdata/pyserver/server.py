#!/usr/bin/env python3
"""A minimal stdio MCP server in the standard library, for the plugin host's
tests: it reports its environment and command line, and lists, reads,
writes and spawns what it is asked to, reporting the OS's answer."""
import json, os, subprocess, sys

TOOLS = ["env", "listdir", "read", "write", "spawn"]

def call(name, a):
    if name == "env":
        with open("/proc/self/cmdline") as f:  # the whole command line, interpreter included
            argv = f.read().split("\0")[:-1]
        return json.dumps({"env": dict(os.environ), "argv": argv})
    if name == "listdir":
        return json.dumps(sorted(os.listdir(a["path"])))
    if name == "read":
        with open(a["path"]) as f:
            return f.read()
    if name == "write":
        with open(a["path"], "w") as f:
            f.write(a["content"])
        return "written"
    if name == "spawn":
        r = subprocess.run(a["argv"], capture_output=True, text=True)
        return "exit %d: %s" % (r.returncode, r.stdout)
    raise ValueError("unknown tool " + name)

def answer(msg):
    m, p = msg.get("method"), msg.get("params") or {}
    if m == "initialize":
        return {"protocolVersion": p.get("protocolVersion", "2025-06-18"), "capabilities": {"tools": {}},
                "serverInfo": {"name": "pyserver", "version": "1.0.0"}}
    if m == "ping":
        return {}
    if m == "tools/list":
        return {"tools": [{"name": t, "description": "test tool " + t, "inputSchema": {"type": "object"}} for t in TOOLS]}
    if m == "tools/call":
        try:
            return {"content": [{"type": "text", "text": call(p["name"], p.get("arguments") or {})}]}
        except Exception as e:  # the OS's refusal goes back to the caller
            return {"content": [{"type": "text", "text": "%s: %s" % (type(e).__name__, e)}], "isError": True}
    raise LookupError(m)

if os.environ.get("PYSERVER_MARK"):  # proves to a test that the server started
    open(os.environ["PYSERVER_MARK"], "w").close()

for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue  # notifications/initialized and other notifications
    try:
        out = {"jsonrpc": "2.0", "id": msg["id"], "result": answer(msg)}
    except LookupError as e:
        out = {"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "no method %s" % e}}
    sys.stdout.write(json.dumps(out) + "\n")
    sys.stdout.flush()
