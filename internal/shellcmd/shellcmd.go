// Package shellcmd reports what a bash command runs: every simple
// command's argv, the files its redirections read and write, and what
// cannot be known before it runs.
//
// It parses with a real Bash parser (mvdan.cc/sh/v3/syntax) and unwraps
// `sh -c`, eval, trap actions, find -exec and wrappers such as sudo, env,
// nice, timeout and xargs, so a rule about rm also sees `sudo env rm`. A
// word whose value is only known at run time becomes a value no rule word
// equals: one word ("$VAR", ~) or any number of words ($VAR unquoted,
// $(…), globs, braces, "$@", the words xargs and find -exec {} + add).
//
// Anything it cannot see through is reported in [Effects.Unknown], with
// the reason; a caller must never allow such a command by rule (the gate
// asks, and denies in dontAsk and plan). Bash runs code from places that
// are not commands, and each is Unknown:
//
//   - arithmetic that is not constant: (( x )), $((x)), $[x], let,
//     for ((…)), the operands of [[ -eq … ]], declare -i, array
//     subscripts (${a[i]}, a[i]=, ([i]=v)) and ${s:off:len}. Bash evaluates
//     a variable's value in arithmetic again, so x='a[$(cmd)]' runs cmd.
//     Numbers, operators, $#, $?, $$, $! and ${#x} are constant; a variable
//     name is not, so `for ((i=0; i<3; i++))` is Unknown too.
//   - indirect expansion ${!name} (not ${!prefix*} nor ${!a[@]}) and the
//     transformations ${x@P} and other @ operators than Q E A a U u L K k.
//   - a variable name taken from data or with a non-constant subscript:
//     [[ -v ]], test -v and -R, read, printf -v, mapfile, getopts, wait -p,
//     unset, {var}> redirections, and declarations (declare, typeset,
//     local, export, readonly) with a computed word, -n or -i.
//   - an assignment (prefix, standalone, declared, for/select, read, env
//     VAR=) to a variable that changes what later commands run: the one
//     list of package codeenv (PATH, HOME, IFS, BASH_ENV, ENV,
//     PROMPT_COMMAND, PS0–PS4, GIT_*, LD_*, NODE_OPTIONS, …) and the
//     programs' own (EDITOR, PAGER, proxies, …: command.DangerousVar),
//     or of any but a literal number to an integer variable (RANDOM, SRANDOM, OPTIND, HISTCMD:
//     bash evaluates the value as arithmetic). `IFS= read` is allowed.
//   - an extended glob pattern that holds an expansion
//     ([[ x == @($(cmd)) ]]: the parser keeps the pattern as text).
//   - trap or eval of a computed string, source and . of any file (its
//     commands are not on the command line), and builtins that load or
//     bind code: enable -f, hash -p, alias definitions, bind -x,
//     compgen/complete -C -F -W, set -k, set -H, set -o vi|emacs, fc,
//     shopt -s expand_aliases, sudo -s.
//
// What stays analyzable, so allow rules work: plain commands, pipelines,
// lists, loops, functions, substitutions, `FOO=1 go test` (the prefixed
// argv is a request of its own), `export X=1` and a standalone
// assignment to an upper-case name (each a request of its own, shown as
// written, because a later command may see it in its environment),
// lower-case shell variables (x=1; echo $x), constant arithmetic, [ ] and
// [[ ]] string and file tests, IFS= read -r, and trap or eval of literal
// text (its commands are reported).
//
// Parse and Argv do no I/O and are safe for concurrent use.
package shellcmd

import (
	"path"
	"slices"
	"strings"
	"unicode/utf8"

	"mvdan.cc/sh/v3/syntax"

	"github.com/norma-run/norma/internal/command"
)

// maxShellDepth bounds nested `sh -c` / eval / wrapper unwrapping.
const maxShellDepth = 8

