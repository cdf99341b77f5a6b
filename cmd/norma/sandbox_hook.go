package main

import "github.com/norma-run/norma/sandbox"

// maybeSandboxInit runs the sandbox init when this process was re-executed
// as one (it never returns then), and reports false otherwise.
func maybeSandboxInit() bool {
	if sandbox.IsInit() {
		sandbox.InitMain()
		return true
	}
	return false
}
