package mcpadd

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
)

// Kinds of server source.
const (
	KindNPM    = "npm"
	KindPython = "python"
	KindNode   = "node"
	KindBinary = "binary"
)

// Command is a classified server command line.
type Command struct {
	Kind string
	// Package is the npm or python package name (npm, python), the file
	// (node) or the program (binary).
	Package string
	// Version is the requested version ("" for the latest).
	Version string
	// Module is set for python3 -m MODULE.
	Module string
	// Args are the server's own arguments.
	Args []string
}

// Parse classifies argv: npx [-y|--yes] PKG[@VER] ARGS, node FILE ARGS,
// uvx PKG[==VER|@VER] ARGS, python3 -m MODULE ARGS, or any other program.
func Parse(argv []string) (Command, error) {
	if len(argv) == 0 || argv[0] == "" {
		return Command{}, errors.New("no command: give it after --, e.g. -- npx -y @modelcontextprotocol/server-memory")
	}
	rest := argv[1:]
	switch filepath.Base(argv[0]) {
	case "npx":
		return parseNPX(rest)
	case "uvx":
		return parseUVX(rest)
	case "node", "nodejs":
		if len(rest) == 0 || strings.HasPrefix(rest[0], "-") {
			return Command{}, errors.New("node: give the server's file first (node FILE ARGS); node options are not supported")
		}
		return Command{Kind: KindNode, Package: rest[0], Args: rest[1:]}, nil
	case "python", "python3":
		if len(rest) < 2 || rest[0] != "-m" {
			return Command{}, errors.New("python: only `python3 -m MODULE ARGS` is supported")
		}
		if !validPythonName(rest[1]) || !pyDotted().MatchString(rest[1]) {
			return Command{}, fmt.Errorf("python: %q is not a module name (python3 -m MODULE installs the distribution MODULE from the index)", rest[1])
		}
		return Command{Kind: KindPython, Package: rest[1], Module: rest[1], Args: rest[2:]}, nil
	}
	return Command{Kind: KindBinary, Package: argv[0], Args: rest}, nil
}

func parseNPX(rest []string) (Command, error) {
	for len(rest) > 0 && strings.HasPrefix(rest[0], "-") {
		switch rest[0] {
		case "-y", "--yes", "-q", "--quiet":
			rest = rest[1:]
		default:
			return Command{}, fmt.Errorf("npx option %s is not supported: use npx -y PACKAGE ARGS", rest[0])
		}
	}
	if len(rest) == 0 {
		return Command{}, errors.New("npx: no package")
	}
	name, ver := splitNPMSpec(rest[0])
	if !validNPMName(name) {
		return Command{}, fmt.Errorf("npx: %q is not an npm package name", rest[0])
	}
	if !validNPMVersion(ver) {
		return Command{}, fmt.Errorf("npx: %q: give a registry version, range or tag after @ (file:, git+, http:, npm: aliases and user/repo are not installed)", rest[0])
	}
	return Command{Kind: KindNPM, Package: name, Version: ver, Args: rest[1:]}, nil
}

// splitNPMSpec splits @scope/pkg@1.2.3 into its name and version.
func splitNPMSpec(s string) (string, string) {
	at := strings.LastIndex(s, "@")
	if at <= 0 {
		return s, ""
	}
	return s[:at], s[at+1:]
}

// validNPMName accepts pkg and @scope/pkg of lower-case URL-safe characters.
func validNPMName(s string) bool {
	name := s
	if scope, rest, ok := strings.Cut(s, "/"); ok {
		if !strings.HasPrefix(scope, "@") || !validNPMPart(scope[1:]) {
			return false
		}
		name = rest
	} else if strings.HasPrefix(s, "@") {
		return false
	}
	return validNPMPart(name)
}

// validNPMVersion accepts what names a package of the registry: a
// version, a range (^1.2, >=1 <2, 1.x || 2) or a dist-tag. npm reads
// anything with ':' or '/' as another source (file:DIR, git+URL, a
// tarball URL, npm:ALIAS, user/repo on GitHub), which is neither pinned by
// the registry's integrity nor confined to the package directory: a
// file: directory is linked into node_modules.
func validNPMVersion(s string) bool {
	if len(s) > 256 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune(".-+^~*<>=| ", c)) {
			return false
		}
	}
	return true
}

func validNPMPart(s string) bool {
	if s == "" || len(s) > 214 || s[0] == '.' || s[0] == '_' {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || strings.ContainsRune("-._~", c)) {
			return false
		}
	}
	return true
}

func parseUVX(rest []string) (Command, error) {
	if len(rest) == 0 || strings.HasPrefix(rest[0], "-") {
		return Command{}, errors.New("uvx: give the package first (uvx PKG[==VER] ARGS); uvx options are not supported")
	}
	name, ver, ok := strings.Cut(rest[0], "==")
	if !ok {
		name, ver, _ = strings.Cut(rest[0], "@")
	}
	if !validPythonName(name) || !validPythonVersion(ver) {
		return Command{}, fmt.Errorf("uvx: %q is not a python package name (and version)", rest[0])
	}
	return Command{Kind: KindPython, Package: name, Version: ver, Args: rest[1:]}, nil
}

// validPythonVersion accepts a PEP 440 version (1.2.3, 1.0rc1, 2!1.0+local,
// 1.*): nothing pip would read as a path, a URL or another requirement.
func validPythonVersion(s string) bool {
	if len(s) > 100 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune(".*+!-_", c)) {
			return false
		}
	}
	return true
}

func validPythonName(s string) bool {
	if s == "" || len(s) > 200 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("-._", c)) {
			return false
		}
	}
	return true
}
