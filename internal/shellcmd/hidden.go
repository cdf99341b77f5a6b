package shellcmd

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"

	"github.com/norma-run/norma/internal/command"
)

// This file finds the places where bash runs code the parse tree does not
// show as a command: arithmetic (whose variables' values are evaluated as
// arithmetic again, so a value such as a[$(cmd)] runs cmd), array
// subscripts, indirect and prompt expansions, variable names taken from
// data by builtins, and assignments to variables that change what later
// commands do.

// Reasons for Effects.Unknown, one per construct class.
const (
	whyArith      = "arithmetic evaluates the value of a variable or of an expansion (it can run commands)"
	whySubscript  = "an array subscript is evaluated (it can run commands)"
	whyIndirect   = "an indirect expansion ${!name} evaluates a variable named by a value"
	whyTransform  = "a ${name@op} transformation that can run commands"
	whyVarName    = "a builtin takes a variable name that is computed or subscripted (it can run commands)"
	whyDangerVar  = "an assignment to a variable that changes what later commands run"
	whyDeclFlag   = "a declaration with -n (nameref) or -i (integer: values are evaluated as arithmetic)"
	whyDeclWord   = "a declaration with a computed argument"
	whyTrap       = "trap with a computed action"
	whySource     = "source runs the commands of a file, which the command does not show"
	whyBuiltinArg = "a builtin whose computed argument can run commands or change how later commands are found"
	whyLet        = "let evaluates arithmetic"
	whyRunsCode   = "a builtin that runs or loads code the command does not show"
	whyExtGlob    = "an extended glob pattern holds an expansion (bash runs it; the parser keeps the pattern as text)"
)

// dangerous reports whether assigning name can change what later
// commands do beyond their arguments ([command.DangerousVar]).
func dangerous(name string) bool { return command.DangerousVar(name) }

// envStyle reports whether a name is written like an environment
// variable (it has an upper-case letter). Assigning one may change the
// environment of later commands (it may be exported already), so a
// standalone assignment to it is a request of its own.
func envStyle(name string) bool {
	return strings.ContainsFunc(name, func(r rune) bool { return r >= 'A' && r <= 'Z' })
}

// arithLiteral reports whether an arithmetic expression holds only
// numbers, operators and numeric special parameters ($#, $?, $$, $!,
// ${#x}): nothing whose value bash would evaluate again.
func arithLiteral(e syntax.ArithmExpr) bool {
	switch e := e.(type) {
	case nil:
		return true
	case *syntax.BinaryArithm:
		return arithLiteral(e.X) && arithLiteral(e.Y)
	case *syntax.UnaryArithm:
		return arithLiteral(e.X)
	case *syntax.ParenArithm:
		return arithLiteral(e.X)
	case *syntax.Word:
		return numericWord(e)
	}
	return false
}

// numericWord reports whether w is a number, or an expansion that is
// always a decimal number.
func numericWord(w *syntax.Word) bool {
	if w == nil || len(w.Parts) != 1 {
		return false
	}
	p := w.Parts[0]
	if d, ok := p.(*syntax.DblQuoted); ok && len(d.Parts) == 1 && !d.Dollar {
		p = d.Parts[0]
	}
	switch p := p.(type) {
	case *syntax.Lit:
		return numberLit(p.Value)
	case *syntax.ParamExp:
		return numericParam(p)
	}
	return false
}

// numberValue reports whether an assigned value is a decimal number
// written literally.
func numberValue(w *syntax.Word) bool {
	v, ok := wordValue(w)
	return ok && isDigits(v)
}

// numberLit reports whether v is an integer constant (10, 0x1f, 2#101).
func numberLit(v string) bool {
	if v == "" || v[0] < '0' || v[0] > '9' {
		return false
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '#' || c == '@' || c == '_') {
			return false
		}
	}
	return true
}

func numericParam(p *syntax.ParamExp) bool {
	if p.Param == nil || p.Excl || p.Index != nil || p.Slice != nil || p.Repl != nil || p.Exp != nil || p.Names != 0 {
		return false
	}
	if p.Length {
		return true
	}
	switch p.Param.Value {
	case "#", "?", "$", "!":
		return true
	}
	return false
}

