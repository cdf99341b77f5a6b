package policy

import (
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/norma-run/norma/internal/command"
)

// cmdKind is the form of a Bash rule, as Claude Code reads it.
type cmdKind uint8

const (
	cmdExact    cmdKind = iota // Bash(npm run lint): that command
	cmdPrefix                  // Bash(git push:*): those words, then anything
	cmdWildcard                // Bash(git * --force): * is any text
)

// cmdPattern is a compiled Bash rule.
type cmdPattern struct {
	kind cmdKind
	// words are the rule's words, quotes removed (exact, prefix).
	words []string
	// segs are the wildcard's literal texts around its stars: the rule
	// "git * --force" is {"git ", " --force"}. A star matches any text,
	// white space included.
	segs []string
	// optTail: the one star is last and follows a space ("git push *"),
	// which also matches the command without it ("git push").
	optTail bool
	// lits are the literal words the rule writes, for [command.Risky]: a
	// rule that names a risky flag covers it.
	lits []string
}

// parseCommand parses the argument of a Bash rule.
//
//	git push:*       the legacy prefix: the words, then any others
//	git push *       a wildcard: * is any text; a single trailing " *"
//	                 also matches nothing ("git push")
//	git * --force    any text between; \* is a literal star
//	npm run lint     exactly that command
//
// Words may be quoted ('a b', "a b") or escaped (a\ b) as in the shell;
// quotes are removed, so that a rule matches the words the command runs
// however they were quoted.
func parseCommand(arg string) (cmdPattern, error) {
	var p cmdPattern
	for _, c := range arg {
		if c == 0 || c != '\t' && unicode.IsControl(c) {
			return p, fmt.Errorf("a command rule holds a control character")
		}
	}
	body, prefix := strings.CutSuffix(arg, ":*")
	toks, err := ruleTokens(body, !prefix)
	if err != nil {
		return p, err
	}
	hasStar := slices.ContainsFunc(toks, func(t ruleTok) bool { return t.star })
	switch {
	case prefix:
		p.kind = cmdPrefix
	case hasStar:
		p.kind = cmdWildcard
	default:
		p.kind = cmdExact
	}
	if p.kind != cmdWildcard {
		// Words: a star read literally (the :* form reads * as itself,
		// as Claude Code does).
		var cur strings.Builder
		inWord := false
		for _, t := range toks {
			switch {
			case t.space:
				if inWord {
					p.words = append(p.words, cur.String())
					cur.Reset()
					inWord = false
				}
			default:
				cur.WriteString(t.text)
				inWord = true
			}
		}
		if inWord {
			p.words = append(p.words, cur.String())
		}
		if len(p.words) == 0 {
			return p, fmt.Errorf("empty command")
		}
		p.lits = p.words
		return p, nil
	}
	var cur strings.Builder
	var word strings.Builder
	stars := 0
	flush := func() {
		if word.Len() > 0 {
			p.lits = append(p.lits, word.String())
			word.Reset()
		}
	}
	for _, t := range toks {
		switch {
		case t.star:
			p.segs = append(p.segs, cur.String())
			cur.Reset()
			stars++
			flush()
		case t.space:
			cur.WriteByte(' ')
			flush()
		default:
			cur.WriteString(t.text)
			word.WriteString(t.text)
		}
	}
	flush()
	p.segs = append(p.segs, cur.String())
	if stars == 1 && p.segs[1] == "" && strings.HasSuffix(p.segs[0], " ") {
		p.optTail = true
	}
	return p, nil
}

// ruleTok is one token of a command rule: literal text, a word break or
// a star.
type ruleTok struct {
	text        string
	space, star bool
}

