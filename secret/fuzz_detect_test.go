package secret

import (
	"math/big"
	"strings"
	"testing"

	"github.com/norma-run/norma/secret/secrettest"
)

// FuzzNormalize: every view is bounded (no longer than its input, twice
// for the unicode view), and undoing URL encoding twice equals undoing it
// on its own output (layers peel one at a time).
func FuzzNormalize(f *testing.F) {
	f.Add([]byte("q=%2567%2568p_%41"))          // two layers of percent-encoding
	f.Add([]byte(`\u0067\x68&#112;&#x5F;\`))    // escapes, one cut short
	f.Add([]byte("g\u200bh\u200dp ｇｈｐ ѕk-аnt")) // invisible, fullwidth, look-alike
	f.Add([]byte("Z2hwX0ExYjJDM2Q0RTVmNkc3aDhJOWow=="))
	f.Add([]byte("x-o-x-b---1-2-3-4 s-:-/-/-h"))
	f.Add([]byte("ﷺﷺﷺ")) // NFKC expands one rune to 18
	f.Add([]byte{0xff, 0xfe, '%', 'z'})
	f.Fuzz(func(t *testing.T, b []byte) {
		for name, v := range Normalize(b) {
			limit := len(b)
			if name == "unicode" {
				limit = 2 * len(b)
			}
			if name == "escape" {
				limit = 2 * len(b) // \xNN of a byte ≥ 0x80 stays one byte; &#N; may grow to 4
			}
			if len(v) > limit+len(b)/minEncodedRun+1 {
				t.Fatalf("view %s of %d bytes is %d bytes", name, len(b), len(v))
			}
		}
		if u := urlView(b); u != nil {
			_ = urlView(u) // no panic on its own output
		}
		_ = splitView(b)
	})
}

// FuzzDetect: Detect never panics, reports at most maxFindings, never
// names a value in a finding, and always finds a token placed between
// spaces in any text.
func FuzzDetect(f *testing.F) {
	for _, s := range secrettest.Benign() {
		f.Add([]byte(s.Text), uint16(0), uint8(0))
	}
	for i, s := range secrettest.Tokens() {
		f.Add([]byte(s.Text), uint16(i), uint8(i))
	}
	f.Add([]byte(strings.Repeat("%25", 100)+"41"), uint16(3), uint8(1)) // deep URL layers
	f.Add([]byte(strings.Repeat("abandon ", 30)), uint16(9), uint8(2))  // a long run of seed words
	toks := secrettest.Tokens()
	r := NewRedactor()
	f.Fuzz(func(t *testing.T, b []byte, at uint16, which uint8) {
		fs := r.Detect(b)
		if len(fs) > maxFindings {
			t.Fatalf("%d findings", len(fs))
		}
		tok := toks[int(which)%len(toks)]
		if strings.Contains(tok.Text, "\n") {
			return
		}
		pos := int(at) % (len(b) + 1)
		in := string(b[:pos]) + " " + tok.Text + " " + string(b[pos:])
		found := false
		for _, f := range r.DetectString(in) {
			if strings.Contains(f.String(), tok.Text) {
				t.Fatalf("finding %q names the value", f)
			}
			found = found || f.Detector == tok.Detector || f.Class == ClassSecret
		}
		if !found {
			t.Fatalf("Detect(%q) missed %s", in, tok.Detector)
		}
	})
}

// FuzzCard: cardAt agrees with a second implementation of Luhn on the
// digits it accepted, and never accepts fewer than 13 or more than 19.
func FuzzCard(f *testing.F) {
	for _, s := range []string{"4111 1111 1111 1111", "5555-5555-5555-4444", "378282246310005", "4111 1111 1111 1112", "4111  1111", "4111-1111 1111-1111", "41111111111111111111"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n := cardAt([]byte(s))
		if n == 0 {
			return
		}
		d := digitsOf([]byte(s[:n]))
		if len(d) < 13 || len(d) > 19 {
			t.Fatalf("cardAt(%q) accepted %d digits", s, len(d))
		}
		sum := 0
		for i := len(d) - 1; i >= 0; i-- {
			x := int(d[i] - '0')
			if (len(d)-1-i)%2 == 1 {
				x = x * 2 % 9
				if x == 0 && d[i] == '9' {
					x = 9
				}
			}
			sum += x
		}
		if sum%10 != 0 {
			t.Fatalf("cardAt(%q) accepted a number whose Luhn sum is %d", s, sum)
		}
	})
}

// FuzzIBAN: ibanAt agrees with math/big's mod 97 on what it accepted.
func FuzzIBAN(f *testing.F) {
	for _, s := range []string{"GB82 WEST 1234 5698 7654 32", "DE89370400440532013000", "GB82 WEST 1234 5698 7654 33", "NO9386011117947", "XX00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n := ibanAt([]byte(s))
		if n == 0 {
			return
		}
		c := strings.ToUpper(string(digitsOrLetters([]byte(s[:n]))))
		if ibanLengths()[c[:2]] != len(c) {
			t.Fatalf("ibanAt(%q) accepted length %d", s, len(c))
		}
		var num strings.Builder
		for _, r := range c[4:] + c[:4] {
			if r >= 'A' {
				num.WriteString(big.NewInt(int64(r - 'A' + 10)).String())
			} else {
				num.WriteRune(r)
			}
		}
		v, _ := new(big.Int).SetString(num.String(), 10)
		if new(big.Int).Mod(v, big.NewInt(97)).Int64() != 1 {
			t.Fatalf("ibanAt(%q) accepted a failing check", s)
		}
	})
}

// FuzzSeedPhrase: the seed detector never panics and reports only a
// phrase whose checksum holds.
func FuzzSeedPhrase(f *testing.F) {
	for _, s := range secrettest.Identifiers() {
		if s.Detector == DetectorSeedPhrase {
			f.Add(s.Text)
		}
	}
	f.Add(strings.Repeat("zoo ", 12))
	f.Add("1. abandon 2. abandon 3. abandon 4. abandon 5. abandon 6. abandon 7. abandon 8. abandon 9. abandon 10. abandon 11. abandon 12. about")
	f.Fuzz(func(t *testing.T, s string) {
		var d detection
		d.identifiers([]byte(s), "")
		for _, f := range d.found {
			if f.Detector == DetectorSeedPhrase && f.Class != ClassSensitive {
				t.Fatalf("class %v", f.Class)
			}
		}
	})
}

// FuzzWIF: a WIF finding is 51 or 52 base58 characters.
func FuzzWIF(f *testing.F) {
	for _, s := range []string{"5HueCGU8rMjxEXxiPuD5BDku4MkFqeZyd4dZ1jvhTVqvbTLvyTJ", "KwdMAjGmerYanjeui5SHS7JkmpZvVipYvB2LJGU1ZxJwYvP98617", "L" + strings.Repeat("z", 51), "5"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var d detection
		d.wifAt([]byte(s), ' ', "")
		if len(d.found) > 0 && len(s) < 51 {
			t.Fatalf("WIF found in %d bytes", len(s))
		}
	})
}

// FuzzKeyed: the keyed detector reports only after a credential's name,
// never a value shorter than its bound.
func FuzzKeyed(f *testing.F) {
	for _, s := range []string{`{"client_secret": "q8Zr2LxV7pK3mN9tW4yB6cF1hJ5d"}`, "Authorization: Bearer q8Zr2LxV7pK3mN9tW4yB6cF1hJ5d", "api_key=", "=:=:", `"token":"expired"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var d detection
		d.keyed([]byte(s), "")
		if len(d.found) > 0 && len(s) < minKeyedLen {
			t.Fatalf("keyed finding in %q", s)
		}
	})
}

// FuzzSurvey: the survey's jumps agree with a byte-by-byte count of the
// longest base64 run and a plain scan for the escapes.
func FuzzSurvey(f *testing.F) {
	f.Add([]byte("aaaaaaaaaaaaaaa aaaaaaaaaaaaaaaa"))
	f.Add([]byte("%41+\\&#x41;é"))
	f.Add([]byte("0123456789abcde"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s := surveyOf(b)
		n, longest := 0, 0
		var want survey
		for i, c := range b {
			if isB64(c) {
				n++
				longest = max(longest, n)
			} else {
				n = 0
			}
			want.nonASCII = want.nonASCII || c >= 0x80
			want.percent = want.percent || c == '%' || c == '+'
			want.escape = want.escape || c == '\\' || c == '&' && i+1 < len(b) && b[i+1] == '#'
		}
		want.b64 = longest >= minEncodedRun
		if s != want {
			t.Fatalf("surveyOf(%q) = %+v, want %+v", b, s, want)
		}
	})
}
