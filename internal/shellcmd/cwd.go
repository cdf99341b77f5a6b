package shellcmd

import (
	"path"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// This file follows the working directory through a command line, for a
// caller that decides what a command could reach without a sandbox: the
// directory each word that may name a file is used in. `cat ../.env`
// after `cd sub` names sub/../.env, not ../.env.

// Dir is a working directory a command may run in: Path relative to the
// directory the command line starts in ("." is that directory), or
// absolute; with Home, relative to the home directory ($HOME).
type Dir struct {
	Path string
	Home bool
}

// Access says how a [Name] is used.
type Access uint8

const (
	// Arg is an argument of a simple command (what the command does with
	// it is not known).
	Arg Access = iota
	// Read is a file read: the source of an input redirection, or the
	// PATH of a git REV:PATH operand (command.RevPaths: git show
	// HEAD:.env reads .env's content from the repository).
	Read
	// Write is a file written: the target of an output redirection, or
	// an argument the command writes (command.Writes: cp's destination,
	// tee's files, rm's, dd of=, ...).
	Write
)

// Name is a literal word that may name a file: an argument of a simple
// command or a redirection target, with the directories the shell may be
// in when it uses it (more than one when a cd may have failed: after
// `cd sub; cat x`, x is sub/x or x).
type Name struct {
	Word string
	// Home: Word is relative to the home directory (~, ~/x, $HOME/x;
	// bash expands them), and Dirs do not apply.
	Home   bool
	Access Access
	Dirs   []Dir
	// Top: Word is a path relative to the top of the git repository (the
	// PATH of a REV:PATH operand), not to Dirs.
	Top bool
}

// Reasons for Effects.DirUnknown.
const (
	whyCdComputed = "cd to a directory that is not literal (cd $X, cd -, pushd +N, cd with more than one argument)"
	whyPopd       = "popd returns to a directory that is not followed"
	whyCdLoop     = "a cd in a loop"
	whyCdPipe     = "a cd in a pipeline (lastpipe runs it in the shell)"
	whyCdFunc     = "a cd with a function definition (where the function runs is not followed)"
	whyCdEval     = "a cd in eval or a trap action"
	whyCdMany     = "too many directories a cd may have left the shell in"
	whyCdNested   = "a command whose directory is not followed"
	whyChdirOpt   = "a program told to move to a directory that is not literal (tar -C $D, git -C $D)"
)

// maxDirs bounds the directories one word may be used in.
const maxDirs = 16

var startDir = []Dir{{Path: "."}}

func (s *Effects) setDirUnknown(why string) {
	if s.DirUnknown == "" {
		s.DirUnknown = why
	}
}

// tracker computes, for every statement and simple command of a parsed
// script, the directories the shell may be in when it runs it.
type tracker struct {
	s     *Effects
	calls map[*syntax.CallExpr][]Dir
	stmt_ map[*syntax.Stmt][]Dir
	funcs bool
}

// track runs the tracker over f from the directories in.
func (s *Effects) track(f *syntax.File, in []Dir) *tracker {
	t := &tracker{s: s, calls: map[*syntax.CallExpr][]Dir{}, stmt_: map[*syntax.Stmt][]Dir{}}
	before := s.cds
	t.stmts(f.Stmts, in)
	if t.funcs && s.cds > before {
		s.setDirUnknown(whyCdFunc)
	}
	return t
}

// stmts runs a list: each statement starts where the one before may have
// left the shell.
func (t *tracker) stmts(list []*syntax.Stmt, in []Dir) (ok, any []Dir) {
	ok, any = in, in
	for _, st := range list {
		ok, any = t.stmt(st, any)
	}
	return ok, any
}

// stmt returns the directories the shell may be in after st succeeded
// (ok) and after it ran at all (any).
func (t *tracker) stmt(st *syntax.Stmt, in []Dir) (ok, any []Dir) {
	t.stmt_[st] = in
	for _, r := range st.Redirs {
		t.subst(r.Word, in)
		t.subst(r.Hdoc, in)
	}
	if st.Cmd == nil {
		return in, in
	}
	if st.Background || st.Coprocess {
		t.cmd(st.Cmd, in) // a subshell of its own
		return in, in
	}
	ok, any = t.cmd(st.Cmd, in)
	if st.Negated {
		return any, any
	}
	return ok, any
}

func (t *tracker) cmd(c syntax.Command, in []Dir) (ok, any []Dir) {
	switch c := c.(type) {
	case *syntax.CallExpr:
		t.calls[c] = in
		for _, a := range c.Assigns {
			t.subst(a, in)
		}
		for _, w := range c.Args {
			t.subst(w, in)
		}
		return t.cd(c, in)
	case *syntax.BinaryCmd:
		switch c.Op {
		case syntax.AndStmt:
			okX, anyX := t.stmt(c.X, in)
			okY, anyY := t.stmt(c.Y, okX)
			return okY, t.union(anyX, anyY)
		case syntax.OrStmt:
			okX, anyX := t.stmt(c.X, in)
			okY, anyY := t.stmt(c.Y, anyX)
			return t.union(okX, okY), t.union(anyX, anyY)
		default: // pipes: each side runs in a subshell, but lastpipe
			before := t.s.cds
			t.stmt(c.X, in)
			t.stmt(c.Y, in)
			if t.s.cds > before {
				t.s.setDirUnknown(whyCdPipe)
			}
			return in, in
		}
	case *syntax.Subshell:
		t.stmts(c.Stmts, in)
		return in, in
	case *syntax.Block:
		return t.stmts(c.Stmts, in)
	case *syntax.IfClause:
		okC, anyC := t.stmts(c.Cond, in)
		okT, anyT := t.stmts(c.Then, okC)
		okE, anyE := anyC, anyC
		if c.Else != nil {
			okE, anyE = t.cmd(c.Else, anyC)
		}
		return t.union(okT, okE), t.union(anyT, anyE)
	case *syntax.CaseClause:
		t.subst(c.Word, in)
		ok, any = in, in
		for _, it := range c.Items {
			for _, p := range it.Patterns {
				t.subst(p, in)
			}
			o, a := t.stmts(it.Stmts, in)
			ok, any = t.union(ok, o), t.union(any, a)
		}
		return ok, any
	case *syntax.WhileClause, *syntax.ForClause:
		// The body may run any number of times; a cd in it would move
		// the shell further each time.
		before := t.s.cds
		if w, isWhile := c.(*syntax.WhileClause); isWhile {
			t.stmts(w.Cond, in)
			t.stmts(w.Do, in)
		} else {
			f := c.(*syntax.ForClause)
			t.subst(f.Loop, in)
			t.stmts(f.Do, in)
		}
		if t.s.cds > before {
			t.s.setDirUnknown(whyCdLoop)
		}
		return in, in
	case *syntax.FuncDecl:
		t.funcs = true
		t.stmt(c.Body, in)
		return in, in
	case *syntax.TimeClause:
		if c.Stmt != nil {
			return t.stmt(c.Stmt, in)
		}
		return in, in
	case *syntax.CoprocClause:
		t.stmt(c.Stmt, in)
		return in, in
	default: // declarations, arithmetic, [[ ]], let: no cd, but substitutions
		t.subst(c, in)
		return in, in
	}
}

// subst runs the command and process substitutions under n, each in a
// subshell that starts in the directories in.
func (t *tracker) subst(n syntax.Node, in []Dir) {
	if n == nil || isNilNode(n) {
		return
	}
	syntax.Walk(n, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.CmdSubst:
			t.stmts(n.Stmts, in)
			return false
		case *syntax.ProcSubst:
			t.stmts(n.Stmts, in)
			return false
		}
		return true
	})
}

