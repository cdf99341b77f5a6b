package main

import (
	"github.com/norma-run/norma/sandbox"
	// The sandbox init runs from this package's initializer, before the
	// heavy initializers of the rest of the binary (see its doc).
	_ "github.com/norma-run/norma/sandbox/sandboxinit"
)

// maybeSandboxInit runs the sandbox init when this process was re-executed
// as one (it never returns then), and reports false otherwise. Normally
// sandboxinit has already done it; this is the fallback.
func maybeSandboxInit() bool {
	if sandbox.IsInit() {
		sandbox.InitMain()
		return true
	}
	return false
}