// Effects is what a command line will do, as far as it can be known
// before it runs.
type Effects struct {
	// Spawns holds the argv of every simple command, wrappers unwrapped:
	// `sudo rm x` yields both {"sudo", "rm", "x"} and {"rm", "x"}, and
	// /usr/bin/rm also yields rm. A computed word is a value containing a
	// NUL byte, which no literal rule word equals.
	Spawns [][]string
	Reads  []string // redirection sources, as written
	Writes []string // redirection targets, as written
	// Unknown is non-empty when part of the effect cannot be known (a parse
	// error, a computed command name, eval of a computed string, a
	// computed redirection target); it says why. Such a command must never
	// be allowed by a rule.
	Unknown string

	// Names are the literal words that may name files (every argument of
	// every simple command, every redirection target) with the working
	// directories they are used in, cd and pushd followed: for a caller
	// that decides what a command could reach without a sandbox. When
	// DirUnknown is non-empty (cd $X, cd -, popd, a cd in a loop, ...),
	// where some of them are used cannot be known; it says why.
	Names []Name
	// Globs are the arguments that are pathname patterns and otherwise
	// literal (cat secrets/*, rm *.log), as patterns of path.Match with
	// the directories they are used in: what they name is only known on
	// the disk, which a caller that decides what a command reads expands.
	Globs      []Name
	DirUnknown string
	// Compound is non-empty when the command line holds more than simple
	// commands joined by |, &&, || and ; (a command or process
	// substitution, a subshell or group, a loop, if, case, a function, a
	// background job): what it is. Claude Code asks for such a line
	// whatever its allow rules say, and so does Norma: no allow rule but
	// one naming the whole tool (Bash) covers it, and it is not read-only.
	// Its commands are still in Spawns, for the deny and ask rules.
	Compound string
	// Rewritten: a simple command is not written as its words separated
	// by single spaces (a quote, an escape, more spaces, a prefix
	// assignment: npm run 'lint'). Claude Code matches an exact rule
	// against the command's text, so no exact allow rule covers it.
	Rewritten bool
	// CDSearch: a cd or pushd target is a relative name that bash looks
	// up in CDPATH first (cd sub, not cd ./sub), so where it goes depends
	// on the shell's CDPATH.
	CDSearch bool

	// vars are the literal values assigned to shell variables so far
	// (x=rm), each name's values in the order met, at most maxVarValues.
	vars map[string][]string

	cur []Dir    // the directories of the simple command being recorded
	tr  *tracker // of the script being walked
	cds int      // cd, pushd and popd commands seen
}

func (s *Effects) setUnknown(why string) {
	if s.Unknown == "" {
		s.Unknown = why
	}
}

// Parse parses a command line with a real Bash parser and collects every
// simple command (in lists, pipelines, subshells, command and process
// substitutions, functions, control structures, here-strings) and every
// redirection.
func Parse(cmd string) Effects {
	var s Effects
	s.parse(cmd, 0)
	return s
}

// ReadOnly reports whether every effect of the command is a read: it is
// known (no Unknown, no DirUnknown), it redirects output to no file,
// none of its arguments is a file it writes, and every simple command it
// runs only reads and prints ([command.ReadOnly]: ls, cat, grep, git
// status, ...). Which files it reads is the caller's to decide, from
// Names and Globs: a denied file is still denied.
func (s *Effects) ReadOnly() bool {
	if s.Unknown != "" || s.DirUnknown != "" || s.Compound != "" || len(s.Writes) > 0 || len(s.Spawns) == 0 {
		return false
	}
	for _, n := range s.Names {
		if n.Access == Write {
			return false
		}
	}
	for _, argv := range s.Spawns {
		if !command.ReadOnly(argv) {
			return false
		}
	}
	return true
}

// Argv reports what an exec of argv without a shell runs: argv itself and
// whatever command it wraps (sudo, env, sh -c SCRIPT, ...). argv is not
// retained.
func Argv(argv []string) Effects {
	var s Effects
	for _, w := range argv[min(1, len(argv)):] {
		s.Names = append(s.Names, Name{Word: w, Dirs: startDir})
	}
	for _, wr := range command.Writes(argv) {
		s.Names = append(s.Names, Name{Word: wr.Path, Access: Write, Dirs: startDir})
	}
	for _, p := range command.RevPaths(argv) {
		s.Names = append(s.Names, Name{Word: p, Access: Read, Dirs: startDir, Top: true})
	}
	s.command(append([]string(nil), argv...), 0)
	s.cur = nil
	return s
}

