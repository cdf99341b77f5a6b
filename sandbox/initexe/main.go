//go:build linux

// Command norma-sandbox-init is the slim sandbox init: a static program
// that links only package sandbox, so that a launch starts a small Go
// runtime instead of re-executing the whole (large, often dynamically
// linked) binary that asked for the sandbox. Package sandbox embeds it,
// built by `go generate ./sandbox`, and executes it from a sealed memfd;
// it is not installed and is useless on its own.
package main

import (
	"fmt"
	"os"

	"github.com/norma-run/norma/sandbox"
)

func main() {
	if sandbox.IsInit() {
		sandbox.InitMain() // never returns
	}
	fmt.Fprintln(os.Stderr, "norma-sandbox-init: only package sandbox starts this program")
	os.Exit(2)
}
