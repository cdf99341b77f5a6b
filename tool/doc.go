// Package tool is the contract between Norma and the tools an agent can use:
// the [CoreTool] interface, [Build] with fail-closed defaults, the [Env] of
// capabilities a handler receives, and the [Registry] of tools with its
// per-run, per-principal [View]s.
//
// # The contract
//
// A tool states its name, a description and prompt for the model, a JSON
// Schema (2020-12) for its input, whether a given input is read-only and
// concurrency-safe, its own permission judgment (allow, deny or ask), and
// what capability requests ([Access]) a given input will make. Everything
// a tool leaves out is filled by [Build] with the closed choice: mutating,
// exclusive, ask (approval required), no declared access, and a schema that
// accepts only the empty object.
//
// A handler receives an [Env] holding capabilities only: the scoped file
// system, an HTTP client through the network guard, secret handles, a
// process runner when spawning is allowed, and the run's identity. There is
// no workspace path, no process environment and no free client in it.
//
// # The registry
//
// Registering a name twice is an error; [Registry.Replace] swaps a tool
// explicitly and writes an audit event first. What the model is shown and
// what can be called are the same set, per run and principal chain: a
// [View]. Deferred and hidden tools are neither listed nor callable until
// they are unlocked for that run; the unlock set is part of [ViewState], so a
// resumed run restores it. A subagent's view is derived from its parent's and
// can never call a tool its parent cannot.
//
// Registry entries ([Entry]) expose metadata and judgments, never the
// handler: the only way to run a tool is the [Dispatcher] that
// [Registry.Claim] hands out exactly once, to the execution gate.
//
// Registries, views and dispatchers are safe for concurrent use.
package tool
