package secret

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/norma-run/norma/secret/secrettest"
)

func detectors(fs []Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Detector)
	}
	return out
}

// TestDetectTokens: one token of each format is found as written, inside
// text, and through every normalization; the finding names the detector,
// and nothing in it holds the value.
func TestDetectTokens(t *testing.T) {
	r := NewRedactor()
	for _, s := range slices.Concat(secrettest.Tokens(), secrettest.Identifiers()) {
		t.Run(s.Name, func(t *testing.T) {
			for _, in := range []string{s.Text, "payload: " + s.Text + "\n"} {
				fs := r.DetectString(in)
				if !slices.Contains(detectors(fs), s.Detector) {
					t.Fatalf("Detect(%q) = %v, want %s", in, fs, s.Detector)
				}
				for _, f := range fs {
					if strings.Contains(f.String(), s.Text) {
						t.Errorf("finding %q holds the value", f)
					}
				}
			}
			if s.Detector == DetectorKeyedEntropy || s.Detector == DetectorSeedPhrase || s.Detector == DetectorHexKey {
				return // multi-line or context-bound: encoded whole only below
			}
			for _, e := range secrettest.Encoded(s.Text) {
				if s.Detector == DetectorCardNumber || s.Detector == DetectorIBAN || s.Detector == DetectorWIF || s.Detector == KindPrivateKey {
					if e.Name == "split" { // a key block's dashes before its first letter are cut away
						continue // the split view is matched against values and token formats only
					}
				}
				if fs := r.DetectString(e.Text); len(fs) == 0 {
					t.Errorf("%s: Detect(%q) found nothing", e.Name, e.Text)
				}
			}
		})
	}
}

// TestDetectKnownValues: a vault value and a provider key are found in
// every form, the finding naming the secret.
func TestDetectKnownValues(t *testing.T) {
	r, _ := newTestRedactor(t)
	if err := r.AddValue(KindProviderKey, NewValue([]byte("prov-Key-9f8e7d6c5b4a"))); err != nil {
		t.Fatal(err)
	}
	for _, v := range []struct{ name, value string }{{"tok", canary}, {KindProviderKey, "prov-Key-9f8e7d6c5b4a"}} {
		for _, e := range append(secrettest.Encoded(v.value), secrettest.Sample{Name: "raw", Text: "x " + v.value}) {
			// As written, and as a tool's input holds a JSON body holding it.
			j, _ := json.Marshal(map[string]string{"url": "https://x.example/", "body": `{"note": "` + e.Text + `"}`})
			for _, in := range []string{e.Text, string(j)} {
				fs := r.DetectString(in)
				if len(fs) == 0 || fs[0].Detector != DetectorKnownValue || fs[0].Secret != v.name {
					t.Errorf("%s %s: Detect(%q) = %v, want known-value %s", v.name, e.Name, in, fs, v.name)
				}
			}
		}
	}
	fs := r.DetectString("Bearer " + canary)
	sum := sha256.Sum256([]byte(canary))
	if len(fs) != 1 || !fs[0].ValueSum(hex.EncodeToString(sum[:])) || fs[0].ValueSum(strings.Repeat("0", 64)) {
		t.Errorf("ValueSum of %v: want the value's sum only", fs)
	}
}

// TestDetectBenign: the twins pass — documentation that names formats,
// an expired-token error, a base64 image, a UUID in a URL, git output,
// long digit runs that are not cards, prose made of seed words.
func TestDetectBenign(t *testing.T) {
	r, _ := newTestRedactor(t)
	for _, s := range append(secrettest.Benign(), secrettest.Sample{Name: "image", Text: secrettest.Image()}) {
		j, _ := json.Marshal(map[string]string{"body": s.Text}) // as a tool's input or a JSON body holds it
		for _, in := range []string{s.Text, string(j), url.QueryEscape(s.Text)} {
			if fs := r.DetectString(in); len(fs) != 0 {
				t.Errorf("%s: Detect(%q) = %v, want nothing", s.Name, in, fs)
			}
		}
	}
}

// TestDetectNearMisses: each detector's own negative controls.
func TestDetectNearMisses(t *testing.T) {
	r := NewRedactor()
	for _, in := range []string{
		"4111 1111 1111 1112",                                 // Luhn fails
		"1111 1111 1111 1117",                                 // no issuer
		"GB82 WEST 1234 5698 7654 33",                         // check digits fail
		"GB82 WEST 1234 5698 7654 3",                          // wrong length
		strings.Repeat("abandon ", 12),                        // checksum fails
		"5HueCGU8rMjxEXxiPuD5BDku4MkFqeZyd4dZ1jvhTVqvbTLvyTK", // checksum fails
		"sha256=4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318", // a digest, no key name
		"api_key=" + strings.Repeat("a", 30),                                      // low entropy
		"api_key=correcthorsebatterystaplewrong",                                  // one kind of character
		"sk-learn-documentation-for-the-estimators",                               // no digit
		"AIza" + strings.Repeat("b", 36),                                          // too long
	} {
		if fs := r.DetectString(in); len(fs) != 0 {
			t.Errorf("Detect(%q) = %v, want nothing", in, fs)
		}
	}
}

