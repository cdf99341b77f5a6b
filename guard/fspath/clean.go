package fspath

import (
	"path"
	"strings"
	"unicode/utf8"

	"github.com/norma-run/norma/capability"
)

// Scheme is the URI prefix a tool may put in front of a workspace-relative
// path ("workspace://docs/a.md"); it is matched case-insensitively.
const Scheme = "workspace://"

// Clean normalizes a workspace name ("workspace://a/b", "a/./b") to the clean
// relative form policies match on, without touching the disk (no symlink
// resolution; fsguard.FS.Resolve does that). It refuses absolute paths, NUL,
// backslashes and anything that leaves the root, with PATH_ESCAPE, and
// names that are empty or not UTF-8, with INVALID_REQUEST.
func Clean(name string) (string, error) {
	if name == "" {
		return "", capability.Denied(capability.ReasonInvalidRequest, "", "empty path")
	}
	rest := name
	if len(rest) >= len(Scheme) && strings.EqualFold(rest[:len(Scheme)], Scheme) {
		rest = rest[len(Scheme):]
		if rest == "" {
			return ".", nil
		}
	} else if strings.Contains(rest, "://") {
		return "", escape("only relative paths and workspace:// URIs are accepted")
	}
	switch {
	case !utf8.ValidString(rest):
		// Policy globs, audit records and explanations are UTF-8 text; a
		// name they cannot represent faithfully is not accepted.
		return "", capability.Denied(capability.ReasonInvalidRequest, "", "path is not valid UTF-8")
	case strings.IndexByte(rest, 0) >= 0:
		return "", escape("path contains a NUL byte")
	case strings.IndexByte(rest, '\\') >= 0:
		// A separator on Windows and a trick elsewhere; refused everywhere
		// so that a name means the same file on every platform.
		return "", escape("path contains a backslash")
	case rest[0] == '/':
		return "", escape("absolute paths are not accepted")
	}
	c := path.Clean(rest)
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", escape("path leads outside the workspace")
	}
	return c, nil
}

func escape(detail string) *capability.Error {
	return capability.Denied(capability.ReasonPathEscape, "", detail)
}