// ruleTokens splits a command rule as the shell splits words, with quotes
// and backslashes removed; stars (unless escaped, \*) are tokens of their
// own when stars is set. Runs of blanks are one break, and blanks at
// either end are dropped.
func ruleTokens(s string, stars bool) ([]ruleTok, error) {
	var toks []ruleTok
	s = strings.TrimSpace(s)
	var text strings.Builder // the literal token being read
	inText := false
	lit := func(t string) {
		text.WriteString(t)
		inText = true
	}
	end := func() {
		if inText {
			toks = append(toks, ruleTok{text: text.String()})
			text.Reset()
			inText = false
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == ' ' || c == '\t' || c == '*' && stars {
			end()
		}
		switch {
		case c == ' ' || c == '\t':
			if n := len(toks); n > 0 && !toks[n-1].space {
				toks = append(toks, ruleTok{space: true})
			}
		case c == '\\':
			if i+1 >= len(s) {
				return nil, fmt.Errorf("a command rule ends in a backslash")
			}
			i++
			lit(s[i : i+1])
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("a command rule has an unterminated quote")
			}
			lit(s[i+1 : i+1+j])
			i += j + 1
		case c == '"':
			var b strings.Builder
			j := i + 1
			for ; j < len(s) && s[j] != '"'; j++ {
				if s[j] == '\\' && j+1 < len(s) && strings.IndexByte("$`\"\\", s[j+1]) >= 0 {
					j++
				}
				b.WriteByte(s[j])
			}
			if j >= len(s) {
				return nil, fmt.Errorf("a command rule has an unterminated quote")
			}
			lit(b.String())
			i = j
		case c == '*' && stars:
			toks = append(toks, ruleTok{star: true})
		default:
			text.WriteByte(c)
			inText = true
		}
	}
	end()
	if n := len(toks); n > 0 && toks[n-1].space {
		toks = toks[:n-1]
	}
	if len(toks) == 0 {
		return nil, fmt.Errorf("empty command")
	}
	return toks, nil
}

// matchArgv reports whether the pattern matches argv. broad (deny and
// ask rules) matches when some value of argv's computed words would
// match, and the program's name in any case; otherwise (allow rules) a
// computed word matches only a wildcard's star, and a prefix or wildcard
// rule does not cover a command holding a risky flag it does not write
// itself ([command.Risky]).
func (p *cmdPattern) matchArgv(argv []string, broad bool) bool {
	if len(argv) == 0 {
		return false
	}
	switch p.kind {
	case cmdExact, cmdPrefix:
		if !broad {
			if len(argv) < len(p.words) || p.kind == cmdExact && len(argv) != len(p.words) {
				return false
			}
			for i, w := range p.words {
				if argv[i] != w {
					return false
				}
			}
			return p.kind == cmdExact || !p.risky(argv)
		}
		return wordsCouldMatch(p.words, argv, p.kind == cmdPrefix)
	}
	if !broad && p.risky(argv) {
		return false
	}
	text := joinArgv(argv, broad)
	if starMatch(p.segs, text, broad) {
		return true
	}
	if p.optTail && starMatch([]string{strings.TrimSuffix(p.segs[0], " ")}, text, broad) {
		return true
	}
	if broad && argv[0] != strings.ToLower(argv[0]) {
		low := append([]string{strings.ToLower(argv[0])}, argv[1:]...)
		return p.matchArgv(low, true)
	}
	return false
}

// risky reports whether argv holds a flag of [command.Risky] that the
// rule does not write.
func (p *cmdPattern) risky(argv []string) bool {
	w, ok := command.Risky(argv)
	if !ok {
		return false
	}
	name, _, _ := strings.Cut(w, "=")
	return !slices.Contains(p.lits, w) && !slices.Contains(p.lits, name)
}

// opaque stands for a word only a star matches (a rule refuses control
// characters, so no literal equals it).
const opaque = '\x01'

// joinArgv is the command line a wildcard rule is matched against: the
// words with one space between. For an allow rule (!broad) a computed
// word, or one holding white space (which the line cannot tell from a
// word break), is a NUL byte that only a star matches. For a deny or ask
// rule a word with white space is kept, a pathname pattern is its text
// (rm *.log under Bash(rm *.log), as Claude Code compares the text), an
// unquoted expansion ([command.ComputedWords]: any words) is a NUL byte
// that matches any text ([starMatch]), and a single computed word ("$X",
// ~) and a computed program name are [opaque].
func joinArgv(argv []string, broad bool) string {
	n := len(argv)
	for _, w := range argv {
		n += len(w)
	}
	var b strings.Builder
	b.Grow(n)
	for i, w := range argv {
		if i > 0 {
			b.WriteByte(' ')
		}
		switch {
		case i == 0 && command.IsComputed(w):
			// A computed program name is not any program a rule names:
			// only a star matches it (the command is unknown, and asks).
			b.WriteByte(opaque)
		case broad && command.IsWords(w):
			if text, ok := command.GlobText(w); ok && !strings.ContainsAny(text, "\x00\x01") {
				b.WriteString(text) // as Claude Code reads it: the pattern's text
			} else {
				b.WriteByte(0)
			}
		case broad && command.IsComputed(w):
			b.WriteByte(opaque)
		case command.IsComputed(w):
			b.WriteByte(0)
		case !broad && strings.ContainsAny(w, " \t\n\r\v\f"):
			b.WriteByte(0)
		default:
			b.WriteString(w)
		}
	}
	return b.String()
}

