// A minimal stdio MCP server (newline-delimited JSON-RPC, no
// dependencies) for the node FILE tests: one read-only tool, echo.
const readline = require('readline');
const send = (m) => process.stdout.write(JSON.stringify(m) + '\n');
readline.createInterface({ input: process.stdin }).on('line', (line) => {
  const msg = JSON.parse(line);
  if (msg.id === undefined) return;
  let result;
  if (msg.method === 'initialize') {
    result = { protocolVersion: msg.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'echo-js', version: '0.1.0' } };
  } else if (msg.method === 'tools/list') {
    result = { tools: [{ name: 'echo_js', inputSchema: { type: 'object' }, annotations: { readOnlyHint: true, openWorldHint: false } }] };
  } else if (msg.method === 'tools/call') {
    result = { content: [{ type: 'text', text: 'echo: ' + JSON.stringify(msg.params.arguments) }] };
  } else {
    send({ jsonrpc: '2.0', id: msg.id, error: { code: -32601, message: msg.method } });
    return;
  }
  send({ jsonrpc: '2.0', id: msg.id, result });
});
