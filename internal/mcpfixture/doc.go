// Package mcpfixture is a test double: an MCP server (go-sdk) that uses
// every feature a proxy must pass on unchanged, for the door test that
// drives it directly and through `norma mcp proxy` with the same client
// and compares the two transcripts.
//
// Its tool "everything" answers every content block type (text with
// annotations and _meta, image, audio, resource_link, an embedded text
// resource and an embedded blob), structuredContent and the result's
// _meta; "progress" sends three progress notifications under the
// caller's progressToken and two logging messages before it answers;
// "invalid" answers a JSON-RPC error -32602; "fails" a tool result with
// isError; "echo" its text and "big" a text of 1 MiB (for the
// benchmark). Its tools carry a title, annotations, an outputSchema, icons
// and _meta. The prompt "multi" answers three messages (user, assistant,
// an embedded resource); the resources are a text (fixture://text), a
// binary blob (fixture://blob) and a template (fixture://item/{id}). It
// declares logging, listChanged and instructions.
//
// cmd/mcpfixture serves it over stdio. Nothing in production imports it
// (internal/deptest).
package mcpfixture
