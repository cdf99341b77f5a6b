// A minimal Claude Code http hook server: read the JSON, answer allow.
// Prints its port.
const http = require('http');
const answer = JSON.stringify({ hookSpecificOutput: { hookEventName: 'PreToolUse', permissionDecision: 'allow' } });
const srv = http.createServer((req, res) => {
  let buf = '';
  req.on('data', (d) => { buf += d; });
  req.on('end', () => {
    JSON.parse(buf);
    res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(answer) });
    res.end(answer);
  });
});
srv.keepAliveTimeout = 60000;
srv.listen(0, '127.0.0.1', () => console.log(srv.address().port));