// subscriptLiteral reports whether an array subscript is evaluated to
// nothing but a constant: @, *, or a literal arithmetic expression. Any
// other subscript is arithmetic of a variable (indexed arrays) or an
// expansion (associative arrays, expanded again by some builtins).
func subscriptLiteral(e syntax.ArithmExpr) bool {
	if w, ok := e.(*syntax.Word); ok && len(w.Parts) == 1 {
		if l, ok := w.Parts[0].(*syntax.Lit); ok && (l.Value == "@" || l.Value == "*") {
			return true
		}
	}
	return arithLiteral(e)
}

// plainVarName reports whether a variable name a builtin is given is
// harmless: a name, or a name with a constant subscript.
func plainVarName(v string) bool {
	name, sub, ok := strings.Cut(v, "[")
	if !ok {
		return validName(v)
	}
	sub, ok = strings.CutSuffix(sub, "]")
	return ok && validName(name) && (isDigits(sub) || sub == "@" || sub == "*")
}

// node checks one node of the parse tree for hidden code.
func (s *Effects) node(n syntax.Node, exempt map[*syntax.Assign]bool) {
	switch n := n.(type) {
	case *syntax.ArithmCmd:
		s.arith(n.X)
	case *syntax.ArithmExp:
		s.arith(n.X)
	case *syntax.LetClause:
		for _, e := range n.Exprs {
			s.arith(e)
		}
	case *syntax.CStyleLoop:
		s.arith(n.Init)
		s.arith(n.Cond)
		s.arith(n.Post)
	case *syntax.BinaryTest:
		switch n.Op {
		case syntax.TsEql, syntax.TsNeq, syntax.TsLeq, syntax.TsGeq, syntax.TsLss, syntax.TsGtr:
			x, _ := n.X.(*syntax.Word)
			y, _ := n.Y.(*syntax.Word)
			if !numericWord(x) || !numericWord(y) {
				s.setUnknown(whyArith)
			}
		}
	case *syntax.UnaryTest:
		if n.Op == syntax.TsVarSet || n.Op == syntax.TsRefVar {
			// [[ ]] does not glob: a[0] is a literal word there.
			w, _ := n.X.(*syntax.Word)
			if v, ok := testWord(w); !ok || !plainVarName(v) {
				s.setUnknown(whyVarName)
			}
		}
	case *syntax.ParamExp:
		s.param(n)
	case *syntax.Assign:
		if !exempt[n] {
			s.assign(n)
		}
	case *syntax.DeclClause:
		s.decl(n, exempt)
	case *syntax.WordIter:
		if n.Name != nil && dangerous(n.Name.Value) {
			s.setUnknown(whyDangerVar)
		}
	case *syntax.CoprocClause:
		// coproc NAME sets the array NAME to its descriptors.
		if n.Name != nil {
			if v, ok := wordValue(n.Name); !ok || dangerous(v) {
				s.setUnknown(whyDangerVar)
			}
		}
	case *syntax.ExtGlob:
		// The parser keeps @(…), !(…), +(…), *(…) and ?(…) as literal
		// text, but bash expands what is inside: [[ x == @($(cmd)) ]]
		// (where [[ ]] always reads extended globs) runs cmd.
		if n.Pattern != nil && strings.ContainsAny(n.Pattern.Value, "$`") {
			s.setUnknown(whyExtGlob)
		}
	case *syntax.Redirect:
		if n.N != nil && !isDigits(n.N.Value) {
			// {var}>file assigns the descriptor to var.
			if !plainVarName(n.N.Value) || dangerous(n.N.Value) {
				s.setUnknown(whyVarName)
			}
		}
	}
}

func (s *Effects) arith(e syntax.ArithmExpr) {
	if !arithLiteral(e) {
		s.setUnknown(whyArith)
	}
}

