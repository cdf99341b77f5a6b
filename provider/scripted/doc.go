// Package scripted is an offline [provider.Provider] whose model turns are
// read from a YAML script, for offline runs, `norma demo`, end-to-end tests
// and users' own policy tests.
//
// A script is a list of turns; each turn has text, tool calls, or both:
//
//	turns:
//	  - tool_calls:
//	      - {id: t1, name: Read, input: {path: docs/intro.md}}
//	      - {id: t2, name: mcp__com.example.issue-helper__issues.comment, input: {repo: acme/demo, number: 42, body: "…"}}
//	  - text: "Done."
//
// A script may also hold sampling: a list of texts that answer, in order,
// the sampling requests of plugins' MCP servers ([Provider.Sampler]).
//
// Parsing is strict: unknown fields, duplicate keys, several documents, an
// empty turn, a tool call without id or name, a repeated id, and an input
// that is not a mapping are errors of type [*ParseError] with FILE:LINE:COL.
//
// Each Complete call returns the next turn: a text block (streamed to onText
// in one delta) and tool_use blocks, with stop reason tool_use when the turn
// has tool calls and end_turn otherwise. After the last turn every call
// returns end_turn with no blocks.
//
// Pairing check: before answering, the provider verifies that the request's
// last message is a user message holding exactly one tool_result for each
// tool_use of the previous turn, and that the message before it is the
// assistant turn echoing those tool_use blocks. Otherwise Complete fails
// with an error wrapping [ErrUnpaired], so end-to-end tests prove that every
// tool call was answered.
//
// A [Provider] keeps the position in the script; it is safe for concurrent
// use, but a script describes one conversation.
package scripted
