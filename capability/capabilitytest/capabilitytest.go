// Package capabilitytest holds test doubles for package capability. It is
// for tests only; production code never imports it (internal/deptest).
package capabilitytest

import (
	"context"

	"github.com/norma-run/norma/capability"
)

// DeciderFunc adapts a function to capability.Decider.
type DeciderFunc func(ctx context.Context, req capability.Request) capability.Decision

// Decide calls f.
func (f DeciderFunc) Decide(ctx context.Context, req capability.Request) capability.Decision {
	return f(ctx, req)
}
