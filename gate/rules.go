package gate

import "github.com/norma-run/norma/policy"

// Rules are the permission rules of [Options.Rules]; the syntax and the
// matcher live in package policy.
//
// Deprecated: use [policy.Rules]. The alias remains until the callers
// outside this module's reviewed set have moved.
type Rules = policy.Rules
