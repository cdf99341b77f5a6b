// Package mcpproxy serves one plugin's MCP server to any MCP client,
// through Norma's gate: `norma mcp proxy` is an MCP server whose tools,
// resources and prompts are those of an installed plugin (or an MCP
// server added with `norma mcp add`), and whose every request is a call
// of the runtime's session ([Door]) — lookup, schema, mode and rules,
// capability layers, approval, hooks, the call, the output cap,
// redaction and audit. Nothing in this package reaches the plugin but
// through the door.
//
// The proxy is transparent: what the server sends reaches the client
// unchanged unless the gate refuses it, and Norma adds only its own
// _meta keys ("norma/reason", "norma/approval"). Each call through the
// door carries a host.Relay, which the plugin's tool (or feature tool)
// fills with the server's own answer, redacted: the tools/call result
// with every content block, structuredContent and _meta, the server's
// JSON-RPC error with its code, the prompt's messages, the resource's
// contents, the lists with their own _meta; and its progress
// notifications under the client's progressToken. initialize answers the
// server's capabilities, instructions and serverInfo ([Options.Init]),
// tools/list the server's list less what the door hides
// ([Upstream.ServedTools]); logging messages and list_changed are relayed
// ([Upstream.OnNotification]). [passOn] takes out what the host's own
// session with the server added (resultType, the protocol's _meta keys).
//
// A refused tools/call is a tool error result (isError) whose text begins
// "norma: REASON:" with the stable reason code, also in the result's
// _meta ("norma/reason"); a refused resources/read or prompts/get is the
// JSON-RPC error [CodeRefused]; a refused or unoffered list is empty.
//
// Approvals: a client that declared elicitation is asked through it. The
// door's approval service, built with [Proxy.Approver] inside
// agent.PendingApprover, leaves the request pending at once. A client of
// the 2026-07-28 protocol gets an input request (SEP-2322) and repeats
// the call with its answer, accepted only for the call it was asked for
// and only once; an older client is sent elicitation/create within the
// call (elicitNow). Either way the answer decides the stored request
// (decide), the repeated call redeems it (the service binds it to the
// action hash), and every outcome — yes, no, decline, cancel, an error,
// no answer — ends with a tool result. Any other client is asked by the
// door's fallback (a wait for `norma approvals approve`, or [Refuse]).
package mcpproxy
