package runtime_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/runtime"
)

// TestEnvironCredentials: the credentials of Options.Environ are known
// values of the runtime's redactor (norma run gives its own environment,
// the hooks the agent's): a WebFetch carrying one is refused
// SECRET_EGRESS at the gate, naming the variable, never the value; without the
// variable the same URL is decided by its destination alone.
func TestEnvironCredentials(t *testing.T) {
	const canary = "Zq8vN3kLp1Xr7Wt5Ys2Bm9Hd4Gf6Jc0"
	dir := newWorkspace(t, webPolicy)
	for _, tc := range []struct {
		name    string
		environ []string
		reason  capability.Reason
	}{
		{"with the variable", []string{"DEPLOY_TOKEN=" + canary, "PATH=/usr/bin"}, capability.ReasonSecretEgress},
		{"without", []string{"PATH=/usr/bin"}, capability.ReasonAllowed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt, err := runtime.OpenExplain(t.Context(), runtime.Options{Dir: dir, Audit: nopSink{}, Environ: tc.environ})
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close()
			in, _ := json.Marshal(map[string]string{"url": "https://docs.example.com/guide?q=" + canary})
			e, err := rt.Explain(t.Context(), "WebFetch", in)
			if err != nil {
				t.Fatal(err)
			}
			if e.Decision.Reason != tc.reason {
				t.Fatalf("WebFetch with the value: %s (%s), want %s", e.Decision.Reason, e.Decision.Rule, tc.reason)
			}
			if strings.Contains(e.Decision.Rule, canary) {
				t.Errorf("the decision names the value: %s", e.Decision.Rule)
			}
		})
	}
}
