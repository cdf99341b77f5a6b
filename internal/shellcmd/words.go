package shellcmd

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"

	"github.com/norma-run/norma/internal/command"
)

// Computed words (package command's): each contains a NUL byte, so no
// rule word can ever be equal to one, and a real argv string never is one.
const (
	// dynamicWord stands for exactly one word whose value is only known
	// when the shell runs it ("$VAR", "$(…)", ~).
	dynamicWord = command.Computed
	// dynamicWords stands for any number of words, none included: an
	// unquoted expansion (split on IFS), a glob, a brace expansion, "$@".
	dynamicWords = command.ComputedWords
)

// isDynamic reports whether w is a computed word, or holds one (an
// assignment text such as "X=" + dynamicWord).
func isDynamic(w string) bool { return command.IsComputed(w) }

// wordOf returns the value of w when it is known before the shell runs,
// else dynamicWord (one word), dynamicWords (any number of words) or,
// for a pathname pattern, [command.Glob] of its text (any number of
// words too: [command.IsWords]).
func wordOf(w *syntax.Word) string {
	if w == nil {
		return dynamicWords
	}
	if len(w.Parts) == 1 {
		// The common word: one literal with nothing to expand or unescape.
		if l, ok := w.Parts[0].(*syntax.Lit); ok {
			v := l.Value
			if !strings.ContainsAny(v, "\\~*?[{") {
				return v
			}
		}
	}
	var b, bare strings.Builder // bare: the unquoted text, quoted parts as 'q'
	dyn, many := false, false
	for i, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			v := p.Value
			if i == 0 && strings.HasPrefix(v, "~") {
				dyn = true
			}
			if isGlob(v) {
				many = true
			}
			bare.WriteString(v)
			b.WriteString(unescape(v, false))
		case *syntax.SglQuoted:
			if p.Dollar && strings.Contains(p.Value, `\`) {
				dyn = true
			}
			bare.WriteByte('q')
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			bare.WriteByte('q')
			if p.Dollar {
				dyn = true
			}
			for _, q := range p.Parts {
				switch q := q.(type) {
				case *syntax.Lit:
					b.WriteString(unescape(q.Value, true))
				case *syntax.ParamExp:
					dyn = true
					many = many || expandsToWords(q)
				default:
					dyn = true
				}
			}
		default: // unquoted $x, $(…), $((…)), <(…), extended globs
			dyn, many = true, true
			bare.WriteByte('$')
		}
	}
	switch {
	case many && !dyn && !braceExpands(bare.String()) && !assignTilde(bare.String()):
		// A pathname pattern and nothing else: any number of words,
		// its text kept for a rule that names it (rm *.log).
		return command.Glob(b.String())
	case many || braceExpands(bare.String()):
		return dynamicWords
	case dyn || assignTilde(bare.String()):
		return dynamicWord
	}
	return b.String()
}

// wordValue returns the value of w and whether it is known.
func wordValue(w *syntax.Word) (string, bool) {
	v := wordOf(w)
	return v, !isDynamic(v)
}

// expandsToWords reports whether a quoted parameter expansion can make
// several words: "$@", "${a[@]}", "${!prefix@}".
func expandsToWords(p *syntax.ParamExp) bool {
	if p.Param != nil && p.Param.Value == "@" || p.Names == syntax.NamesPrefixWords {
		return true
	}
	if w, ok := p.Index.(*syntax.Word); ok {
		v, _ := wordValue(w)
		return v == "@"
	}
	return false
}

// braceExpands reports whether unquoted text holds a brace expansion: an
// unescaped { with a later unescaped } and a comma or .. between.
func braceExpands(v string) bool {
	open := -1
	for i := 0; i < len(v); i++ {
		switch v[i] {
		case '\\':
			i++
		case '{':
			if open < 0 {
				open = i
			}
		case '}':
			if open >= 0 {
				in := v[open+1 : i]
				if strings.Contains(in, ",") || strings.Contains(in, "..") {
					return true
				}
			}
		}
	}
	return false
}

// assignTilde reports whether bash expands a tilde inside a word that
// looks like an assignment (name=~/x or name=a:~/x), which it does even
// for a command's arguments.
func assignTilde(bare string) bool {
	i := strings.IndexByte(bare, '=')
	if i <= 0 || !validName(strings.TrimSuffix(bare[:i], "+")) {
		return false
	}
	rest := bare[i+1:]
	return strings.HasPrefix(rest, "~") || strings.Contains(rest, ":~")
}

// validName reports whether v is a shell variable name.
func validName(v string) bool {
	if v == "" {
		return false
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c != '_' && !(c >= 'a' && c <= 'z') && !(c >= 'A' && c <= 'Z') && !(i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// isGlob reports whether unquoted text is a pathname pattern: an
// unescaped * or ?, or a [ with a later ].
func isGlob(v string) bool {
	open := false
	for i := 0; i < len(v); i++ {
		switch v[i] {
		case '\\':
			i++
		case '*', '?':
			return true
		case '[':
			open = true
		case ']':
			if open {
				return true
			}
		}
	}
	return false
}

func hasUnescaped(v, chars string) bool {
	for i := 0; i < len(v); i++ {
		if v[i] == '\\' {
			i++
			continue
		}
		if strings.IndexByte(chars, v[i]) >= 0 {
			return true
		}
	}
	return false
}

// unescape removes shell backslash quoting: every backslash outside
// quotes, and inside double quotes only before $ ` " \ and newline.
func unescape(v string, dquoted bool) string {
	if !strings.Contains(v, `\`) {
		return v
	}
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c != '\\' || i+1 >= len(v) {
			b.WriteByte(c)
			continue
		}
		n := v[i+1]
		switch {
		case n == '\n':
			i++
		case !dquoted || strings.IndexByte("$`\"\\", n) >= 0:
			b.WriteByte(n)
			i++
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

func isDigits(v string) bool {
	if v == "" {
		return false
	}
	for i := 0; i < len(v); i++ {
		if v[i] < '0' || v[i] > '9' {
			return false
		}
	}
	return true
}

// globWord returns w as a pattern of path.Match when it is a pathname
// pattern (an unquoted *, ? or [...]) and otherwise literal: no
// expansion, no brace, no tilde, no extended glob. Quoted pattern
// characters are escaped, and bash's [!...] is [^...].
func globWord(w *syntax.Word) (string, bool) {
	if w == nil || len(w.Parts) == 0 {
		return "", false
	}
	var b, bare strings.Builder
	glob := false
	for i, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			if i == 0 && strings.HasPrefix(p.Value, "~") {
				return "", false
			}
			bare.WriteString(p.Value)
			v := p.Value
			for j := 0; j < len(v); j++ {
				c := v[j]
				switch {
				case c == '\\' && j+1 < len(v):
					j++
					b.WriteString(matchEscape(v[j]))
				case c == '*' || c == '?':
					glob = true
					b.WriteByte(c)
				case c == '[':
					glob = true
					b.WriteByte(c)
					if j+1 < len(v) && v[j+1] == '!' {
						b.WriteByte('^')
						j++
					}
				default:
					b.WriteByte(c)
				}
			}
		case *syntax.SglQuoted:
			if p.Dollar {
				return "", false
			}
			bare.WriteByte('q')
			for j := 0; j < len(p.Value); j++ {
				b.WriteString(matchEscape(p.Value[j]))
			}
		case *syntax.DblQuoted:
			if p.Dollar {
				return "", false
			}
			bare.WriteByte('q')
			for _, q := range p.Parts {
				l, ok := q.(*syntax.Lit)
				if !ok {
					return "", false
				}
				v := unescape(l.Value, true)
				for j := 0; j < len(v); j++ {
					b.WriteString(matchEscape(v[j]))
				}
			}
		default:
			return "", false
		}
	}
	if !glob || braceExpands(bare.String()) || assignTilde(bare.String()) {
		return "", false
	}
	return b.String(), true
}

// matchEscape is the byte c as a literal in a path.Match pattern.
func matchEscape(c byte) string {
	switch c {
	case '*', '?', '[', ']', '\\':
		return "\\" + string(c)
	}
	return string(c)
}
