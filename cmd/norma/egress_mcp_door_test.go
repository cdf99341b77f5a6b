package main

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/norma-run/norma/sandbox/sandboxtest"
	"github.com/norma-run/norma/secret/secrettest"
)

// TestDoorEgressMCPProxy: an MCP client calls, through `norma mcp proxy`,
// a plugin tool that sends data (testdata/egressserver's send, to a
// loopback HTTPS origin the plugin may reach). Arguments carrying a vault
// value (as written or encoded), a token of each family or a card number
// are refused with SECRET_EGRESS or SENSITIVE_DATA_EGRESS before the tool
// runs: the server receives no connection and no byte. The benign twins
// are sent.
func TestDoorEgressMCPProxy(t *testing.T) {
	sandboxtest.Require(t)
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("no /usr/bin/python3")
	}
	web := newCountedTLS(t)
	env := []string{"SSL_CERT_FILE=" + web.caFile, "XDG_CONFIG_HOME=" + t.TempDir()}
	home, ws := egressPlugin(t, web.origin, env)
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v) // the proxy inherits them
	}
	s := runEnv{home: home, ws: ws}.proxyClient(t, nil, "", "com.example.egress")
	for _, c := range egressCases() {
		text, reason, isErr := callTool(t, s, "send", map[string]any{"url": web.origin + "/page", "body": `{"note": ` + fmt.Sprintf("%q", c.Text) + `}`})
		want := "SECRET_EGRESS"
		if c.Detector == "card-number" || c.Detector == "iban" {
			want = "SENSITIVE_DATA_EGRESS"
		}
		if reason != want || !isErr {
			t.Errorf("%s: reason %q error %v (%q), want %s", c.Name, reason, isErr, text, want)
		}
		if len(c.Text) > 12 && strings.Contains(text, c.Text) {
			t.Errorf("%s: the answer holds the value: %q", c.Name, text)
		}
	}
	if b, n := web.bytes.Load(), web.conns.Load(); b != 0 || n != 0 {
		t.Fatalf("the server received %d bytes on %d connections: %q", b, n, web.got)
	}
	for _, b := range append(secrettest.Benign(), secrettest.Sample{Name: "image", Text: secrettest.Image()}) {
		text, reason, isErr := callTool(t, s, "send", map[string]any{"url": web.origin + "/page", "body": b.Text})
		if isErr || !strings.Contains(text, "200 received") {
			t.Errorf("benign %s: reason %q error %v: %q", b.Name, reason, isErr, text)
		}
	}
	if web.conns.Load() == 0 {
		t.Fatal("the benign calls never reached the server")
	}
}