func (s *Effects) parse(cmd string, depth int) {
	if depth > maxShellDepth {
		s.setUnknown("commands nested too deeply")
		return
	}
	if strings.IndexByte(cmd, 0) >= 0 || !utf8.ValidString(cmd) {
		// A shell given this through argv sees something else (argv
		// strings end at NUL); never guess.
		s.setUnknown("the command contains a NUL byte or invalid UTF-8")
		return
	}
	if strings.IndexByte(cmd, '\r') >= 0 {
		// The parser reads a carriage return as a blank, bash as part
		// of a word.
		s.setUnknown("the command contains a carriage return")
		return
	}
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(cmd), "")
	if err != nil {
		s.setUnknown("the command does not parse")
		return
	}
	// The directories of a nested script (sh -c, eval) start where the
	// command that runs it is.
	cur, tr := s.cur, s.tr
	defer func() { s.cur, s.tr = cur, tr }()
	in := cur
	if in == nil {
		in = startDir
	}
	s.tr = s.track(f, in)
	exempt := map[*syntax.Assign]bool{}
	syntax.Walk(f, func(n syntax.Node) bool {
		if s.Compound == "" {
			s.Compound = compound(n)
		}
		switch n := n.(type) {
		case *syntax.Stmt:
			dirs := s.dirs(s.tr.stmt_[n])
			for _, r := range n.Redirs {
				s.redirect(r, dirs)
			}
		case *syntax.CallExpr:
			s.cur = s.dirs(s.tr.calls[n])
			s.names(n.Args)
			s.call(n, depth, exempt)
			if !s.Rewritten && len(n.Args) > 0 && !plainCall(n, cmd) {
				s.Rewritten = true
			}
		}
		s.node(n, exempt)
		return true
	})
}

// dirs returns d, or the start directory when the tracker did not follow
// the node (which leaves the directories unknown).
func (s *Effects) dirs(d []Dir) []Dir {
	if d == nil {
		s.setDirUnknown(whyCdNested)
		return startDir
	}
	return d
}

// names records the literal arguments of the simple command being walked.
// After the option of a program that moves to a directory before it opens
// its arguments (tar -C DIR, git -C, make -C, env --chdir, sudo --chdir),
// the words are used in that directory too, and so is what it runs. An
// argument that names a file the command writes ([command.Writes]: cp's
// destination, tee's files, rm's, dd of=, sed -i's, sort -o, ...) is
// also a Name with Access Write.
func (s *Effects) names(args []*syntax.Word) {
	var opts []string
	var writes []command.Written
	if len(args) > 1 && command.MayWrite(path.Base(wordOf(args[0]))) {
		argv := make([]string, len(args))
		for i, w := range args {
			argv[i] = wordOf(w)
		}
		writes = command.Writes(argv)
		// git show HEAD:.env reads .env's content from the repository:
		// a read of .env, relative to the repository's top.
		for _, p := range command.RevPaths(argv) {
			s.Names = append(s.Names, Name{Word: p, Access: Read, Dirs: startDir, Top: true})
		}
	}
	for i, w := range args {
		v, home, ok := pathWord(w)
		if ok && v != "" && i > 0 {
			s.Names = append(s.Names, Name{Word: v, Home: home, Dirs: s.cur})
		}
		if !ok && i > 0 {
			if g, isGlob := globWord(w); isGlob {
				s.Globs = append(s.Globs, Name{Word: g, Dirs: s.cur})
			}
		}
		for _, wr := range writes {
			switch {
			case wr.Arg != i:
			case ok && wr.Path == v:
				s.Names = append(s.Names, Name{Word: v, Home: home, Access: Write, Dirs: s.cur})
			case !strings.HasPrefix(wr.Path, "~"):
				s.Names = append(s.Names, Name{Word: wr.Path, Access: Write, Dirs: s.cur})
			}
		}
		if !ok && opts != nil && len(w.Parts) > 0 {
			// --chdir=$D
			if l, isLit := w.Parts[0].(*syntax.Lit); isLit {
				if _, arg := chdirArg(opts, strings.SplitAfter(l.Value, "=")[0]+"x"); arg {
					s.setDirUnknown(whyChdirOpt)
				}
			}
		}
		if !ok || home {
			continue
		}
		if o, found := command.ChdirOption(path.Base(v)); found {
			opts = o
			continue
		}
		dir, arg := chdirArg(opts, v)
		if !arg {
			continue
		}
		if dir == "" && i+1 < len(args) {
			var known bool
			if dir, home, known = pathWord(args[i+1]); !known || home || dir == "" {
				s.setDirUnknown(whyChdirOpt)
				continue
			}
		}
		moved := []Dir{{Path: dir}}
		if !path.IsAbs(dir) {
			moved = moved[:0]
			for _, d := range s.cur {
				moved = append(moved, Dir{Path: joinDir(d.Path, dir, true), Home: d.Home})
			}
		}
		t := tracker{s: s}
		s.cur = t.union(s.cur, moved)
	}
}