// isNilNode reports whether n is a typed nil pointer (a *syntax.Word
// field that is not set).
func isNilNode(n syntax.Node) bool {
	switch n := n.(type) {
	case *syntax.Word:
		return n == nil
	case *syntax.Assign:
		return n == nil
	}
	return false
}

// cd applies a cd or pushd (after builtin or command) to in.
func (t *tracker) cd(c *syntax.CallExpr, in []Dir) (ok, any []Dir) {
	args := c.Args
	for len(args) > 0 {
		if v, known := wordValue(args[0]); known && (v == "builtin" || v == "command") {
			args = args[1:]
			continue
		}
		break
	}
	if len(args) == 0 {
		return in, in
	}
	name, _ := wordValue(args[0])
	switch name {
	case "cd", "pushd", "popd":
	default:
		return in, in
	}
	t.s.cds++
	if name == "popd" {
		t.s.setDirUnknown(whyPopd)
		return in, in
	}
	args = args[1:]
	physical := false
	for len(args) > 0 {
		v, known := wordValue(args[0])
		if !known || v == "-" || !strings.HasPrefix(v, "-") {
			break
		}
		args = args[1:]
		if v == "--" {
			break
		}
		if strings.Trim(v, "-LPe@") != "" {
			t.s.setDirUnknown(whyCdComputed)
			return in, in
		}
		physical = physical || strings.Contains(v, "P")
	}
	var to Dir
	switch len(args) {
	case 0:
		if name == "pushd" {
			t.s.setDirUnknown(whyCdComputed) // swaps the top two
			return in, in
		}
		to = Dir{Path: ".", Home: true}
	case 1:
		v, home, known := pathWord(args[0])
		if !known || v == "-" || name == "pushd" && (strings.HasPrefix(v, "+") || strings.HasPrefix(v, "-")) {
			t.s.setDirUnknown(whyCdComputed)
			return in, in
		}
		switch {
		case home:
			to = Dir{Path: v, Home: true}
		case v == "":
			return in, in // cd "" stays (bash 5)
		default:
			if !path.IsAbs(v) && !dotted(v) {
				t.s.CDSearch = true
			}
			to = Dir{Path: v}
		}
	default:
		t.s.setDirUnknown(whyCdComputed)
		return in, in
	}
	if to.Home || path.IsAbs(to.Path) {
		to.Path = joinDir("", to.Path, physical)
		return []Dir{to}, t.union(in, []Dir{to})
	}
	out := make([]Dir, 0, len(in))
	for _, d := range in {
		out = append(out, Dir{Path: joinDir(d.Path, to.Path, physical), Home: d.Home})
	}
	return out, t.union(in, out)
}

