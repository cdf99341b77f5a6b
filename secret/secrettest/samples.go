package secrettest

import (
	"encoding/base64"
	"net/url"
	"strings"
)

const b62 = "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8S9t0U1v2W3x4Y5z6"

// hex64 is 64 made-up lower-case hex digits.
const hex64 = "4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318"

// Sample is one input with the detector that must name it.
type Sample struct {
	Name     string
	Detector string // "" for a benign twin
	Text     string
}

// Tokens are one token of each format, by detector (token kind).
func Tokens() []Sample {
	return []Sample{
		{"github classic", "github-token", "gh" + "p_" + b62[:36]},
		{"github fine-grained", "github-token", "github" + "_pat_" + "11ABCDEFG0" + b62[:12] + "_" + b62[:40]},
		{"aws key id", "aws-access-key-id", "AK" + "IA" + "Q3EGRT5ZX7WNB4PK"},
		{"slack bot", "slack-token", "xo" + "xb-" + "123456789012-abcdefABCDEF"},
		{"slack app", "slack-token", "xa" + "pp-" + "1-A0123456789-1234567890123-abcdef"},
		{"slack webhook", "slack-webhook", "https://hooks." + "slack.com/services/" + "T0123ABCD/B0123ABCD/" + b62[:24]},
		{"jwt", "jwt", "ey" + "JhbGciOiJIUzI1NiJ9" + "." + "eyJzdWIiOiIxMjM0NTY3ODkwIn0" + "." + "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"},
		{"pem rsa", "private-key", "-----BEGIN RSA " + "PRIVATE KEY-----\nMIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo\n-----END RSA PRIVATE KEY-----"},
		{"openssh", "private-key", "-----BEGIN OPENSSH " + "PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n-----END OPENSSH PRIVATE KEY-----"},
		{"pgp", "private-key", "-----BEGIN PGP " + "PRIVATE KEY BLOCK-----\n\nlQOYBF0AAAABCADsLGWm0LZq\n-----END PGP PRIVATE KEY BLOCK-----"},
		{"anthropic", "anthropic-key", "sk-" + "ant-api03-" + b62[:40] + "-AA"},
		{"openai project", "openai-key", "sk-" + "proj-" + b62[:48]},
		{"stripe live", "stripe-key", "sk" + "_live_" + b62[:24]},
		{"google api key", "google-api-key", "AI" + "za" + "Sy" + b62[:33]},
		{"gitlab", "gitlab-token", "gl" + "pat-" + b62[:20]},
		{"npm", "npm-token", "np" + "m_" + b62[:36]},
		{"huggingface", "huggingface-token", "hf" + "_" + b62[:34]},
		{"digitalocean", "digitalocean-token", "do" + "p_v1_" + hex64},
		{"sendgrid", "sendgrid-key", "SG" + "." + b62[:22] + "." + b62[:43]},
		{"twilio", "twilio-key", "S" + "K" + hex64[:32]},
		{"telegram", "telegram-bot-token", "1234567890" + ":" + "AAH" + b62[:32]},
		{"discord webhook", "discord-webhook", "https://discord." + "com/api/webhooks/" + "123456789012345678/" + b62[:40]},
		{"age", "age-secret-key", "AGE-SECRET-" + "KEY-1" + strings.Repeat("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 2)[:58]},
	}
}

// Identifiers are sensitive identifiers and key material the checked
// detectors find.
func Identifiers() []Sample {
	return []Sample{
		{"visa", "card-number", "4111 1111 1111 1111"},
		{"mastercard", "card-number", "5555-5555-5555-4444"},
		{"amex", "card-number", "378282246310005"},
		{"iban gb", "iban", "GB82 WEST 1234 5698 7654 32"},
		{"iban de", "iban", "DE89370400440532013000"},
		{"seed phrase", "bip39-seed-phrase", "abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon about"},
		{"seed 24", "bip39-seed-phrase", "legal winner thank year wave sausage worth useful legal winner thank year wave sausage worth useful legal winner thank year wave sausage worth title"},
		{"wif", "wif-private-key", "5HueCGU8rMjxEXxiPuD5BDku4MkFqeZyd4dZ1jvhTVqvbTLvyTJ"},
		{"wif compressed", "wif-private-key", "KwdMAjGmerYanjeui5SHS7JkmpZvVipYvB2LJGU1ZxJwYvP98617"},
		{"hex key", "hex-private-key", "PRIVATE_KEY=0x" + hex64},
		{"keyed entropy", "high-entropy-credential", `{"client_secret": "q8Zr2LxV7pK3mN9tW4yB6cF1hJ5d"}`},
	}
}

// Encoded returns text hidden by each normalization the detector undoes,
// by the name of its layers.
func Encoded(text string) []Sample {
	b64 := base64.StdEncoding.EncodeToString([]byte(text))
	var split strings.Builder
	for i, r := range text {
		if i > 0 {
			split.WriteByte('-')
		}
		split.WriteRune(r)
	}
	var zw strings.Builder
	for _, r := range text {
		zw.WriteRune(r)
		zw.WriteString("\u200b")
	}
	var ent strings.Builder
	for _, r := range text {
		ent.WriteString("\\u00")
		ent.WriteString(strings.ToLower(string("0123456789ABCDEF"[r>>4])))
		ent.WriteString(strings.ToLower(string("0123456789ABCDEF"[r&15])))
	}
	return []Sample{
		{Name: "url", Text: "q=" + url.QueryEscape(text)},
		{Name: "url twice", Text: "q=" + url.QueryEscape(url.QueryEscape(text))},
		{Name: "url thrice", Text: url.QueryEscape(url.QueryEscape(percentAll(text)))},
		{Name: "base64", Text: "data=" + b64},
		{Name: "base64url of url", Text: base64.RawURLEncoding.EncodeToString([]byte(url.QueryEscape(text)))},
		{Name: "hex", Text: hexOf(text)},
		{Name: "split", Text: split.String()},
		{Name: "zero-width", Text: zw.String()},
		{Name: "json escapes", Text: `{"x":"` + ent.String() + `"}`},
		{Name: "fullwidth", Text: fullwidth(text)},
	}
}

// percentAll percent-encodes every byte of s.
func percentAll(s string) string {
	const d = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		b.WriteByte('%')
		b.WriteByte(d[s[i]>>4])
		b.WriteByte(d[s[i]&15])
	}
	return b.String()
}

func hexOf(s string) string {
	const d = "0123456789abcdef"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		b.WriteByte(d[s[i]>>4])
		b.WriteByte(d[s[i]&15])
	}
	return b.String()
}