// chdirArg reports whether v is one of opts, with its value when it holds
// one (--directory=DIR; "" when the value is the next word).
func chdirArg(opts []string, v string) (dir string, ok bool) {
	for _, o := range opts {
		if v == o {
			return "", true
		}
		if strings.HasPrefix(o, "--") && strings.HasPrefix(v, o+"=") {
			return v[len(o)+1:], v != o+"="
		}
	}
	return "", false
}

func (s *Effects) redirect(r *syntax.Redirect, dirs []Dir) {
	var read, write bool
	switch r.Op {
	case syntax.RdrOut, syntax.AppOut, syntax.RdrClob, syntax.RdrAll, syntax.AppAll, syntax.RdrAllClob, syntax.AppAllClob:
		write = true
	case syntax.RdrIn:
		read = true
	case syntax.RdrInOut:
		read, write = true, true
	case syntax.DplOut, syntax.DplIn:
		v, ok := wordValue(r.Word)
		if ok && (v == "-" || isDigits(v)) {
			return // fd duplication or close
		}
		read, write = r.Op == syntax.DplIn, r.Op == syntax.DplOut
	default:
		return // here-documents and here-strings read no file
	}
	if r.Word == nil {
		return
	}
	v, ok := wordValue(r.Word)
	if !ok {
		s.setUnknown("a redirection target is computed")
		return
	}
	switch v {
	case "/dev/null", "/dev/stdout", "/dev/stderr", "/dev/stdin":
		return
	}
	if read {
		s.Reads = append(s.Reads, v)
		s.Names = append(s.Names, Name{Word: v, Access: Read, Dirs: dirs})
	}
	if write {
		s.Writes = append(s.Writes, v)
		s.Names = append(s.Names, Name{Word: v, Access: Write, Dirs: dirs})
	}
}

func (s *Effects) call(c *syntax.CallExpr, depth int, exempt map[*syntax.Assign]bool) {
	if len(c.Args) == 0 {
		// Standalone assignments; their substitutions are walked. One to
		// an environment-style name can change what later commands do
		// (the name may be exported), so it is a request of its own.
		for _, a := range c.Assigns {
			if a.Name != nil && envStyle(a.Name.Value) {
				s.Spawns = append(s.Spawns, []string{assignText(a)})
			}
			s.assigned(a)
		}
		return
	}
	argv := make([]string, 0, len(c.Args))
	for _, w := range c.Args {
		argv = append(argv, wordOf(w))
	}
	if isDynamic(argv[0]) {
		// x=rm; $x f: the command is unknown (asked, never allowed by a
		// rule), and is also each command a literal value assigned to x
		// earlier in the line would make it, for the deny and ask rules
		// (Claude Code denies this under deny: Bash(rm:*)).
		if name, ok := paramName(c.Args[0]); ok {
			for _, v := range s.vars[name] {
				s.Spawns = append(s.Spawns, append([]string{v}, argv[1:]...))
			}
		}
	}
	if len(c.Assigns) > 0 {
		// VAR=x cmd: the environment can change what cmd does (LD_PRELOAD,
		// GIT_SSH_COMMAND, ...), so the prefixed form is a request of its
		// own that an allow rule for cmd does not cover.
		full := make([]string, 0, len(c.Assigns)+len(argv))
		only := true // only IFS for read: IFS= read -r line
		for _, a := range c.Assigns {
			full = append(full, assignText(a))
			if a.Name != nil && a.Name.Value == "IFS" && (argv[0] == "read" || argv[0] == "mapfile" || argv[0] == "readarray") {
				// The assignment lasts for the builtin only and
				// changes nothing but how it splits its input.
				exempt[a] = true
			} else {
				only = false
			}
		}
		if !only {
			s.Spawns = append(s.Spawns, append(full, argv...))
		}
	}
	s.command(argv, depth)
}

