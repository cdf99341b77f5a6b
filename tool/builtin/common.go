package builtin

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/tool"
)

// fail returns the error a built-in tool reports: a *capability.Error with
// layer "tool" and a stable code, which the gate turns into an error
// result carrying the code.
func fail(reason capability.Reason, format string, args ...any) error {
	return &capability.Error{
		Decision: capability.Decision{Mode: capability.Deny, Reason: reason, Layer: "tool"},
		Detail:   fmt.Sprintf(format, args...),
	}
}

// fsErr maps a file-system error to a tool error: guard refusals keep their
// code (they are *capability.Error inside the *fs.PathError), a missing file
// becomes FILE_NOT_FOUND, anything else is returned as it is.
func fsErr(err error) error {
	if err == nil {
		return nil
	}
	if capability.ReasonOf(err) != "" {
		return err
	}
	if errors.Is(err, fs.ErrNotExist) {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return fail(capability.ReasonFileNotFound, "%s: no such file or directory", pe.Path)
		}
		return fail(capability.ReasonFileNotFound, "no such file or directory")
	}
	return err
}

func needFS(env tool.Env) (tool.FS, error) {
	if env.FS == nil {
		return nil, fail(capability.ReasonCapabilityMissing, "this call has no file-system capability")
	}
	return env.FS, nil
}

// walker is the optional guarded walk of the file system; *fsguard.FS
// implements it. Tools that walk a tree refuse to work without it rather
// than walk with ReadDir and risk descending where the guard would not.
type walker interface {
	WalkDir(ctx context.Context, name string, fn fs.WalkDirFunc) error
}

func needWalker(env tool.Env) (walker, error) {
	f, err := needFS(env)
	if err != nil {
		return nil, err
	}
	w, ok := f.(walker)
	if !ok {
		return nil, fail(capability.ReasonCapabilityMissing, "the file system of this call cannot walk a tree through the guard")
	}
	return w, nil
}

// ignoredDirs are never descended into by Glob and Grep (unless the search
// starts inside one): version-control metadata and dependency trees.
var ignoredDirs = map[string]bool{".git": true, ".hg": true, ".svn": true, "node_modules": true}

func allow(context.Context, tool.Input) tool.Permission {
	return tool.Permission{Behavior: tool.Allow}
}

func yes(tool.Input) bool { return true }

// str returns the string member key of in, or def.
func str(in tool.Input, key, def string) string {
	if s, ok := in.String(key); ok {
		return s
	}
	return def
}

// pathOr returns in's "path" member, or "." when absent or empty.
func pathOr(in tool.Input, key string) string {
	if s := str(in, key, ""); s != "" {
		return s
	}
	return "."
}

func readAccess(key string) func(tool.Input) ([]tool.Access, error) {
	return func(in tool.Input) ([]tool.Access, error) {
		return []tool.Access{{Kind: capability.FSRead, Path: pathOr(in, key)}}, nil
	}
}

// searchAccess is the read of the tree under in[key], which the call
// searches file by file.
func searchAccess(key string) func(tool.Input) ([]tool.Access, error) {
	return func(in tool.Input) ([]tool.Access, error) {
		return []tool.Access{{Kind: capability.FSRead, Path: pathOr(in, key), Tree: true}}, nil
	}
}

func noAccess(tool.Input) ([]tool.Access, error) { return []tool.Access{}, nil }

// plural returns "1 match" or "N matches".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// truncRunes cuts s to at most n bytes on a rune boundary, marking the cut.
func truncRunes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !isRuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

func joinLines(lines []string) string { return strings.Join(lines, "\n") }
