package main

import (
	"os"

	"github.com/norma-run/norma/sandbox"
)

// sandboxAvailable reports whether this host can build the OS sandbox; the
// policy's sandbox layer refuses process spawn and plugin network without it.
func sandboxAvailable() bool { return sandbox.Probe().Ready }

func fileExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}