// dotted reports whether a cd target is one bash does not look up in
// CDPATH: ., .., or a name starting with ./ or ../.
func dotted(v string) bool {
	return v == "." || v == ".." || strings.HasPrefix(v, "./") || strings.HasPrefix(v, "../")
}

// joinDir joins a cd target to a directory as bash does: cd -L (the
// default) removes .. lexically, cd -P resolves the directory first, so
// the components are kept for the caller to resolve on disk.
func joinDir(base, to string, physical bool) string {
	p := to
	if base != "" && base != "." && !path.IsAbs(to) {
		p = base + "/" + to
	}
	if physical {
		return p
	}
	return path.Clean(p)
}

// union returns the distinct directories of a and b.
func (t *tracker) union(a, b []Dir) []Dir {
	out := slices.Clone(a)
	for _, d := range b {
		if !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	if len(out) > maxDirs {
		t.s.setDirUnknown(whyCdMany)
		return out[:maxDirs]
	}
	return out
}

// pathWord returns the value of w as a path: a literal word, or one that
// starts with an unquoted ~ or $HOME, which bash expands to the home
// directory (home is then true and the value is what follows, "." for
// nothing). known is false for any other computed word, and for ~user.
func pathWord(w *syntax.Word) (v string, home, known bool) {
	if w == nil || len(w.Parts) == 0 {
		return "", false, false
	}
	rest := &syntax.Word{Parts: w.Parts}
	switch p := w.Parts[0].(type) {
	case *syntax.Lit:
		if !strings.HasPrefix(p.Value, "~") {
			v, known = wordValue(w)
			return v, false, known
		}
		after := p.Value[1:]
		if after != "" && !strings.HasPrefix(after, "/") {
			return "", false, false // ~user, ~+, ~-
		}
		rest.Parts = append([]syntax.WordPart{&syntax.Lit{Value: after}}, w.Parts[1:]...)
	case *syntax.ParamExp:
		if !isHome(p) {
			return "", false, false
		}
		rest.Parts = w.Parts[1:]
	case *syntax.DblQuoted: // "$HOME/x", "$HOME"/x
		h, ok := (*syntax.ParamExp)(nil), false
		if len(p.Parts) > 0 && !p.Dollar {
			h, ok = p.Parts[0].(*syntax.ParamExp)
		}
		if !ok || !isHome(h) {
			v, known = wordValue(w)
			return v, false, known
		}
		rest.Parts = append([]syntax.WordPart{&syntax.DblQuoted{Parts: p.Parts[1:]}}, w.Parts[1:]...)
	default:
		v, known = wordValue(w)
		return v, false, known
	}
	v = ""
	if len(rest.Parts) > 0 {
		if v, known = wordValue(rest); !known {
			return "", false, false
		}
	}
	v = strings.TrimPrefix(v, "/")
	if v == "" {
		v = "."
	}
	return v, true, true
}

// isHome reports whether p is $HOME or ${HOME}, nothing more.
func isHome(p *syntax.ParamExp) bool {
	return p.Param != nil && p.Param.Value == "HOME" && !p.Excl && !p.Length && !p.Width &&
		p.Index == nil && p.Slice == nil && p.Repl == nil && p.Exp == nil && p.Names == 0
}