func assignText(a *syntax.Assign) string {
	if a.Name == nil {
		return dynamicWord
	}
	if a.Value == nil {
		return a.Name.Value + "="
	}
	if a.Array != nil || a.Index != nil {
		return a.Name.Value + "=" + dynamicWord
	}
	op := "="
	if a.Append {
		op = "+="
	}
	v := wordOf(a.Value)
	if isDynamic(v) {
		v = dynamicWord
	}
	return a.Name.Value + op + v
}

// command records argv and whatever command it wraps.
func (s *Effects) command(argv []string, depth int) {
	if len(argv) == 0 {
		return
	}
	if isDynamic(argv[0]) {
		s.setUnknown("the command name is computed")
		s.Spawns = append(s.Spawns, argv)
		return
	}
	s.Spawns = append(s.Spawns, argv)
	if strings.Contains(argv[0], "/") {
		// /usr/bin/rm is rm for the rules too.
		base := path.Base(argv[0])
		alias := append([]string{base}, argv[1:]...)
		s.Spawns = append(s.Spawns, alias)
		argv = alias
	}
	if depth > maxShellDepth {
		s.setUnknown("commands nested too deeply")
		return
	}
	s.builtin(argv, depth)
	switch argv[0] {
	case "sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "busybox":
		s.shell(argv, depth)
	case "eval":
		script, ok := literalJoin(argv[1:])
		if !ok {
			s.setUnknown("eval of a computed string")
			return
		}
		s.sameShell(script, depth+1)
	case "find":
		s.find(argv, depth)
	default:
		if inner, env, ok := command.Unwrap(argv); ok {
			for _, e := range env {
				if name, _, _ := strings.Cut(e, "="); command.DangerousVar(name) {
					s.setUnknown(whyDangerVar)
				}
			}
			if inner == nil {
				s.setUnknown("a wrapper's command cannot be determined")
				return
			}
			s.command(inner, depth+1)
		}
	}
}

func literalJoin(words []string) (string, bool) {
	for _, w := range words {
		if isDynamic(w) {
			return "", false
		}
	}
	return strings.Join(words, " "), true
}

// shell handles `sh -c SCRIPT` (with combined flags such as -ec, -lc) and
// `busybox sh -c`.
func (s *Effects) shell(argv []string, depth int) {
	args := argv[1:]
	if argv[0] == "busybox" {
		if len(args) == 0 {
			return
		}
		s.command(args, depth+1)
		return
	}
	sawC, startup := false, false
	for i := 0; i < len(args); i++ {
		a := args[i]
		if isDynamic(a) {
			s.setUnknown("sh with a computed argument")
			return
		}
		if a == "--login" || a == "--rcfile" || a == "--init-file" || len(a) > 1 && a[0] == '-' && a[1] != '-' && strings.ContainsAny(a, "li") {
			startup = true
		}
		if sawC && startup {
			// A login or interactive shell runs its startup files
			// (profile, rc, $ENV) before the script: commands the
			// command line does not show.
			s.setUnknown("sh -c in a login or interactive shell runs its startup files first")
			return
		}
		if a == "--" || a == "-" {
			i++
		} else if strings.HasPrefix(a, "-") || strings.HasPrefix(a, "+") {
			if a == "-o" || a == "+o" || a == "-O" || a == "+O" || a == "--rcfile" || a == "--init-file" {
				i++
			} else if !strings.HasPrefix(a, "--") && strings.Contains(a, "c") {
				sawC = true
			}
			continue
		}
		// The first operand: with -c the script, else a script file (the
		// spawn itself is the request).
		if !sawC {
			return
		}
		if i >= len(args) {
			break
		}
		s.parse(args[i], depth+1)
		return
	}
	if sawC {
		s.setUnknown("sh -c with a computed script")
	}
}

