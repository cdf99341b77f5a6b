package main

// maybeSandboxInit runs the sandbox init when this process was re-executed as
// one, and reports whether it did. The sandbox issue replaces this stub with a
// call into package sandbox.
func maybeSandboxInit() bool { return false }
