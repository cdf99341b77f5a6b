package broker

import (
	"bytes"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/secret"
	"github.com/norma-run/norma/secret/secrettest"
)

// otherValue is a vault value the plugin may not send anywhere.
const otherValue = "other-Vault-4e7a1c9b3d"

// TestContentEgress: through the CONNECT tunnel the broker terminates, a
// request whose URL, header or body carries a vault value, a token of
// each family, an encoded variant or a card number is refused before
// anything is sent (the upstream receives not one more byte), the
// denial naming the detector and never the value; the benign twins and
// the broker's own injected secret pass.
func TestContentEgress(t *testing.T) {
	e := newEnv(t, envOptions{})
	if err := e.red.AddValue("other_secret", secret.NewValue([]byte(otherValue))); err != nil {
		t.Fatal(err)
	}
	// Warm: the tunnel and the upstream connection exist.
	if r := e.get(e.client, e.api.origin+"/repos/acme/issues"); r.status != http.StatusOK {
		t.Fatalf("warm-up: %d %s", r.status, r.body)
	}
	before, n := e.api.bytesIn.Load(), e.api.count()
	post := func(path, ct string, body string, hdr ...string) response {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPut, e.api.origin+path, strings.NewReader(body))
		req.Header.Set("Content-Type", ct)
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		return e.do(e.client, req)
	}
	refused := func(name string, r response, want capability.Reason, value string) {
		t.Helper()
		if r.status != http.StatusForbidden || r.reason() != want {
			t.Errorf("%s: %d %s, want 403 %s", name, r.status, r.body, want)
		}
		if value != "" && bytes.Contains(r.body, []byte(value)) {
			t.Errorf("%s: the denial holds the value: %s", name, r.body)
		}
	}
	refused("vault value in the query", e.get(e.client, e.api.origin+"/repos/acme/issues?q="+otherValue), capability.ReasonSecretEgress, otherValue)
	refused("vault value in a header", e.get(e.client, e.api.origin+"/repos/acme/issues", "X-Note", otherValue), capability.ReasonSecretEgress, otherValue)
	for _, enc := range secrettest.Encoded(otherValue) {
		refused("vault value "+enc.Name, post("/upload", "text/plain", enc.Text), capability.ReasonSecretEgress, otherValue)
	}
	for _, s := range secrettest.Tokens() {
		refused(s.Name+" in a JSON body", post("/upload", "application/json", `{"note":`+quote(s.Text)+`}`), capability.ReasonSecretEgress, s.Text)
		if !strings.ContainsAny(s.Text, "\n /") { // a '/' makes another path, which the policy refuses first
			refused(s.Name+" in the path", e.get(e.client, e.api.origin+"/repos/"+url.PathEscape(s.Text)+"/issues"), capability.ReasonSecretEgress, s.Text)
		}
	}
	for _, s := range secrettest.Identifiers() {
		want := capability.ReasonSensitiveDataEgress
		if s.Detector == secret.DetectorWIF || s.Detector == secret.DetectorHexKey || s.Detector == secret.DetectorKeyedEntropy {
			want = capability.ReasonSecretEgress
		}
		refused(s.Name+" in a form body", post("/upload", "application/x-www-form-urlencoded", "v="+url.QueryEscape(s.Text)), want, s.Text)
	}
	if got := e.api.bytesIn.Load(); got != before || e.api.count() != n {
		t.Fatalf("the upstream received %d more bytes, %d more requests", got-before, e.api.count()-n)
	}
	if ev := e.lastEvent(); ev.Reason != string(capability.ReasonSensitiveDataEgress) && ev.Reason != string(capability.ReasonSecretEgress) {
		t.Errorf("audit reason %s", ev.Reason)
	}
	// The benign twins, and the broker's own secret injected toward its
	// purpose (the plugin sent the placeholder), pass.
	for _, s := range append(secrettest.Benign(), secrettest.Sample{Name: "image", Text: secrettest.Image()}) {
		if r := post("/upload", "text/plain", s.Text, "Authorization", "Bearer "+e.placeholder()); r.status != http.StatusOK {
			t.Errorf("%s: %d %s", s.Name, r.status, r.body)
		}
	}
	if got := e.api.last().Header.Get("Authorization"); got != "Bearer "+canary {
		t.Errorf("injected Authorization = %q", got)
	}
}

// TestContentEgressRules: a class made ask goes to the approver; a value
// allowed toward the origin passes there.
func TestContentEgressRules(t *testing.T) {
	gh := secrettest.Tokens()[0].Text
	e := newEnv(t, envOptions{})
	rules := &secret.EgressRules{Sensitive: capability.ApprovalRequired, Allow: []secret.EgressAllow{{To: e.api.origin, Detector: secret.KindGitHubToken}}}
	e.red.SetEgress(rules)
	if r := e.get(e.client, e.api.origin+"/repos/acme/issues?t="+gh); r.status != http.StatusOK {
		t.Errorf("allowed token: %d %s", r.status, r.body)
	}
	// No approver: the ask is refused, as any approval_required request.
	if r := e.get(e.client, e.api.origin+"/repos/acme/issues?card=4111111111111111"); r.status != http.StatusForbidden || r.reason() != capability.ReasonSensitiveDataEgress {
		t.Errorf("card, ask without an approver: %d %s", r.status, r.body)
	}
}

func quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '\n':
			b.WriteString(`\n`)
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