// TestRedactNewFamilies: the redactor masks the new formats too (one
// engine).
func TestRedactNewFamilies(t *testing.T) {
	r := NewRedactor()
	for _, s := range secrettest.Tokens() {
		if got := r.Redact("x " + s.Text + " y"); strings.Contains(got, s.Text) || !strings.Contains(got, "[REDACTED:") {
			t.Errorf("%s: Redact = %q", s.Name, got)
		}
	}
}

func TestBIP39List(t *testing.T) {
	sum := sha256.Sum256([]byte(bip39English))
	// The SHA-256 of bip-0039/english.txt as published with BIP-39.
	if got := hex.EncodeToString(sum[:]); got != "2f5eed53a4727b4bf8880d8f3f199efc90e58503646d9ff8eff3a2ed3b24dbda" {
		t.Errorf("bip39_english.txt sha256 = %s", got)
	}
	if len(bip39Words()) != 2048 {
		t.Errorf("%d words, want 2048", len(bip39Words()))
	}
}

func TestNormalizeViews(t *testing.T) {
	for _, tt := range []struct{ name, in, view, want string }{
		{"url", "a%2Fb%zz", "url", "a/b%zz"},
		{"url: '+' before the first escape", "-----BEGIN+RSA%0A", "url", "-----BEGIN RSA\n"},
		{"url: '+' alone", "a+b", "url", "a b"},
		{"escape", `\u0067h\x70\n&#95;&#x41;`, "escape", "ghp\n_A"},
		{"zero width", "g\u200bh\u200dp", "unicode", "ghp"},
		{"look-alike", "ѕk-аnt", "unicode", "sk-ant"},
		{"fullwidth", "ｇｈｐ", "unicode", "ghp"},
		{"split", "a-b-c-d-e", "split", "abcde"},
		{"split keeps the value's own delimiters", "x-o-x-b---1-2-3-4 s-:-/-/-h", "split", "xoxb-1234s://h"},
		{"split inside JSON quotes", `{"note": "V-A-U-L-T---C-A-N"}`, "split", `note": "VAULT-CAN`},
		{"hex", "68656c6c6f2c20776f726c64", "hex", "hello, world"},
		{"base64", "aGVsbG8sIHdvcmxkIGFnYWlu", "base64", "hello, world again"},
	} {
		if got := string(Normalize([]byte(tt.in))[tt.view]); got != tt.want {
			t.Errorf("%s: Normalize(%q)[%s] = %q, want %q", tt.name, tt.in, tt.view, got, tt.want)
		}
	}
}

// TestCredentialASCII: the keyed detector's one-pass check agrees with
// CredentialKey on ASCII names.
func TestCredentialASCII(t *testing.T) {
	for _, n := range []string{"api_key", "API-KEY", "X-Auth-Token", "password", "PWD", "client_secret", "sig", "Session", "jwt", "cookie", "creds",
		"name", "id", "content", "role", "monkey", "pas", "tok", "kEy", "", "SeSsIoN_iD"} {
		if got, want := credentialASCII([]byte(n)), CredentialKey(n); got != want {
			t.Errorf("credentialASCII(%q) = %v, CredentialKey = %v", n, got, want)
		}
	}
}

// TestAddEnvironment: the credentials of an environment become known
// values named after their variable; a short value, a path, a plain word
// and a variable whose name is not a credential's do not.
func TestAddEnvironment(t *testing.T) {
	r := NewRedactor()
	gh := secrettest.Tokens()[0].Text
	n := r.AddEnvironment([]string{"GITHUB_TOKEN=" + gh, "AWS_SECRET_ACCESS_KEY=q8Zr2LxV7pK3mN9tW4yB6cF1hJ5dA0sE", "PATH=/usr/bin:/bin",
		"SSH_AUTH_SOCK=/tmp/ssh-Xq8Zr2LxV7/agent.1234", "DB_PASSWORD=short", "EDITOR_KEYMAP=emacsemacsemacs", "HOME=/root", "X=" + gh, "BROKEN"})
	if n != 2 {
		t.Fatalf("added %d, want 2", n)
	}
	fs := r.DetectString("q=" + url.QueryEscape("q8Zr2LxV7pK3mN9tW4yB6cF1hJ5dA0sE"))
	if len(fs) != 1 || fs[0].Secret != "env_aws_secret_access_key" {
		t.Errorf("findings %v", fs)
	}
	if got := r.Redact("x " + gh); got != "x [REDACTED:env_github_token]" {
		t.Errorf("Redact = %q", got)
	}
}
