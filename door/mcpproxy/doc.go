// Package proxy serves one plugin's MCP server to any MCP client, through
// Norma's gate: `norma mcp proxy` is a stdio MCP server whose tools,
// resources and prompts are those of an installed plugin (or an MCP
// server added with `norma mcp add`), and whose every request is a call
// of the runtime's session ([Door]) — lookup, schema, mode and rules,
// capability layers, approval, hooks, the call, the output cap,
// redaction and audit. Nothing in this package reaches the plugin but
// through the door.
//
// tools/list lists the plugin's tools the session's principal may see,
// under the server's own names (not mcp__SERVER__TOOL) with their input
// schemas. A refused tools/call is a tool error result (isError) whose
// text begins "norma: REASON:" with the stable reason code, also in the
// result's _meta ("norma/reason"). resources/list, resources/read,
// prompts/list and prompts/get are calls of the feature tools
// (ListMcpResources, ReadMcpResource, ListMcpPrompts, GetMcpPrompt) for
// this server, decided and audited as in a run; a refusal is a JSON-RPC
// error carrying the code.
//
// Approvals: a client that declared elicitation is asked through it. The
// door's approval service, built with [Proxy.Approver] inside
// agent.PendingApprover, leaves the request pending at once; the tool
// call returns an input request (SEP-2322: an elicitation with the
// approval box the terminal prompt shows and an approve/deny choice; the
// SDK sends it as elicitation/create to a client of an older protocol).
// The client's answer, accepted only for the call it was asked for and
// only once, decides the stored request, and the repeated call redeems
// it: the service binds it to the action hash as it does a terminal's
// answer. Any other client is asked by the door's fallback (a wait for
// `norma approvals approve`, or [Refuse]).
package mcpproxy
