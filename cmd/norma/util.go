package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/norma-run/norma/sandbox"
	"golang.org/x/sys/unix"
)

// sandboxAvailable reports whether this host can build the OS sandbox; the
// policy's sandbox layer refuses process spawn and plugin network without it.
func sandboxAvailable() bool { return sandbox.Ready() }

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

// stdinIsTerminal reports whether r is a terminal (a TCGETS ioctl
// succeeds; /dev/null is a character device but not a terminal).
func stdinIsTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}