// starMatch reports whether text matches the star pattern whose literal
// parts are segs. With holes (broad), a NUL byte in text is a computed
// part that may be any text: then it reports whether some text matches
// both. Without, a NUL is a byte only a star matches.
func starMatch(segs []string, text string, holes bool) bool {
	if holes && strings.IndexByte(text, 0) >= 0 {
		return holeMatch(strings.Join(segs, "\x00"), text)
	}
	if len(segs) == 1 {
		return text == segs[0]
	}
	first, last := segs[0], segs[len(segs)-1]
	if len(text) < len(first)+len(last) || !strings.HasPrefix(text, first) || !strings.HasSuffix(text, last) {
		return false
	}
	rest := text[len(first) : len(text)-len(last)]
	for _, s := range segs[1 : len(segs)-1] {
		i := strings.Index(rest, s)
		if i < 0 {
			return false
		}
		rest = rest[i+len(s):]
	}
	return true
}

// maxHoleCells bounds holeMatch's table; a larger question is answered
// yes (a deny or ask rule that cannot tell matches).
const maxHoleCells = 1 << 20

// holeMatch reports whether two star patterns, NUL being the star in
// both, have a string in common.
func holeMatch(p, t string) bool {
	lp, lt := len(p), len(t)
	if (lp+1)*(lt+1) > maxHoleCells {
		return true
	}
	// f[j] is row i of the table: f(i, j) = p[i:] and t[j:] share a
	// string. Rows are filled from the end.
	next := make([]bool, lt+1)
	cur := make([]bool, lt+1)
	next[lt] = true
	for j := lt - 1; j >= 0; j-- {
		next[j] = t[j] == 0 && next[j+1]
	}
	for i := lp - 1; i >= 0; i-- {
		for j := lt; j >= 0; j-- {
			switch {
			case p[i] == 0:
				cur[j] = next[j] || j < lt && cur[j+1]
			case j < lt && t[j] == 0:
				cur[j] = cur[j+1] || next[j]
			default:
				cur[j] = j < lt && p[i] == t[j] && next[j+1]
			}
		}
		next, cur = cur, next
	}
	return next[0]
}

// wordsCouldMatch reports whether some value of argv's computed words
// makes argv start with (prefix) or equal words. ComputedWords (an
// unquoted expansion) is any number of words of any value; a pathname
// pattern is its text, and a single computed word ("$X", ~) stands for
// a rule word written with an expansion or a pattern character ($HOME,
// ~/x), as Claude Code compares the text. The program's name matches in
// any case.
func wordsCouldMatch(words, argv []string, prefix bool) bool {
	eq := func(i, j int) bool {
		if i == 0 && j == 0 {
			return words[0] == argv[0] || strings.EqualFold(words[0], argv[0])
		}
		return words[i] == argv[j]
	}
	if !eq(0, 0) {
		// Also a computed program name: no program a rule names.
		return false
	}
	if !slices.ContainsFunc(argv, command.IsComputed) {
		if len(argv) < len(words) || !prefix && len(argv) != len(words) {
			return false
		}
		for i := range words {
			if !eq(i, i) {
				return false
			}
		}
		return true
	}
	lw, la := len(words), len(argv)
	// f[i][j]: words[i:] against argv[j:], as one flat table.
	f := make([]bool, (lw+1)*(la+1))
	at := func(i, j int) *bool { return &f[i*(la+1)+j] }
	for i := lw; i >= 0; i-- {
		for j := la; j >= 0; j-- {
			var v bool
			switch {
			case i == lw && (prefix || j == la):
				v = true
			case j == la:
				v = false
			case argv[j] == command.ComputedWords:
				v = *at(i, j+1) || i < lw && *at(i+1, j)
			case command.IsWords(argv[j]):
				// A pathname pattern: its text, as Claude Code compares it.
				text, _ := command.GlobText(argv[j])
				v = i < lw && words[i] == text && *at(i+1, j+1)
			case i == lw:
				v = false
			case command.IsComputed(argv[j]):
				// One computed word ("$X", ~): a rule word written with
				// an expansion may be it.
				v = strings.ContainsAny(words[i], "$`~*?[{") && *at(i+1, j+1)
			default:
				v = eq(i, j) && *at(i+1, j+1)
			}
			*at(i, j) = v
		}
	}
	return f[0]
}
