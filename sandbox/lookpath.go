package sandbox

import (
	"errors"
	"path/filepath"
	"strings"
)

// defaultPath is used when Spec.Env has no PATH.
const defaultPath = "/usr/local/bin:/usr/bin:/bin"

var errNotFound = errors.New("executable file not found in PATH")

// lookPath resolves file the way execvp does, using the PATH found in env
// (not the caller's environment). isExec reports whether a candidate is an
// executable regular file.
func lookPath(file string, env []string, isExec func(string) bool) (string, error) {
	if strings.Contains(file, "/") {
		if isExec(file) {
			return file, nil
		}
		return "", errNotFound
	}
	path := defaultPath
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue // never resolve relative to the working directory
		}
		if p := filepath.Join(dir, file); isExec(p) {
			return p, nil
		}
	}
	return "", errNotFound
}
