package secret

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"net/url"
	"strings"
	"testing"
)

// Token canaries are assembled at run time so that no file of the
// repository holds a string that a secret scanner would flag.
var (
	b62       = "aB3dE5gH7jK9mN1pQ2sT4vW6yZ8bC0fG2hJ4kL6nP8rS0uX"
	ghClassic = "gh" + "p_" + b62[:36]
	ghPAT     = "github" + "_pat_" + "11ABCDEFG0" + b62[:12] + "_" + b62[:40]
	awsID     = "AK" + "IA" + "IOSFODNN7EXAMPL2"
	slackTok  = "xo" + "xb-" + "123456789012-abcdefABCDEF"
	jwt       = "ey" + "JhbGciOiJIUzI1NiJ9" + "." + "eyJzdWIiOiIxMjM0NTY3ODkwIn0" + "." + "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
	pemKey    = "-----BEGIN RSA " + "PRIVATE KEY-----\nMIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo\n4lgOEePzNm0tRgeLezV6ffAt0gunVTLw\n-----END RSA PRIVATE KEY-----"
)

func TestTokenFormats(t *testing.T) {
	r := NewRedactor()
	tests := []struct {
		name string
		in   string
		want string // "" means unchanged
	}{
		{name: "github classic", in: "token: " + ghClassic + "\n", want: "token: [REDACTED:github-token]\n"},
		{name: "github oauth", in: "gh" + "o_" + b62[:36], want: "[REDACTED:github-token]"},
		{name: "github user to server", in: "gh" + "u_" + b62[:36], want: "[REDACTED:github-token]"},
		{name: "github server to server", in: "gh" + "s_" + b62[:36], want: "[REDACTED:github-token]"},
		{name: "github refresh", in: "gh" + "r_" + b62[:36], want: "[REDACTED:github-token]"},
		{name: "github longer run is masked whole", in: ghClassic + "xyz!", want: "[REDACTED:github-token]!"},
		{name: "github fine grained", in: "Authorization: Bearer " + ghPAT, want: "Authorization: Bearer [REDACTED:github-token]"},
		{name: "github in url", in: "https://x:" + ghClassic + "@github.com/a", want: "https://x:[REDACTED:github-token]@github.com/a"},
		{name: "aws key id", in: "aws_access_key_id = " + awsID + "\n", want: "aws_access_key_id = [REDACTED:aws-access-key-id]\n"},
		{name: "aws session key id", in: "AS" + "IA" + "Y34FZKBOKMUTVV7A,", want: "[REDACTED:aws-access-key-id],"},
		{name: "slack bot", in: "SLACK=" + slackTok, want: "SLACK=[REDACTED:slack-token]"},
		{name: "slack user", in: "xo" + "xp-1234567890-abc", want: "[REDACTED:slack-token]"},
		{name: "jwt", in: "Bearer " + jwt + " ok", want: "Bearer [REDACTED:jwt] ok"},
		{name: "jwt unsigned", in: "t=" + jwt[:strings.LastIndexByte(jwt, '.')+1] + " ", want: "t=[REDACTED:jwt] "},
		{name: "pem rsa", in: "key:\n" + pemKey + "\nafter", want: "key:\n[REDACTED:private-key]\nafter"},
		{name: "pem pkcs8", in: "-----BEGIN " + "PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----", want: "[REDACTED:private-key]"},
		{name: "pem openssh", in: "-----BEGIN OPENSSH " + "PRIVATE KEY-----\nb3Bl\n-----END OPENSSH PRIVATE KEY-----\n", want: "[REDACTED:private-key]\n"},
		{name: "pem encrypted", in: "-----BEGIN ENCRYPTED " + "PRIVATE KEY-----\nMIIF\n-----END ENCRYPTED PRIVATE KEY-----", want: "[REDACTED:private-key]"},
		{name: "pem without end runs to the end", in: "x\n-----BEGIN EC " + "PRIVATE KEY-----\nMHcCAQEE", want: "x\n[REDACTED:private-key]"},
		{name: "two kinds", in: awsID + " " + ghClassic, want: "[REDACTED:aws-access-key-id] [REDACTED:github-token]"},

		// Near misses: left alone.
		{name: "github 35 chars", in: "gh" + "p_" + b62[:35]},
		{name: "github other letter", in: "gh" + "x_" + b62[:36]},
		{name: "github upper prefix", in: "GH" + "P_" + b62[:36]},
		{name: "github glued to a word", in: "x" + ghClassic},
		{name: "github glued to an underscore", in: "_" + ghClassic},
		{name: "github dash in body", in: "gh" + "p_" + b62[:20] + "-" + b62[:16]},
		{name: "github pat short", in: "github" + "_pat_" + b62[:21]},
		{name: "github word", in: "see github.com or ghost_town"},
		{name: "aws 15", in: "AK" + "IA" + "IOSFODNN7EXAMP "},
		{name: "aws 17", in: "AK" + "IA" + "IOSFODNN7EXAMPLE2"},
		{name: "aws lower", in: "AK" + "IA" + "iosfodnn7example"},
		{name: "aws glued before", in: "X" + awsID},
		{name: "aws glued after", in: awsID + "x"},
		{name: "aws other prefix", in: "AK" + "IB" + "IOSFODNN7EXAMPL2"},
		{name: "slack other letter", in: "xo" + "xz-1234567890-abc"},
		{name: "slack short", in: "xo" + "xb-12345678"},
		{name: "slack word", in: "xoxo, xoxb"},
		{name: "slack glued", in: "a" + slackTok},
		{name: "pem public key", in: "-----BEGIN PUBLIC KEY-----\nMIIB\n-----END PUBLIC KEY-----"},
		{name: "pem certificate", in: "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----"},
		{name: "pem lower label", in: "-----BEGIN rsa private key-----\nMIIB"},
		{name: "jwt two segments", in: "ey" + "JhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0"},
		{name: "jwt short header", in: "ey" + "Jhb.eyJzdWIi.abc"},
		{name: "jwt short payload", in: "ey" + "JhbGciOiJIUzI1NiJ9.eyJ.abc"},
		{name: "jwt not json", in: "ey" + "AhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.abc"},
		{name: "jwt glued", in: "x" + jwt},
		{name: "prose", in: "the key is in the -----BEGIN section; eyes, xox, AKA, gh_"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := tt.want
			if want == "" {
				want = tt.in
			}
			got, c := r.RedactCount(tt.in)
			if got != want {
				t.Errorf("Redact(%q)\n = %q\nwant %q", tt.in, got, want)
			}
			if n := strings.Count(want, "[REDACTED:"); sum(c) != n {
				t.Errorf("counts %v, want %d matches", c, n)
			}
			for _, split := range []int{1, 3, 7} {
				var buf bytes.Buffer
				w := r.Writer(&buf)
				for i := 0; i < len(tt.in); i += split {
					w.Write([]byte(tt.in[i:min(len(tt.in), i+split)]))
				}
				w.Close()
				if buf.String() != want {
					t.Errorf("Writer(%q, %d-byte writes) = %q, want %q", tt.in, split, buf.String(), want)
				}
			}
		})
	}
}

