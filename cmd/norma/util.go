package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/norma-run/norma/sandbox"
)

// sandboxAvailable reports whether this host can build the OS sandbox; the
// policy's sandbox layer refuses process spawn and plugin network without it.
func sandboxAvailable() bool { return sandbox.Probe().Ready }

func fileExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}

// workspaceDir is --workspace dir made absolute: a usage error for cmd when
// it is not a directory.
func workspaceDir(cmd, dir string) (string, error) {
	ws, err := filepath.Abs(dir)
	if err != nil {
		return "", exitWith(exitUsage, err)
	}
	if st, err := os.Stat(ws); err != nil || !st.IsDir() {
		return "", exitWith(exitUsage, fmt.Errorf("%s: --workspace %s is not a directory", cmd, dir))
	}
	return ws, nil
}
