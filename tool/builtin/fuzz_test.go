package builtin

import (
	"bytes"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzHTMLToMarkdown: any input converts without panic to valid UTF-8 that
// never contains script content or a javascript: link.
func FuzzHTMLToMarkdown(f *testing.F) {
	for _, s := range []string{
		`<h1>T</h1><p>a <b>b</b> <a href="/x">c</a></p>`,         // the common shapes
		`<ul><li>a<ol><li>b</li></ol></li></ul><pre>x\n y</pre>`, // nesting and pre
		`<a href="javascript:alert(1)">x</a><script>evil()</script>`,
		"<p>\xff\xfe broken utf8</p>", // invalid bytes
		strings.Repeat("<div>", 3000), // deep nesting
		`<table><tr><td>a</td><td>b</td></tr></table><blockquote><p>q</p></blockquote>`,
	} {
		f.Add(s)
	}
	base, _ := url.Parse("https://example.org/dir/page")
	f.Fuzz(func(t *testing.T, doc string) {
		title, md := htmlToMarkdown([]byte(doc), base)
		if !utf8.ValidString(md) || !utf8.ValidString(title) {
			t.Fatalf("htmlToMarkdown(%q) is not valid UTF-8", doc)
		}
		if strings.Contains(md, "](javascript:") {
			t.Fatalf("htmlToMarkdown(%q) = %q keeps a javascript: link", doc, md)
		}
	})
}

// FuzzParseSkill: no panic; tool names that come out are valid; the
// instructions never include the front matter.
func FuzzParseSkill(f *testing.F) {
	for _, s := range []string{
		"---\nname: a\ndescription: b\ntools: [X, Y]\n---\nbody\n", // front matter and body
		"no front matter",
		"---\ntools: [\"../x\"]\n---\n", // an invalid tool name
		"---\nunterminated",
		"\xef\xbb\xbf---\r\ntools:\r\n  - A\r\n---\r\nwindows\r\n", // BOM and CRLF
	} {
		f.Add([]byte(s))
	}
	nameRE := regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_.-]{0,127}$`)
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseSkill(data)
		if err != nil {
			return
		}
		for _, n := range s.Tools {
			if !nameRE.MatchString(n) {
				t.Fatalf("ParseSkill(%q) let tool name %q through", data, n)
			}
		}
		if bytes.HasPrefix(data, []byte("---\n")) && strings.HasPrefix(s.Instructions, "---") && !strings.Contains(string(data[4:]), "\n---\n---") {
			t.Fatalf("ParseSkill(%q): instructions start with front matter: %q", data, s.Instructions)
		}
	})
}

// FuzzGrepFind checks the matcher, which runs over the whole file, against
// grep's definition: the user's pattern, as written, matched against each
// line alone. Whatever the pattern (a class or a range that holds "\n",
// ".", (?s), \A, (?-m)$), a match never spans a line end.
func FuzzGrepFind(f *testing.F) {
	for _, s := range [][2]string{
		{"TOKEN", "a\nTOKEN b\nc TOKEN\n"}, // literal fast path
		{"^func", "func a\n func b\nfunc"}, // anchors per line
		{"a+b", "aab\nab\nb\n"},            // regexp with a literal prefix
		{"x$", "x\nxx\n\nx"},               // end anchors and an empty line
		{"[0-9]", "1\r\n2\r\n"},            // CRLF
		// Classes and ranges that hold "\n", in every form.
		{"[\x00-0]", "\n"},
		{"[\t-\r]", "a\nb"},
		{"[\x01-\n]", "\n\n"},
		{"[\n-\\x{10FFFF}]", "\n"},
		{"[\\x{0}-\\x{10FFFF}]+", "ab\ncd\n"},
		{"[^a]", "a\na"},
		{"a[^b]*c", "a\nc\nac"},
		{"[[:space:]]", "a\nb"},
		{"[^[:^space:]]", "a\nb"},
		{"[[:cntrl:]]", "a\nb"},
		{"\\s+", "a\n\nb"},
		{"\\D", "\n"},
		{"\\W", "\n"},
		{"\\pC", "\n"},
		{"\\PL", "\n"},
		{"[\\D\\d]", "\n"},
		{"(?i)[^k]", "k\nK"},
		{"(?s).", "\n"},
		{"(?s)a.*b", "a\nb\n"},
		{"\\x0a?x", "x\n"},
		{"[\\x00-\\x7f]", "\n"},
		{"[\\0-\\177]", "\n"},
		// Anchors of the text, not the line.
		{"(?-m)^b", "a\nb\n"},
		{"(?-m)a$", "a\nb\n"},
		{"\\Ab", "a\nb"},
		{"a\\z", "a\nb"},
		// A newline in the pattern is refused.
		{"a\nb", "a\nb"},
		{"[\n]", "\n"},
		{"\\n?x", "x"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pattern, data string) {
		orig, origErr := regexp.Compile("(?m)" + pattern)
		m, err := newMatcher(grepArgs{Pattern: pattern, OutputMode: grepContent, HeadLimit: 1 << 20})
		if err != nil {
			if origErr == nil && !strings.Contains(err.Error(), "line break") {
				t.Fatalf("newMatcher(%q) = %v, but it compiles", pattern, err)
			}
			return
		}
		if origErr != nil {
			t.Fatalf("newMatcher(%q) compiles, regexp says %v", pattern, origErr)
		}
		lines, count := m.find([]byte(data), 1<<20)
		var want []int
		for i, l := range strings.SplitAfter(data, "\n") {
			if l == "" {
				continue
			}
			if orig.MatchString(strings.TrimSuffix(l, "\n")) {
				want = append(want, i)
			}
		}
		if count != len(want) || len(lines) != len(want) {
			t.Fatalf("find(%q, %q) = %v (%d), want %v", pattern, data, lines, count, want)
		}
		for i := range want {
			if lines[i] != want[i] {
				t.Fatalf("find(%q, %q) = %v, want %v", pattern, data, lines, want)
			}
		}
	})
}

// TestParseSkillFrontMatter: the front matter is read like a manifest, so
// what a manifest may not contain is refused here too, with a position.
func TestParseSkillFrontMatter(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"---\ntools: !00 00\n---\n", "front matter:1:8: YAML tags such as !00 are not allowed"},
		{"---\ntools: x\n---\n", "front matter:1:8: tools: has the wrong type: want []string"},
		{"---\nname: a\ntools: [Read]\nother: 1\n---\nbody", ""},
	} {
		_, err := ParseSkill([]byte(tc.in))
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("ParseSkill(%q) error = %q, want %q", tc.in, got, tc.want)
		}
	}
}