// fullwidth maps ASCII letters and digits to their fullwidth forms.
func fullwidth(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r > ' ' && r < 0x7f {
			r += 0xFF01 - '!'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Benign are the twins that must pass: text that mentions formats, looks
// random, or holds long digit and hex runs, without a credential or an
// identifier in it.
func Benign() []Sample {
	return []Sample{
		{Name: "documentation of formats", Text: "GitHub personal access tokens start with ghp_ followed by 36 characters, and fine-grained ones with github_pat_. " +
			"AWS access key ids look like AKIAIOSFODNN7EXAMPLE (secret wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY). Set OPENAI_API_KEY=<your key> or " +
			"export STRIPE_KEY=sk_live_... before running; a JWT is three base64url segments joined by dots (eyJ...). Private keys begin with -----BEGIN."},
		{Name: "expired token error", Text: `{"error":"invalid_token","error_description":"The access token expired at 2026-05-01T10:00:00Z; request a new one","token_type":"Bearer","expires_in":0}`},
		{Name: "uuid in url", Text: "https://api.example.com/v1/items/550e8400-e29b-41d4-a716-446655440000?expand=true&session=550e8400-e29b-41d4-a716-446655440001"},
		{Name: "git status", Text: "On branch main\nYour branch is up to date with 'origin/main'.\n\nChanges not staged for commit:\n  (use \"git add <file>...\" to update what will be committed)\n\tmodified:   secret/redactor.go\n\tmodified:   broker/proxy.go\n\nUntracked files:\n\tsecret/detect.go\n\nno changes added to commit (use \"git add\" and/or \"git commit -a\")\n"},
		{Name: "git log", Text: "commit 3c32343e8f0b1a7d2c9e4f5a6b7c8d9e0f1a2b3c\nAuthor: Dev <dev@example.com>\nDate:   Mon Dec 7 21:50:33 2026 +0000\n\n    manifest: Filesystem.DenyWrite\n"},
		{Name: "checksums", Text: "sha256:2f5eed53a4727b4bf8880d8f3f199efc90e58503646d9ff8eff3a2ed3b24dbda  english.txt\n"},
		{Name: "numbers", Text: `{"id": 1234567890123456, "ts": 1733608233000, "order": "4111-2222-3333", "phone": "+44 20 7946 0958", "isbn": "978-0-306-40615-7"}`},
		{Name: "prose", Text: "The quick brown fox jumps over the lazy dog. Able about above absent absorb abstract absurd abuse access accident account accuse."},
		{Name: "password field empty", Text: `password=&username=alice&token_type=bearer&grant_type=authorization_code`},
	}
}

// Image returns a data URL of a PNG-like binary: base64 that decodes to
// bytes, with no credential in them.
func Image() string {
	b := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x20\x00\x00\x00\x20\x08\x06\x00\x00\x00szz\xf4")
	for i := range 2048 {
		b = append(b, byte(i*7+i/13))
	}
	return "data:image/png;base64," + base64.StdEncoding.EncodeToString(b)
}
