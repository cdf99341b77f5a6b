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
		"\x1b[2J",         // CSI clear screen
		"\x1b]52;c;x\x07", // OSC 52 clipboard write
		"\u009b",          // C1 CSI
		"\u202e",          // RLO
		"\xff\xc3",        // invalid and truncated UTF-8
		"a\r\nb",          // CRLF
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, got := range []string{Escape(s), EscapeText(s)} {
			if !utf8.ValidString(got) {
				t.Fatalf("escape(%q) = %q: invalid UTF-8", s, got)
			}
			for _, r := range got {
				if (r < 0x20 && r != '\n' && r != '\t') || r == 0x7f || unsafeRune(r) {
					t.Fatalf("escape(%q) = %q keeps %U", s, got, r)
				}
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
