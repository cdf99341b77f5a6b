package termtext

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestEscape(t *testing.T) {
	tests := []struct{ in, want, wantText string }{
		{"plain text", "plain text", "plain text"},
		{"", "", ""},
		// A clear-screen and a colour: the terminal must see no ESC.
		{"\x1b[2J\x1b[31mred", `\x1b[2J\x1b[31mred`, `\x1b[2J\x1b[31mred`},
		// An OSC window title ended by BEL.
		{"\x1b]0;pwned\x07", `\x1b]0;pwned\x07`, `\x1b]0;pwned\x07`},
		// Carriage return would overwrite what was printed on the line.
		{"ok\rFAKE", `ok\rFAKE`, `ok\rFAKE`},
		{"a\nb\tc", `a\nb\tc`, "a\nb\tc"},
		{"del\x7f nul\x00", `del\x7f nul\x00`, `del\x7f nul\x00`},
		// C1 CSI (U+009B) acts like ESC [ on some terminals.
		{"\u009b2J", `\u009b2J`, `\u009b2J`},
		// A right-to-left override reorders what follows it.
		{"abc\u202etxt.exe", `abc\u202etxt.exe`, `abc\u202etxt.exe`},
		{"\u2066iso\u2069", `\u2066iso\u2069`, `\u2066iso\u2069`},
		// Invalid UTF-8 is shown byte by byte; a real U+FFFD is kept.
		{"bad\xff\xfe", `bad\xff\xfe`, `bad\xff\xfe`},
		{"repl \uFFFD ok", "repl \uFFFD ok", "repl \uFFFD ok"},
		{"héllo ✓ 日本", "héllo ✓ 日本", "héllo ✓ 日本"},
		// SGR conceal (8) would hide what follows it in an approval box.
		{"echo hi; \x1b[8mrm -rf docs\x1b[0m", `echo hi; \x1b[8mrm -rf docs\x1b[0m`, `echo hi; \x1b[8mrm -rf docs\x1b[0m`},
		// Cursor moves: up a line, to column 1, erase the line.
		{"ok\x1b[1A\x1b[G\x1b[2K", `ok\x1b[1A\x1b[G\x1b[2K`, `ok\x1b[1A\x1b[G\x1b[2K`},
		// OSC 52 writes the clipboard (ST-terminated and BEL-terminated).
		{"\x1b]52;c;cm0gLXJmIH4=\x1b\\", `\x1b]52;c;cm0gLXJmIH4=\x1b\`, `\x1b]52;c;cm0gLXJmIH4=\x1b\`},
		// DCS, a two-byte ESC sequence (reset), a lone ESC.
		{"\x1bPq\x1b\\\x1bc\x1b", `\x1bPq\x1b\\x1bc\x1b`, `\x1bPq\x1b\\x1bc\x1b`},
		// Every C0 but newline and tab, in the text form too.
		{"\x01\x08\x0b\x0c\x1f", `\x01\x08\x0b\x0c\x1f`, `\x01\x08\x0b\x0c\x1f`},
		{"nul\x00byte", `nul\x00byte`, `nul\x00byte`},
		// C1 as runes (NEL, OSC, ST) and as raw bytes (invalid UTF-8).
		{"\u0085\u009d\u009c", `\u0085\u009d\u009c`, `\u0085\u009d\u009c`},
		{"\x9b31m", `\x9b31m`, `\x9b31m`},
		// Bidi marks, embeddings, overrides and isolates.
		{"\u200e\u200f\u061c", `\u200e\u200f\u061c`, `\u200e\u200f\u061c`},
		{"\u202a\u202b\u202c\u202d", `\u202a\u202b\u202c\u202d`, `\u202a\u202b\u202c\u202d`},
		{"\u2067\u2068", `\u2067\u2068`, `\u2067\u2068`},
		// Line and paragraph separators start a new line on some terminals.
		{"a\u2028b\u2029", `a\u2028b\u2029`, `a\u2028b\u2029`},
		// Runes that draw nothing and so hide text where a person reads
		// it: zero-width space, joiner, word joiner, soft hyphen, BOM.
		{"rm\u200b \u200d\u2060\u00ad\ufeffx", `rm\u200b \u200d\u2060\u00ad\ufeffx`, `rm\u200b \u200d\u2060\u00ad\ufeffx`},
		// Tag characters spell invisible ASCII ("hi"): ASCII smuggling.
		{"ok\U000e0068\U000e0069", `ok\U000e0068\U000e0069`, `ok\U000e0068\U000e0069`},
		// A Hangul filler is a letter that renders blank: an invisible
		// identifier in code ("exec(ㅤ)").
		{"exec(\u3164)", `exec(\u3164)`, `exec(\u3164)`},
		// Variation selectors carry bytes after one visible rune; a
		// single emoji presentation selector is kept.
		{"a\ufe00\ufe01\U000e0100", `a\ufe00\ufe01\U000e0100`, `a\ufe00\ufe01\U000e0100`},
		{"ok \u2714\ufe0f", "ok \u2714\ufe0f", "ok \u2714\ufe0f"},
		{"\u2714\ufe0f\ufe0f\ufe0e", "\u2714\ufe0f" + `\ufe0f\ufe0e`, "\u2714\ufe0f" + `\ufe0f\ufe0e`},
		// A truncated sequence at the end.
		{"x\xe2\x80", `x\xe2\x80`, `x\xe2\x80`},
	}
	for _, tt := range tests {
		if got := Escape(tt.in); got != tt.want {
			t.Errorf("Escape(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if got := EscapeText(tt.in); got != tt.wantText {
			t.Errorf("EscapeText(%q) = %q, want %q", tt.in, got, tt.wantText)
		}
	}
}

// FuzzEscape checks the property that matters: nothing Escape returns
// contains a byte or rune a terminal acts on, and it is valid UTF-8.
func FuzzEscape(f *testing.F) {
	for _, s := range []string{
		"\x1b[2J",            // CSI clear screen
		"\x1b]52;c;x\x07",    // OSC 52 clipboard write
		"\u009b",             // C1 CSI
		"\u202e",             // RLO
		"\xff\xc3",           // invalid and truncated UTF-8
		"a\r\nb",             // CRLF
		"x\U000e0041\u200b",  // a tag character, a zero-width space
		"\u2714\ufe0f\ufe0f", // a presentation selector, then one too many
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, got := range []string{Escape(s), EscapeText(s)} {
			if !utf8.ValidString(got) {
				t.Fatalf("escape(%q) = %q: invalid UTF-8", s, got)
			}
			prev := rune(-1)
			for _, r := range got {
				if (r < 0x20 && r != '\n' && r != '\t') || r == 0x7f || unsafeRune(r) || hiddenRune(r, prev) {
					t.Fatalf("escape(%q) = %q keeps %U", s, got, r)
				}
				prev = r
			}
		}
		if strings.ContainsAny(Escape(s), "\n\t") {
			t.Fatalf("Escape(%q) keeps a newline or tab", s)
		}
	})
}

func TestHead(t *testing.T) {
	lines, more := Head("one\ntwo\x1b[1m\nthree\nfour\n\nfive\n\n", 3, 80)
	if strings.Join(lines, "|") != `one|two\x1b[1m|three` || more != 2 {
		t.Errorf("Head = %q, %d more", lines, more)
	}
	lines, more = Head(strings.Repeat("é", 200), 3, 10)
	if len(lines) != 1 || lines[0] != strings.Repeat("é", 9)+"…" || more != 0 {
		t.Errorf("Head of a long line = %q, %d", lines, more)
	}
	if lines, _ := Head("     1\t# Intro\nab\tc", 3, 80); strings.Join(lines, "|") != "     1  # Intro|ab  c" {
		t.Errorf("Head with tabs = %q", lines)
	}
	if lines, more := Head("\n\n", 3, 10); lines != nil || more != 0 {
		t.Errorf("Head of empty lines = %q, %d", lines, more)
	}
}

func TestCutBytes(t *testing.T) {
	if got := CutBytes("ab日本", 4); got != "ab…" {
		t.Errorf("CutBytes = %q", got)
	}
	if got := CutBytes("abc", 3); got != "abc" {
		t.Errorf("CutBytes = %q", got)
	}
}

func TestLines(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"one\n", []string{"one"}},
		{"echo hi\n\x1b[8mrm -rf docs\x1b[0m\n", []string{"echo hi", `\x1b[8mrm -rf docs\x1b[0m`}},
		{"-old\r\n+new\tx", []string{`-old\r`, "+new    x"}},
		{"a\n\nb", []string{"a", "", "b"}},
	}
	for _, tt := range tests {
		got := Lines(tt.in)
		if strings.Join(got, "|") != strings.Join(tt.want, "|") || len(got) != len(tt.want) {
			t.Errorf("Lines(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
