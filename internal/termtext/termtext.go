// Package termtext makes text that a model, a tool or a plugin controls
// safe to print on a terminal: control characters, escape sequences,
// bidirectional overrides and invalid UTF-8 are rendered as visible Go-style
// escapes (`\x1b`, `\u202e`, `\xff`), so they can neither move the cursor,
// retitle the window, rewrite what was printed before nor hide text.
//
// This package should be considered internal; its API is not stable.
package termtext

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Escape returns s as one line safe for a terminal: every control
// character (newline and tab included), DEL, C1 control, bidirectional
// control and line or paragraph separator is written as an escape, and so
// is every byte of invalid UTF-8, and every rune that draws nothing but
// could carry hidden text (format characters such as the zero-width space
// and the tag characters, Hangul fillers, variation selectors but a single
// presentation selector). Printable text, spaces included, is kept.
func Escape(s string) string { return escape(s, false) }

// EscapeText is [Escape] for multi-line text that is printed as it comes
// (assistant text): newlines and tabs are kept, everything else that
// Escape escapes is escaped. It is safe on a fragment of a stream: an
// escape sequence split across fragments is escaped in each part.
func EscapeText(s string) string { return escape(s, true) }

func escape(s string, keepLines bool) string {
	if clean(s, keepLines) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	prev := rune(-1)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case hiddenRune(r, prev) && r > 0xffff:
			fmt.Fprintf(&b, `\U%08x`, r)
		case hiddenRune(r, prev):
			fmt.Fprintf(&b, `\u%04x`, r)
		case r == utf8.RuneError && n <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case keepLines && (r == '\n' || r == '\t'):
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case unsafeRune(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		prev = r
		i += n
	}
	return b.String()
}

// clean reports whether s needs no escaping (the common case, no
// allocation).
func clean(s string, keepLines bool) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 0x80:
			return cleanSlow(s[i:], keepLines)
		case c == '\n' || c == '\t':
			if !keepLines {
				return false
			}
		case c < 0x20 || c == 0x7f:
			return false
		}
	}
	return true
}

func cleanSlow(s string, keepLines bool) bool {
	prev := rune(-1)
	for _, r := range s {
		if hiddenRune(r, prev) {
			return false
		}
		prev = r
		switch {
		case r == utf8.RuneError:
			return false // may be a real U+FFFD; escape decides byte by byte
		case r == '\n' || r == '\t':
			if !keepLines {
				return false
			}
		case r < 0x20 || r == 0x7f || unsafeRune(r):
			return false
		}
	}
	return true
}

// unsafeRune reports the non-ASCII runes a terminal acts on or that
// reorder or hide text: C1 controls (U+0080–U+009F; U+009B is a CSI on
// some terminals), bidirectional marks, embeddings, overrides and
// isolates, and the line and paragraph separators.
func unsafeRune(r rune) bool {
	switch {
	case r >= 0x80 && r <= 0x9f:
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f:
		return true
	case r >= 0x202a && r <= 0x202e:
		return true
	case r >= 0x2066 && r <= 0x2069:
		return true
	case r == 0x2028, r == 0x2029:
		return true
	}
	return false
}

// Head returns the first lines of s, at most maxLines, each with its tabs
// expanded (stops every 4 columns), escaped and cut to at most width runes
// (a cut line ends in "…"), and the number of non-empty lines left out.
// Trailing empty lines are dropped.
func Head(s string, maxLines, width int) (lines []string, more int) {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return nil, 0
	}
	all := strings.Split(s, "\n")
	for i, l := range all {
		if len(lines) == maxLines {
			for _, rest := range all[i:] {
				if strings.TrimSpace(rest) != "" {
					more++
				}
			}
			break
		}
		lines = append(lines, Escape(Cut(expandTabs(strings.TrimSuffix(l, "\r")), width)))
	}
	return lines, more
}

// Lines returns every line of s (a multi-line preview: a command, a
// diff), each with its tabs expanded and escaped as [Escape] does, so each
// line is safe and the line structure is kept. A carriage return before a
// newline is escaped too: it is text of the line. One trailing newline
// ends the last line rather than starting an empty one.
func Lines(s string) []string {
	if s == "" {
		return nil
	}
	all := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	for i, l := range all {
		all[i] = Escape(expandTabs(l))
	}
	return all
}

// expandTabs replaces each tab with the spaces up to the next multiple of
// four columns (a rune counts as one column).
func expandTabs(s string) string {
	if !strings.Contains(s, "\t") {
		return s
	}
	var b strings.Builder
	col := 0
	for _, r := range s {
		if r == '\t' {
			n := 4 - col%4
			b.WriteString("    "[:n])
			col += n
			continue
		}
		b.WriteRune(r)
		col++
	}
	return b.String()
}

// Cut returns s cut to at most width runes, ending in "…" when it was cut.
// It never splits a UTF-8 sequence.
func Cut(s string, width int) string {
	if width <= 0 || utf8.RuneCountInString(s) <= width {
		return s
	}
	n := 0
	for i := range s {
		if n == width-1 {
			return s[:i] + "…"
		}
		n++
	}
	return s
}

// CutBytes returns s cut to at most max bytes on a UTF-8 boundary (an
// invalid byte counts as one), with "…" appended when it was cut (so the
// result may be up to max+3 bytes).
func CutBytes(s string, max int) string {
	if len(s) <= max {
		return s
	}
	i := max
	for i > 0 && i < len(s) && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}

// hiddenRune reports the runes that draw nothing, after prev (-1 at the
// start), so that text can hide in them where a person reads it (a
// terminal, the inbox's page): every format character (zero-width space
// and joiners, the word joiner, the soft hyphen, the byte order mark, the
// tag characters U+E0000–U+E007F that spell invisible ASCII), the Hangul
// fillers (letters that render blank, so an identifier made of them is an
// invisible variable in code), and the variation selectors, which can
// carry any bytes after one visible character. Only a single emoji or
// text presentation selector (U+FE0F, U+FE0E) right after a rune that is
// not itself a selector is kept: it carries one choice, not a message.
func hiddenRune(r, prev rune) bool {
	switch {
	case r < 0xad:
		return false
	case r == 0xfe0e || r == 0xfe0f:
		return prev < 0 || isSelector(prev) || unicode.Is(unicode.Cf, prev)
	case isSelector(r):
		return true
	case r == 0x115f, r == 0x1160, r == 0x3164, r == 0xffa0:
		return true
	}
	return unicode.Is(unicode.Cf, r)
}

// isSelector reports a variation selector (VS1–VS256).
func isSelector(r rune) bool {
	return (r >= 0xfe00 && r <= 0xfe0f) || (r >= 0xe0100 && r <= 0xe01ef) || (r >= 0x180b && r <= 0x180d) || r == 0x180f
}
