// Package agenthook lets agents that Norma does not run — Claude Code,
// Codex CLI, Gemini CLI — ask Norma before they use a tool.
//
// Each agent speaks its own hook protocol (JSON on stdin, JSON on stdout
// and an exit code, or the same JSON over HTTP). A [Codec] turns one
// agent's hook input into an [Event] in Norma's terms (the tool as a
// Norma call) and renders a [Verdict] back in that agent's format. The
// verdict comes from one [Decider], which decides with the gate's own
// decision path in the event's workspace: no door of this package decides
// on its own.
//
// Everything fails closed: input that does not parse, a tool that cannot
// be mapped, a decider that errs, panics or runs out of time all render as
// a deny in the agent's format, never as a bare error (which most agents
// treat as "go on").
package agenthook
