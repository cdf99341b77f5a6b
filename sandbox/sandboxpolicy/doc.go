// Package sandboxpolicy builds a sandbox's mounts and limits from a
// compiled policy, so the OS enforces the same answer the policy gives
// ("enforce twice"). [Derive] turns the effective file capabilities of a
// [policy.Set] into the read-only, read-write and hidden paths of a
// [sandbox.Spec]; [DefaultLimits] are the resource limits Norma gives a
// sandboxed process tree when nothing narrower is configured.
//
// It sits between the policy and the sandbox: it imports capability,
// manifest, policy and sandbox, and neither of those imports it. The plugin
// host (plugin/host) and the built-in shell tools (tools/shell) both build
// their sandboxes with it, and neither depends on the other.
//
// Derive only reads the policy Set, which is safe for concurrent use; it is
// safe to call from multiple goroutines, though two calls that create the
// same write directory race harmlessly on os.MkdirAll.
package sandboxpolicy
