package audit

import (
	"crypto/ed25519"
	"strings"
	"testing"
)

func TestParseCheckpoint(t *testing.T) {
	const hash = "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=" // sha256("")
	tests := []struct {
		name, text string
		want       string // error substring; "" parses
	}{
		{"minimal", "example.com/log\n0\n" + hash + "\n", ""},
		{"extension lines", "example.com/log\n12\n" + hash + "\nx-ext one\nx-ext two\n", ""},
		{"no final newline", "example.com/log\n12\n" + hash, "newline"},
		{"two lines", "example.com/log\n12\n", "2 lines"},
		{"empty origin", "\n12\n" + hash + "\n", "line 1 is empty"},
		{"empty extension", "example.com/log\n12\n" + hash + "\n\n", "line 4 is empty"},
		{"leading zero", "example.com/log\n012\n" + hash + "\n", "canonical"},
		{"plus sign", "example.com/log\n+12\n" + hash + "\n", "canonical"},
		{"negative", "example.com/log\n-1\n" + hash + "\n", "canonical"},
		{"overflow", "example.com/log\n9223372036854775808\n" + hash + "\n", "canonical"},
		{"short hash", "example.com/log\n1\nAAAA\n", "32 bytes"},
		{"unpadded hash", "example.com/log\n1\n" + strings.TrimSuffix(hash, "=") + "\n", "32 bytes"},
		{"CR inside hash", "example.com/log\n1\n" + hash[:20] + "\r" + hash[20:] + "\n", "canonical base64"},
		{"CR ending hash", "example.com/log\n1\n" + hash + "\r\n", "canonical base64"},
		{"url base64", "example.com/log\n1\n" + strings.NewReplacer("+", "-", "/", "_").Replace(hash) + "\n", "32 bytes"},
		{"not UTF-8", "example.com/\xff\n1\n" + hash + "\n", "UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := ParseCheckpoint(tt.text)
			if tt.want == "" {
				if err != nil || c.Origin != "example.com/log" || !strings.HasPrefix(tt.text, c.Text()) {
					t.Errorf("ParseCheckpoint = %+v, %v", c, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("ParseCheckpoint error = %v, want %q", err, tt.want)
			}
		})
	}
}

// fuzzKey is a fixed key, so that the corpus can hold notes it signed.
var fuzzKey = ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))

// FuzzParseCheckpoint: the parser never panics, what it accepts has a
// canonical form that parses to the same checkpoint and is the input's
// prefix, and opening a signed note agrees with the parser.
func FuzzParseCheckpoint(f *testing.F) {
	origin := KeyOrigin(fuzzKey.Public().(ed25519.PublicKey))
	v, err := NewNoteVerifier(origin, fuzzKey.Public().(ed25519.PublicKey))
	if err != nil {
		f.Fatal(err)
	}
	s, err := NewNoteSigner(origin, fuzzKey)
	if err != nil {
		f.Fatal(err)
	}
	signed, err := SignCheckpoint(Checkpoint{Origin: origin, Size: 3}, s)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(string(signed))
	f.Add("example.com/log\n12\n47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\n")
	f.Fuzz(func(t *testing.T, text string) {
		if c, err := ParseCheckpoint(text); err == nil {
			if !strings.HasPrefix(text, c.Text()) {
				t.Fatalf("canonical form %q is not a prefix of %q", c.Text(), text)
			}
			if c2, err := ParseCheckpoint(c.Text()); err != nil || c2 != c {
				t.Fatalf("ParseCheckpoint(Text()) = %+v, %v; want %+v", c2, err, c)
			}
		}
		c, err := OpenCheckpoint([]byte(text), v, origin)
		if err != nil {
			return
		}
		if c.Origin != origin {
			t.Fatalf("opened a checkpoint of %q", c.Origin)
		}
		body := text[:strings.LastIndex(text, "\n\n")+1]
		if c2, err := ParseCheckpoint(body); err != nil || c2 != c {
			t.Fatalf("note body %q parses to %+v, %v; Open said %+v", body, c2, err, c)
		}
	})
}