// find records the commands of -exec, -execdir, -ok and -okdir. find
// puts the file names where {} is (all of them, for a command ended by +).
func (s *Effects) find(argv []string, depth int) {
	for i := 1; i < len(argv); i++ {
		switch argv[i] {
		case "-exec", "-execdir", "-ok", "-okdir":
			// The command ends at ";", or at "+" right after "{}".
			j := i + 1
			for j < len(argv) && argv[j] != ";" && !(argv[j] == "+" && j > i+1 && argv[j-1] == "{}") {
				j++
			}
			if j > i+1 {
				inner := append([]string(nil), argv[i+1:j]...)
				for k, w := range inner {
					if strings.Contains(w, "{}") {
						inner[k] = dynamicWord
						if j < len(argv) && argv[j] == "+" {
							inner[k] = dynamicWords
						}
					}
				}
				s.command(inner, depth+1)
			}
			i = j
		}
	}
}

// sameShell parses a script that runs in this shell (eval, a trap
// action): a cd in it moves the shell for what follows, which is not
// followed.
func (s *Effects) sameShell(script string, depth int) {
	before := s.cds
	s.parse(script, depth)
	if s.cds > before {
		s.setDirUnknown(whyCdEval)
	}
}

// compound says what n is when it is more than a simple command in a
// list or pipeline (see Effects.Compound), "" otherwise.
func compound(n syntax.Node) string {
	switch n := n.(type) {
	case *syntax.CmdSubst:
		return "a command substitution"
	case *syntax.ProcSubst:
		return "a process substitution"
	case *syntax.Subshell:
		return "a subshell"
	case *syntax.Block:
		return "a command group"
	case *syntax.ForClause, *syntax.WhileClause:
		return "a loop"
	case *syntax.IfClause:
		return "an if"
	case *syntax.CaseClause:
		return "a case"
	case *syntax.FuncDecl:
		return "a function"
	case *syntax.CoprocClause:
		return "a coprocess"
	case *syntax.Stmt:
		if n.Background || n.Coprocess {
			return "a background job"
		}
	}
	return ""
}

// plainCall reports whether the simple command c of the source src is
// written as its words, each an unquoted literal without escapes,
// separated by single spaces, with no assignment before it.
func plainCall(c *syntax.CallExpr, src string) bool {
	if len(c.Assigns) > 0 {
		return false
	}
	for i, w := range c.Args {
		if len(w.Parts) != 1 {
			return false
		}
		l, ok := w.Parts[0].(*syntax.Lit)
		if !ok || strings.IndexByte(l.Value, '\\') >= 0 {
			return false
		}
		if i > 0 {
			a, b := int(c.Args[i-1].End().Offset()), int(w.Pos().Offset())
			if a < 0 || b > len(src) || a > b || src[a:b] != " " {
				return false
			}
		}
	}
	return true
}

// maxVarValues bounds the literal values recorded for one variable.
const maxVarValues = 16

// assigned records a's value when it is a literal (x=rm), for a later
// command whose name is that variable ([Effects.vars]).
func (s *Effects) assigned(a *syntax.Assign) {
	if a.Name == nil || a.Value == nil || a.Array != nil || a.Index != nil || a.Append || a.Naked {
		return
	}
	v := wordOf(a.Value)
	if isDynamic(v) || v == "" {
		return
	}
	if s.vars == nil {
		s.vars = map[string][]string{}
	}
	if vs := s.vars[a.Name.Value]; len(vs) < maxVarValues && !slices.Contains(vs, v) {
		s.vars[a.Name.Value] = append(vs, v)
	}
}

// paramName returns the variable w expands when w is only that ($x,
// ${x}, "$x").
func paramName(w *syntax.Word) (string, bool) {
	if len(w.Parts) != 1 {
		return "", false
	}
	part := w.Parts[0]
	if dq, ok := part.(*syntax.DblQuoted); ok {
		if len(dq.Parts) != 1 {
			return "", false
		}
		part = dq.Parts[0]
	}
	pe, ok := part.(*syntax.ParamExp)
	if !ok || pe.Param == nil || pe.Excl || pe.Length || pe.Width || pe.Index != nil || pe.Slice != nil ||
		pe.Repl != nil || pe.Exp != nil || pe.Names != 0 {
		return "", false
	}
	return pe.Param.Value, true
}
