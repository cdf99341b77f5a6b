// Package sandboxpolicy builds a sandbox's mounts and limits from a
// compiled policy, so the OS enforces the same answer the policy gives
// ("enforce twice"). [Derive] turns the effective file capabilities of a
// [policy.Set] into the read-only, read-write, hidden, pinned and frozen
// paths of a [sandbox.Spec] (pins keep the names the policy decides on
// from being moved; [Protect] adds directories hidden by identity; the
// files agents load as code, listed by package agentfiles, are frozen
// whatever the policy says); [DefaultLimits] are the resource limits
// Norma gives a sandboxed process tree when nothing narrower is
// configured. [Runner] is the built-in tools' process capability (a
// tool.Runner): every command it runs or starts gets a sandbox derived at
// that moment from the one compiled built-in policy; the gate wraps it
// for every call.
//
// It sits between the policy and the sandbox: it imports agentfiles,
// capability, manifest, policy, sandbox and tool (the contract it
// implements), and none of those imports it. The plugin host
// (plugin/host) builds its sandboxes with Derive; the built-in shell
// tools (tools/shell) run theirs through a Runner they receive in their
// Env, and import neither.
//
// Derive only reads the policy Set, which is safe for concurrent use; it
// and a Runner are safe to use from multiple goroutines, though two calls
// that create the same write directory (or the same agent-file directory)
// race harmlessly on os.MkdirAll and os.Mkdir.
package sandboxpolicy
