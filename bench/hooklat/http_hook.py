# A minimal Claude Code http hook server: read the JSON, answer allow
# (HTTP/1.1, so the client keeps the connection). Prints its port.
import json, sys
from http.server import BaseHTTPRequestHandler, HTTPServer

ANSWER = json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}}).encode()

class Hook(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_POST(self):
        json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(ANSWER)))
        self.end_headers()
        self.wfile.write(ANSWER)
    def log_message(self, *a):
        pass

srv = HTTPServer(("127.0.0.1", 0), Hook)
print(srv.server_address[1], flush=True)
srv.serve_forever()