func (s *Effects) param(p *syntax.ParamExp) {
	if p.Excl && p.Names == 0 && (p.Index == nil || !subscriptLiteral(p.Index)) {
		s.setUnknown(whyIndirect)
	}
	if p.Index != nil && !subscriptLiteral(p.Index) {
		s.setUnknown(whySubscript)
	}
	if p.Slice != nil && (!arithLiteral(p.Slice.Offset) || !arithLiteral(p.Slice.Length)) {
		s.setUnknown(whyArith)
	}
	if p.Exp != nil && (p.Exp.Op == syntax.AssignUnset || p.Exp.Op == syntax.AssignUnsetOrNull) && p.Param != nil && dangerous(p.Param.Value) {
		s.setUnknown(whyDangerVar) // ${PATH:=/tmp/x}
	}
	if p.Exp != nil && p.Exp.Op == syntax.OtherParamOps {
		switch v, _ := wordValue(p.Exp.Word); v {
		case "Q", "E", "A", "a", "U", "u", "L", "K", "k":
		default:
			s.setUnknown(whyTransform)
		}
	}
}

func (s *Effects) assign(a *syntax.Assign) {
	if a.Name == nil {
		return // a declaration's option or computed word: see decl
	}
	if dangerous(a.Name.Value) && !(command.IntVar(a.Name.Value) && a.Index == nil && a.Array == nil && !a.Append && (a.Value == nil || numberValue(a.Value))) {
		s.setUnknown(whyDangerVar)
	}
	if a.Index != nil && !subscriptLiteral(a.Index) {
		s.setUnknown(whySubscript)
	}
	if a.Array != nil {
		for _, e := range a.Array.Elems {
			if e.Index != nil && !subscriptLiteral(e.Index) {
				s.setUnknown(whySubscript)
			}
		}
	}
}

// decl checks a declaration (declare, local, export, readonly, typeset)
// and records it as a request when it changes the environment of later
// commands: export, -x, or an environment-style name.
func (s *Effects) decl(d *syntax.DeclClause, exempt map[*syntax.Assign]bool) {
	argv := []string{d.Variant.Value}
	exported := d.Variant.Value == "export"
	assoc := false // declare -A m=([key]=v): the keys are strings
	for _, a := range d.Args {
		if a.Name == nil {
			v := wordOf(a.Value)
			argv = append(argv, v)
			exported = s.declWord(v) || exported
			assoc = assoc || len(v) > 1 && v[0] == '-' && strings.Contains(v, "A")
			continue
		}
		argv = append(argv, assignText(a))
		exported = exported || envStyle(a.Name.Value)
		if assoc && a.Index == nil && a.Array != nil && literalKeys(a.Array) {
			if dangerous(a.Name.Value) {
				s.setUnknown(whyDangerVar)
			}
			exempt[a] = true
		}
	}
	if exported {
		s.Spawns = append(s.Spawns, argv)
	}
}

// declArgs checks the words of a declaration builtin reached as a plain
// command (command declare, builtin export); the command is a request
// already.
func (s *Effects) declArgs(args []string) {
	for _, v := range args {
		s.declWord(v)
	}
}

// declWord checks one word of a declaration given as a word, not as an
// assignment the parser saw: an option, or a quoted name[=value]. It
// reports whether the word exports.
func (s *Effects) declWord(v string) (exports bool) {
	if isDynamic(v) {
		s.setUnknown(whyDeclWord)
		return false
	}
	if len(v) > 1 && (v[0] == '-' || v[0] == '+') && v != "--" {
		if strings.ContainsAny(v[1:], "ni") {
			s.setUnknown(whyDeclFlag)
		}
		return v[0] == '-' && strings.Contains(v, "x")
	}
	name, _, _ := strings.Cut(v, "=")
	name = strings.TrimSuffix(name, "+")
	if !plainVarName(name) {
		s.setUnknown(whyVarName)
	}
	if dangerous(name) {
		s.setUnknown(whyDangerVar)
	}
	return envStyle(name)
}

