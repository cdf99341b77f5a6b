package secret

import (
	"bytes"
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"io"
	"net/url"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
)

func TestPlaceholder(t *testing.T) {
	p, err := NewPlaceholder("issue_api_token")
	if err != nil {
		t.Fatal(err)
	}
	q, _ := NewPlaceholder("issue_api_token")
	if p == q {
		t.Error("two placeholders are equal; want a fresh token each time")
	}
	if !strings.HasPrefix(p.String(), "norma-secret:issue_api_token:") || len(p.Token()) != 32 {
		t.Errorf("placeholder = %q", p)
	}
	if got, ok := ParsePlaceholder(p.String()); !ok || got != p {
		t.Errorf("ParsePlaceholder(%q) = %v, %v", p, got, ok)
	}
	if _, err := NewPlaceholder("Bad"); err == nil {
		t.Error("NewPlaceholder(Bad) succeeded")
	}
}

func TestScanPlaceholders(t *testing.T) {
	tok := strings.Repeat("ab", 16)
	tests := []struct {
		name string
		in   string
		want []string // names
	}{
		{name: "none", in: "Authorization: Bearer abc"},
		{name: "header", in: "Bearer norma-secret:tok:" + tok, want: []string{"tok"}},
		{name: "two", in: "norma-secret:a:" + tok + "&norma-secret:b_2:" + tok, want: []string{"a", "b_2"}},
		{name: "trailing hex still found", in: "norma-secret:a:" + tok + "ff", want: []string{"a"}},
		{name: "short token", in: "norma-secret:a:" + tok[:31]},
		{name: "upper token", in: "norma-secret:a:" + strings.ToUpper(tok)},
		{name: "upper name", in: "norma-secret:A:" + tok},
		{name: "empty name", in: "norma-secret::" + tok},
		{name: "prefix twice", in: "norma-secret:norma-secret:a:" + tok, want: []string{"a"}},
		{name: "url escaped colon is not a placeholder", in: "norma-secret%3Aa%3A" + tok},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, m := range ScanPlaceholders([]byte(tt.in)) {
				got = append(got, m.Placeholder.Name())
				if tt.in[m.Start:m.End] != m.Placeholder.String() {
					t.Errorf("match [%d:%d] = %q, want %q", m.Start, m.End, tt.in[m.Start:m.End], m.Placeholder)
				}
			}
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("ScanPlaceholders(%q) = %v, want %v", tt.in, got, tt.want)
			}
		})
	}
}

func newTestRedactor(t testing.TB) (*Redactor, Placeholder) {
	r := NewRedactor()
	if err := r.AddValue("tok", NewValue([]byte(canary))); err != nil {
		t.Fatal(err)
	}
	if err := r.AddValue("b", NewValue([]byte("p@ss w/rd&more"))); err != nil {
		t.Fatal(err)
	}
	p, _ := NewPlaceholder("tok")
	r.AddPlaceholder(p)
	return r, p
}

func TestRedact(t *testing.T) {
	r, p := newTestRedactor(t)
	tests := []struct {
		name string
		in   string
		want string
	}{
		{name: "nothing", in: "hello world", want: "hello world"},
		{name: "raw", in: "token=" + canary + ".", want: "token=[REDACTED:tok]."},
		{name: "twice", in: canary + canary, want: "[REDACTED:tok][REDACTED:tok]"},
		{name: "query escaped", in: "?pw=" + url.QueryEscape("p@ss w/rd&more"), want: "?pw=[REDACTED:b]"},
		{name: "base64", in: base64.StdEncoding.EncodeToString([]byte(canary)), want: "[REDACTED:tok]"},
		{name: "upper-case hex", in: strings.ToUpper(hex.EncodeToString([]byte(canary))), want: "[REDACTED:tok]"},
		{name: "reversed", in: "x=" + string(reversed([]byte(canary))), want: "x=[REDACTED:tok]"},
		{name: "rot13", in: string(rot13([]byte(canary))), want: "[REDACTED:tok]"},
		{name: "base32", in: base32.StdEncoding.EncodeToString([]byte(canary)), want: "[REDACTED:tok]"},
		{name: "placeholder", in: "TOKEN=" + p.String(), want: "TOKEN=[REDACTED:tok]"},
		{name: "placeholder token alone", in: "x" + p.Token() + "x", want: "x[REDACTED:tok]x"},
		{name: "prefix only", in: canary[:10], want: canary[:10]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := r.Redact(tt.in); got != tt.want {
				t.Errorf("Redact(%q) = %q, want %q", tt.in, got, tt.want)
			}
			if got := string(r.RedactBytes([]byte(tt.in))); got != tt.want {
				t.Errorf("RedactBytes(%q) = %q, want %q", tt.in, got, tt.want)
			}
			var buf bytes.Buffer
			w := r.Writer(&buf)
			for i := 0; i < len(tt.in); i++ { // one byte per write: every split point
				w.Write([]byte{tt.in[i]})
			}
			w.Close()
			if buf.String() != tt.want {
				t.Errorf("Writer(%q) = %q, want %q", tt.in, buf.String(), tt.want)
			}
		})
	}
	var zero Redactor
	if got := zero.Redact(canary); got != canary {
		t.Errorf("zero Redactor changed text: %q", got)
	}
	if err := r.AddValue("short", NewValue([]byte("abc"))); err == nil {
		t.Error("AddValue accepted a 3-byte value")
	}
}

