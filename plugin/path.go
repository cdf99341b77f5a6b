package plugin

import (
	"path"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/norma-run/norma/capability"
)

const (
	// ManifestName is the manifest file at the package root.
	ManifestName = "manifest.yaml"
	// SignatureName is the signature envelope at the package root. It is
	// not a Merkle leaf: it signs the leaves.
	SignatureName = "package.sig"

	maxPathLen      = 1024
	maxComponentLen = 255
	maxDepth        = 64
)

func strconvQuote(s string) string { return strconv.Quote(s) }

// ValidPath reports why name is not acceptable as a package entry, or nil.
// A valid name is a clean, relative, slash-separated path of at most 1024
// bytes and 64 components of at most 255 bytes each, in valid UTF-8, with no
// "." or ".." component, no backslash, no control character and no trailing
// slash. The returned error is a *capability.Error with code
// PLUGIN_PATH_INVALID.
func ValidPath(name string) error { return validPath("", name) }

// validPath is ValidPath refusing as the operation op.
func validPath(op, name string) error {
	bad := func(msg string) error {
		return newErr(capability.ReasonPluginPathInvalid, op, name, msg, nil)
	}
	switch {
	case name == "":
		return bad("empty path")
	case len(name) > maxPathLen:
		return bad("path longer than " + strconv.Itoa(maxPathLen) + " bytes")
	case !utf8.ValidString(name):
		return bad("path is not valid UTF-8")
	case strings.HasPrefix(name, "/"):
		return bad("absolute path")
	case strings.ContainsRune(name, '\\'):
		return bad("backslash in path")
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f {
			return bad("control character in path")
		}
	}
	parts := strings.Split(name, "/")
	if len(parts) > maxDepth {
		return bad("path deeper than " + strconv.Itoa(maxDepth) + " components")
	}
	for _, p := range parts {
		switch {
		case p == "..":
			return bad("path traverses upwards (\"..\")")
		case p == "." || p == "":
			return bad("path is not clean")
		case len(p) > maxComponentLen:
			return bad("path component longer than " + strconv.Itoa(maxComponentLen) + " bytes")
		}
	}
	if path.Clean(name) != name {
		return bad("path is not clean")
	}
	return nil
}

// idPattern is the plugin id syntax of DESIGN.md.
var idPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9]+(?:[.-][a-z0-9]+)+$`) })