func sum(c Counts) int {
	n := 0
	for _, v := range c {
		n += v
	}
	return n
}

// A stream hands on what cannot start a secret at once: an interactive
// prompt is not held back.
func TestWriterHoldsBackOnlyPatternStarts(t *testing.T) {
	r, _ := newTestRedactor(t)
	for _, tt := range []struct{ in, shown string }{
		{"$ ", "$ "},
		{"Password: ", "Password: "},
		{"token=" + canary[:5], "token="},
		{"x " + ghClassic[:10], "x "},
		{"names", "names"},
	} {
		var buf bytes.Buffer
		w := r.Writer(&buf)
		w.Write([]byte(tt.in))
		if buf.String() != tt.shown {
			t.Errorf("after writing %q the stream shows %q, want %q", tt.in, buf.String(), tt.shown)
		}
		w.Close()
		if buf.String() != tt.in {
			t.Errorf("after Close the stream shows %q, want %q", buf.String(), tt.in)
		}
	}
}

// A private key block longer than a stream holds back is still masked
// through its END line, whatever the write size.
func TestWriterLongPrivateKey(t *testing.T) {
	r := NewRedactor()
	body := strings.Repeat("MIIEowIBAAKCAQEAu1SU1LfVLPHCozMx\n", 3*maxHold/32)
	in := "a\n-----BEGIN " + "PRIVATE KEY-----\n" + body + "-----END PRIVATE KEY-----\nz"
	for _, chunk := range []int{1000, 4096, 70000} {
		var buf bytes.Buffer
		w := r.Writer(&buf)
		for i := 0; i < len(in); i += chunk {
			w.Write([]byte(in[i:min(len(in), i+chunk)]))
		}
		w.Close()
		if got := buf.String(); got != "a\n[REDACTED:private-key]\nz" {
			t.Errorf("chunk %d: %d bytes out, starting %q", chunk, len(got), got[:min(len(got), 80)])
		}
	}
}

func TestValueEncodings(t *testing.T) {
	r, _ := newTestRedactor(t)
	for _, in := range encodings(canary) {
		if got := r.Redact(in); strings.Contains(got, canary) || !strings.Contains(got, "[REDACTED:tok]") {
			t.Errorf("Redact(%q) = %q", in, got)
		}
	}
}

// encodings returns v in the forms a Redactor knows.
func encodings(v string) []string {
	return []string{
		v, url.QueryEscape(v + "&"), hex.EncodeToString([]byte(v)),
		base64.StdEncoding.EncodeToString([]byte(v)),
		base64.StdEncoding.EncodeToString([]byte(v + "\n")),          // echo | base64
		base64.StdEncoding.EncodeToString([]byte("user:" + v)),       // basic auth
		base64.RawURLEncoding.EncodeToString([]byte("ab" + v + "c")), // offset 2
	}
}