func TestMaskReaderKeepsLength(t *testing.T) {
	r, p := newTestRedactor(t)
	in := strings.Repeat("x", 40000) + canary + "middle" + p.String() + strings.Repeat("y", 70000) + canary
	for _, wrap := range []struct {
		name string
		f    func(io.Reader) io.Reader
	}{
		{"plain", func(r io.Reader) io.Reader { return r }},
		{"one byte", iotest.OneByteReader},
		{"half", iotest.HalfReader},
		{"data err", iotest.DataErrReader},
	} {
		t.Run(wrap.name, func(t *testing.T) {
			out, err := io.ReadAll(r.MaskReader(wrap.f(strings.NewReader(in))))
			if err != nil {
				t.Fatal(err)
			}
			if len(out) != len(in) {
				t.Errorf("len = %d, want %d", len(out), len(in))
			}
			if bytes.Contains(out, []byte(canary)) {
				t.Error("canary survived")
			}
			if !bytes.Contains(out, []byte(p.String())) {
				t.Error("MaskReader masked a placeholder; it masks values only")
			}
		})
	}
}

// TestMaskReaderReusesBuffers: a reader that reached the end of its body
// gives its buffers to the next one. Bodies read one after another and
// side by side (-race) come out masked and whole, a body cut in the middle
// of a value included, and a finished reader keeps returning its error.
func TestMaskReaderReusesBuffers(t *testing.T) {
	r, _ := newTestRedactor(t)
	bodies := []string{
		strings.Repeat("a", 50000) + canary + "tail",
		canary[:len(canary)/2], // ends inside a value: held back, then flushed
		"short " + canary,
		strings.Repeat("b", 300000) + canary, // grows past maxPooled
		"",
	}
	want := func(in string) string { return strings.ReplaceAll(in, canary, strings.Repeat("*", len(canary))) }
	check := func(t *testing.T, in string) {
		m := r.MaskReader(iotest.HalfReader(strings.NewReader(in)))
		out, err := io.ReadAll(m)
		if err != nil || string(out) != want(in) {
			t.Errorf("masked %d bytes: err %v, got %d bytes, equal %v", len(in), err, len(out), string(out) == want(in))
		}
		if n, err := m.Read(make([]byte, 8)); n != 0 || err != io.EOF {
			t.Errorf("Read after EOF = %d, %v", n, err)
		}
	}
	for range 3 {
		for _, in := range bodies {
			check(t, in)
		}
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() { check(t, bodies[i%len(bodies)]) })
	}
	wg.Wait()
}

