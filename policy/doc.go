// Package policy decides capability requests: may this plugin, in this run,
// do this to this resource.
//
// A Set is compiled once from the layers — the plugin manifest, the user's
// grant, the workspace policy, the run policy and what the host sandbox can
// enforce — and then answers Decide(ctx, Request) with no I/O and, on the hot
// path, no allocation. A request is allowed only when every layer allows it;
// modes combine as deny < approval_required < allow, deny rules beat allow
// rules inside every layer, and anything not granted is denied. The Decision
// names the first layer that did not allow, the rule that matched (for
// example plugin:permissions.filesystem.deny[0]) and a stable reason code;
// Explain adds a per-layer trace for `norma policy explain`.
//
// The manifest and the grant are allow-lists: what they do not list is not
// granted. Workspace and run policies are ceilings: a list they leave out
// does not constrain, a list they give (even empty) bounds what any plugin
// may use, and their deny globs and modes always apply.
//
// Compiled forms are indexes, not rule lists: network rules are keyed by
// origin, then method, then walked as a segment trie, so cost does not grow
// with the number of rules; globs are classified into literal, prefix,
// any-segment and suffix matchers and only unusual shapes fall back to a
// generic doublestar match.
package policy
