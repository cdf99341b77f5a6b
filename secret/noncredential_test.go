package secret

import (
	"testing"

	"github.com/norma-run/norma/capability"
)

// TestNonCredentialNames: a random value under a name that holds a
// credential's word but is made to be sent (Idempotency-Key, which the
// demo's plugin sends with every comment; a WebSocket key) is not a
// keyed-entropy finding, in any case; the same value under api_key is,
// and a known token format under Idempotency-Key still is.
func TestNonCredentialNames(t *testing.T) {
	r := NewRedactor()
	const v = "nik_9f8Qz3LmXw2Rt7Kp4Vb6Yc1Nd5Hs0Ja"
	for _, in := range []string{
		"Idempotency-Key: " + v + "\n",
		"idempotency-key: " + v + "\n",
		"X-Idempotency-Key: " + v + "\n",
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\n",
		`{"idempotency_key":"` + v + `"}`,
	} {
		if d, _ := r.CheckEgress([]string{"https://api.example.com:443"}, []byte("https://api.example.com/x"), []byte(in), nil); d.Mode != capability.Allow {
			t.Errorf("%q: %v %s, want allowed", in, d.Mode, d.Reason)
		}
	}
	for _, in := range []string{
		"Api-Key: " + v + "\n",
		"Idempotency-Key: ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3z5A" + "\n",
	} {
		if d, _ := r.CheckEgress([]string{"https://api.example.com:443"}, []byte("https://api.example.com/x"), []byte(in), nil); d.Mode == capability.Allow {
			t.Errorf("%q: allowed, want a finding", in)
		}
	}
	if CredentialKey("Idempotency-Key") || !CredentialKey("Idempotency-Keys-Secret") {
		t.Error("CredentialKey disagrees with the keyed detector on the names it skips")
	}
}