// builtin checks a builtin command's words for code it runs or variable
// names it evaluates. argv[0] is the builtin's name.
func (s *Effects) builtin(argv []string, depth int) {
	args := argv[1:]
	switch argv[0] {
	case "declare", "typeset", "local", "export", "readonly":
		s.declArgs(args)
	case "let":
		s.setUnknown(whyLet)
	case "test", "[":
		if argv[0] == "[" && len(args) > 0 && args[len(args)-1] == "]" {
			args = args[:len(args)-1]
		}
		s.testArgs(args)
	case "read":
		s.optNames(args, "adinNptu", "a", true)
	case "mapfile", "readarray":
		if hasOpt(args, "dnOsucC", 'C') {
			s.setUnknown(whyRunsCode) // -C runs a callback
		}
		s.optNames(args, "dnOsucC", "", true)
	case "printf":
		if len(args) > 0 && isDynamic(args[0]) && len(args) > 1 {
			s.setUnknown(whyVarName) // the format could be -v
		}
		if len(args) > 1 && strings.HasPrefix(args[0], "-v") {
			name := strings.TrimPrefix(args[0], "-v")
			if name == "" {
				name = args[1]
			}
			s.varName(name)
		}
	case "getopts":
		if len(args) > 1 {
			s.varName(args[1])
		}
	case "wait":
		for i, a := range args {
			if a == "-p" && i+1 < len(args) {
				s.varName(args[i+1])
			}
		}
	case "unset":
		for _, a := range args {
			if !strings.HasPrefix(a, "-") || isDynamic(a) {
				s.varName(a)
			}
		}
	case "trap":
		s.trap(args, depth)
	case "source", ".":
		// The file's commands run in this shell; the command line does
		// not show them (a name without a slash is even looked up on
		// PATH).
		if len(args) > 0 {
			s.setUnknown(whySource)
		}
	case "enable", "hash", "bind", "compgen", "complete", "alias", "set", "shopt", "fc":
		s.risky(argv[0], args)
	}
}

// risky refuses the options of builtins that load or run code, or change
// how later words become commands: enable -f (loads a shared object),
// hash -p (binds a name to any file), bind -x, compgen/complete -C -F -W
// (run commands, functions, expansions), alias definitions, set -k (any
// NAME=value argument enters the environment), set -H and history
// expansion, set -a (every later assignment enters the environment),
// line editing (completion rewrites the line), fc (re-runs history),
// interactive comments (off, a PTY shell runs what follows # on a line
// the parser read as a comment). A computed argument to any of them is refused.
func (s *Effects) risky(name string, args []string) {
	for i, a := range args {
		if isDynamic(a) {
			if name == "set" && slicesIndex(args, "--") >= 0 && slicesIndex(args, "--") < i {
				continue // positional parameters
			}
			s.setUnknown(whyBuiltinArg)
			return
		}
		opt := strings.HasPrefix(a, "-") || strings.HasPrefix(a, "+")
		switch name {
		case "enable":
			bad := opt && strings.ContainsAny(a, "fd")
			if bad {
				s.setUnknown(whyRunsCode)
			}
		case "hash":
			if opt && strings.Contains(a, "p") {
				s.setUnknown(whyRunsCode)
			}
		case "bind":
			if opt && strings.ContainsAny(a, "xf") {
				s.setUnknown(whyRunsCode)
			}
		case "compgen", "complete":
			if opt && strings.ContainsAny(a, "CFW") {
				s.setUnknown(whyRunsCode)
			}
		case "alias":
			if strings.Contains(a, "=") {
				s.setUnknown(whyRunsCode)
			}
		case "set":
			if a == "--" || a == "-" {
				return
			}
			if opt && a != "-o" && a != "+o" && strings.ContainsAny(a[1:], "kHa") {
				s.setUnknown(whyRunsCode)
			}
			if (a == "-o" || a == "+o") && i+1 < len(args) {
				switch args[i+1] {
				case "keyword", "histexpand", "emacs", "vi", "allexport", "interactive-comments":
					s.setUnknown(whyRunsCode)
				}
			}
			if !opt && i > 0 && args[i-1] != "-o" && args[i-1] != "+o" {
				return // positional parameters
			}
		case "shopt":
			if a == "expand_aliases" || a == "interactive_comments" {
				s.setUnknown(whyRunsCode)
			}
		case "fc":
			if a != "-l" && i == 0 {
				s.setUnknown(whyRunsCode)
			}
		}
	}
	if name == "fc" && len(args) == 0 {
		s.setUnknown(whyRunsCode)
	}
}

func slicesIndex(a []string, v string) int {
	for i := range a {
		if a[i] == v {
			return i
		}
	}
	return -1
}

// varName checks a variable name a builtin assigns or tests.
func (s *Effects) varName(v string) {
	if isDynamic(v) || !plainVarName(v) {
		s.setUnknown(whyVarName)
		return
	}
	if dangerous(v) {
		s.setUnknown(whyDangerVar)
	}
}

