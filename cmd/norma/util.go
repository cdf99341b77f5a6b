package main

import "github.com/norma-run/norma/sandbox"

// sandboxAvailable reports whether this host can build the OS sandbox; the
// policy's sandbox layer refuses process spawn and plugin network without it.
func sandboxAvailable() bool { return sandbox.Probe().Ready }
