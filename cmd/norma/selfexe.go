package main

import (
	"fmt"
	"os"
	"path/filepath"
)

// selfExe is the absolute path of this norma binary, symbolic links
// resolved: what other processes (an agent's hooks and MCP servers) are
// told to run.
func selfExe() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("the path of this norma binary: %w", err)
	}
	if r, err := filepath.EvalSymlinks(exe); err == nil {
		exe = r
	}
	return exe, nil
}