// hasOpt reports whether option c appears among the leading options.
func hasOpt(args []string, takes string, c byte) bool {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" || !strings.HasPrefix(a, "-") || isDynamic(a) {
			return false
		}
		for j := 1; j < len(a); j++ {
			if a[j] == c {
				return true
			}
			if strings.IndexByte(takes, a[j]) >= 0 {
				if j == len(a)-1 {
					i++
				}
				break
			}
		}
	}
	return false
}

// optNames checks the variable names of read or mapfile: every word
// after the options, and the argument of the options in nameOpts. A
// computed word where an option could be counts as a name.
func (s *Effects) optNames(args []string, takes, nameOpts string, names bool) {
	i := 0
	for ; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			i++
			break
		}
		if isDynamic(a) || !strings.HasPrefix(a, "-") || a == "-" {
			break
		}
		for j := 1; j < len(a); j++ {
			if strings.IndexByte(takes, a[j]) < 0 {
				continue
			}
			arg := a[j+1:]
			if arg == "" {
				i++
				if i < len(args) {
					arg = args[i]
				}
			}
			if strings.IndexByte(nameOpts, a[j]) >= 0 {
				s.varName(arg)
			}
			break
		}
	}
	if names {
		for _, a := range args[min(i, len(args)):] {
			s.varName(a)
		}
	}
}

// testArgs checks test and [: -v and -R take a variable name (evaluated,
// subscript included). A computed word is safe only where it cannot be
// one of those operators: next to a binary operator, after a unary
// operator, or as the last word.
func (s *Effects) testArgs(args []string) {
	for i, a := range args {
		if a == "-v" || a == "-R" {
			if i+1 < len(args) && !isTestBinary(args[i+1]) && (isDynamic(args[i+1]) || !plainVarName(args[i+1])) {
				s.setUnknown(whyVarName)
			}
			continue
		}
		if !isDynamic(a) {
			continue
		}
		if command.IsWords(a) {
			s.setUnknown(whyVarName) // may split into -v and a name
			return
		}
		last := i == len(args)-1
		nextBin := i+1 < len(args) && isTestBinary(args[i+1])
		prevOp := i > 0 && (isTestBinary(args[i-1]) || isTestUnary(args[i-1]))
		if !last && !nextBin && !prevOp {
			s.setUnknown(whyVarName)
			return
		}
	}
}

func isTestBinary(a string) bool {
	switch a {
	case "=", "==", "!=", "<", ">", "-eq", "-ne", "-lt", "-le", "-gt", "-ge", "-nt", "-ot", "-ef", "-a", "-o":
		return true
	}
	return false
}

func isTestUnary(a string) bool {
	if len(a) != 2 || a[0] != '-' || a == "-v" || a == "-R" {
		return false
	}
	return strings.IndexByte("abcdefghkprstuwxGLNOSnzo", a[1]) >= 0
}

// trap records the commands of a trap action: it runs later, on a signal
// or at exit, as if it were part of the command line.
func (s *Effects) trap(args []string, depth int) {
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) < 2 {
		return // trap, trap -l, trap -p, or trap SIG (a reset)
	}
	a := args[0]
	if isDynamic(a) {
		s.setUnknown(whyTrap)
		return
	}
	if a == "-" || a == "-p" || a == "-l" || a == "-P" {
		return
	}
	s.sameShell(a, depth+1)
}

// testWord is the value of an operand of [[ ]], where words are neither
// split nor globbed.
func testWord(w *syntax.Word) (string, bool) {
	if w == nil {
		return "", false
	}
	var b strings.Builder
	for _, p := range w.Parts {
		l, ok := p.(*syntax.Lit)
		if !ok || strings.HasPrefix(l.Value, "~") {
			return wordValue(w)
		}
		b.WriteString(unescape(l.Value, false))
	}
	return b.String(), true
}

// literalKeys reports whether every key of an associative array literal is
// a literal word.
func literalKeys(arr *syntax.ArrayExpr) bool {
	for _, e := range arr.Elems {
		if e.Index == nil {
			continue
		}
		w, ok := e.Index.(*syntax.Word)
		if !ok {
			return false
		}
		if _, ok := wordValue(w); !ok {
			return false
		}
	}
	return true
}