// FuzzScanPlaceholders checks that the scanner never panics, that every
// match parses back, and that a placeholder embedded anywhere is found.
func FuzzScanPlaceholders(f *testing.F) {
	tok := strings.Repeat("0f", 16)
	f.Add([]byte("Bearer norma-secret:tok:"+tok), "tok")   // a header value
	f.Add([]byte("norma-secret:norma-secret:a:"+tok), "a") // prefix inside prefix
	f.Add([]byte("norma-secret:a:"+tok[:31]), "b")         // truncated token
	f.Add([]byte{}, "x")                                   // empty
	f.Fuzz(func(t *testing.T, b []byte, name string) {
		for _, m := range ScanPlaceholders(b) {
			if string(b[m.Start:m.End]) != m.Placeholder.String() {
				t.Fatalf("match text %q != %q", b[m.Start:m.End], m.Placeholder)
			}
			if p, ok := ParsePlaceholder(m.Placeholder.String()); !ok || p != m.Placeholder {
				t.Fatalf("ParsePlaceholder(%q) = %v, %v", m.Placeholder, p, ok)
			}
		}
		if !ValidName(name) {
			return
		}
		p, err := NewPlaceholder(name)
		if err != nil {
			t.Fatal(err)
		}
		// Break the surroundings so they cannot extend the name or token.
		s := append(append(append([]byte{}, b...), ' '), p.String()...)
		s = append(s, ' ')
		s = append(s, b...)
		found := false
		for _, m := range ScanPlaceholders(s) {
			found = found || m.Placeholder == p
		}
		if !found {
			t.Fatalf("placeholder %q not found in %q", p, s)
		}
	})
}

// FuzzRedact checks that redaction leaves no secret behind (a value, or a
// token of each known format embedded in the text), that it agrees with
// its counts, and that the streaming writer, split anywhere, agrees with
// the one-shot form. Seeds: testdata/fuzz/FuzzRedact.
func FuzzRedact(f *testing.F) {
	f.Add("token=CANARY-s3cr3t-7f3a9c1e.", "CANARY-s3cr3t-7f3a9c1e", "abcdefgh1", uint8(1), uint8(0))
	f.Add("aaaaaaaaaaaaaaaaaaaa", "aaaaaaaaa", "aaaaaaaaaaaa", uint8(3), uint8(1))    // overlapping patterns
	f.Add("xxABCDEFGHIJxx", "ABCDEFGHIJ", "xxABCDEFGH", uint8(2), uint8(2))           // leftmost vs longest
	f.Add("-----BEGIN EC PRIVATE KEY-----\nab", "zzzzzzzzzz", "", uint8(5), uint8(5)) // open block
	f.Add("eyJhbGciOiJIUzI1NiJ9.eyJz", "", "", uint8(4), uint8(6))                    // a JWT cut short
	f.Fuzz(func(t *testing.T, in, s1, s2 string, chunk, kind uint8) {
		clean := func(s string) string { // markers hold letters, brackets, colons: keep them apart
			return strings.Map(func(r rune) rune {
				if r >= '0' && r <= '9' || r >= 'a' && r <= 'z' {
					return r
				}
				return -1
			}, s)
		}
		s1, s2 = clean(s1), clean(s2)
		r := NewRedactor()
		var secrets []string
		for i, s := range []string{s1, s2} {
			if len(s) < MinValueLen {
				continue
			}
			if err := r.AddValue([]string{"A", "B"}[i], NewValue([]byte(s))); err == nil {
				secrets = append(secrets, s)
			}
		}
		toks := []string{ghClassic, ghPAT, awsID, slackTok, jwt, pemKey}
		tok := toks[int(kind)%len(toks)]
		in += " " + tok + " " + in
		got, counts := r.RedactCount(in)
		for _, s := range append(secrets, tok) {
			if strings.Contains(got, s) {
				t.Fatalf("Redact(%q) = %q still holds %q", in, got, s)
			}
		}
		if n := strings.Count(got, "[REDACTED:") - strings.Count(in, "[REDACTED:"); n > sum(counts) {
			t.Fatalf("Redact(%q) = %q: %d markers, counts %v", in, got, n, counts)
		}
		n := int(chunk%17) + 1
		var buf bytes.Buffer
		w := r.Writer(&buf)
		for i := 0; i < len(in); i += n {
			w.Write([]byte(in[i:min(len(in), i+n)]))
		}
		w.Close()
		if buf.String() != got {
			t.Fatalf("Writer(%q, chunk %d) = %q, want %q", in, n, buf.String(), got)
		}
		masked, _ := io.ReadAll(r.MaskReader(iotest.OneByteReader(strings.NewReader(in))))
		if len(masked) != len(in) {
			t.Fatalf("MaskReader changed the length: %d != %d", len(masked), len(in))
		}
	})
}
