package policy

import (
	"context"
	"testing"
)

// TestDeclared: a decision names the manifest entry the request matched,
// whichever layer decided: the grant or a run policy refusing it does not
// hide which declared entry the plugin reached for.
func TestDeclared(t *testing.T) {
	for _, tc := range []struct {
		op, run, rule, declared string
	}{
		{"net.request GET https://api.example.invalid/repos/acme/issues", "", "plugin:permissions.network.requests[0]", "plugin:permissions.network.requests[0].paths[0]"},
		// The run layer refuses it; the entry it matched is still named.
		{"net.request POST https://api.example.invalid/repos/acme/issues/42/comments", "run-readonly.yaml", "", "plugin:permissions.network.requests[1].paths[0]"},
		// The second path template of the entry.
		{"net.request GET https://api.example.invalid/repos/acme/issues/7", "", "plugin:permissions.network.requests[0]", "plugin:permissions.network.requests[0].paths[1]"},
		// The grant narrowed the write glob away.
		{"fs.write .agent-output/other.md", "", "", "plugin:permissions.filesystem.write[0]"},
		{"fs.read docs/intro.md", "", "plugin:permissions.filesystem.read[0]", "plugin:permissions.filesystem.read[0]"},
		{"secret.use issue_api_token https://api.example.invalid", "", "plugin:permissions.secrets[0]", "plugin:permissions.secrets[0]"},
		{"external.write issues.comment acme/demo#42", "run-readonly.yaml", "run:permissions.external_writes.default", "plugin:permissions.external_writes.default"},
		// Nothing declared matches: nothing is named.
		{"net.request GET https://api.example.invalid/repos/acme/pulls", "", "", ""},
		{"fs.read src/main.go", "", "", ""},
	} {
		t.Run(tc.op+"/"+tc.run, func(t *testing.T) {
			s := issueHelperSet(t, tc.run)
			req, err := ParseOp(tc.op, nil)
			if err != nil {
				t.Fatal(err)
			}
			d := s.Decide(context.Background(), req)
			if d.Rule != tc.rule || d.Declared != tc.declared {
				t.Errorf("Decide(%s) rule=%q declared=%q; want rule=%q declared=%q", tc.op, d.Rule, d.Declared, tc.rule, tc.declared)
			}
			if e := s.Explain(context.Background(), req); e.Declared != d.Declared {
				t.Errorf("Explain declared=%q, Decide %q", e.Declared, d.Declared)
			}
		})
	}
}
