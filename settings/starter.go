package settings

import (
	_ "embed"
	"slices"
)

//go:embed starter.yaml
var starter []byte

// Starter returns the starter settings file `norma settings init` writes
// to a workspace's [WorkspaceFile]: commented YAML that allows what a
// read-only git workflow needs (Norma's reading tools; git status, diff,
// log, show and blame; ls, cat, head, tail, wc and pwd) without asking,
// asks before every file change, denies reading private keys, and leaves
// the rest to the default mode, which asks. It parses with [Parse] in
// every scope.
func Starter() []byte { return slices.Clone(starter) }
