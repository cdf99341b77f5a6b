package settings

import (
	"strings"
	"testing"

	"github.com/norma-run/norma/capability"
)

// TestEgressSection: the user's egress section becomes the detector's
// rules (origins normalized, sources kept); a workspace may not loosen
// it; every mistake is reported at its file:line:col.
func TestEgressSection(t *testing.T) {
	user := `egress:
  sensitive: ask
  allow:
    - to: HTTPS://API.GitHub.com
      detector: github-token
    - to: tool:mcp__srv__send
      secret: deploy_token
`
	f, err := Parse("user.yaml", []byte(user), ScopeUser, testWorkspace)
	if err != nil {
		t.Fatal(err)
	}
	s := Merge([]*File{f})
	r := s.Egress.Rules()
	if r.Secret != capability.Deny || r.Sensitive != capability.ApprovalRequired || len(r.Allow) != 2 {
		t.Fatalf("rules = %+v", r)
	}
	if a := r.Allow[0]; a.To != "https://api.github.com:443" || a.Detector != "github-token" || a.Source != "user.yaml:4:7 (user)" && !strings.HasPrefix(a.Source, "user.yaml:4") {
		t.Errorf("allow[0] = %+v", a)
	}
	if (*Egress)(nil).Rules() != nil {
		t.Error("no section: want nil rules (deny every finding)")
	}
	for _, scope := range []Scope{ScopeWorkspace, ScopeLocal} {
		_, err := Parse("ws.yaml", []byte(user), scope, testWorkspace)
		if err == nil || !strings.Contains(err.Error(), "ws.yaml:2:14") || !strings.Contains(err.Error(), "ws.yaml:4:9") {
			t.Errorf("scope %s: err = %v, want refusals at 2:14 and 4:9", scope, err)
		}
	}
	if _, err := Parse("ws.yaml", []byte("egress:\n  secret: deny\n"), ScopeWorkspace, testWorkspace); err != nil {
		t.Errorf("a workspace's deny: %v", err)
	}
	for _, tc := range []struct{ in, at, want string }{
		{"egress:\n  allow:\n    - to: https://x.example\n      detector: gihub-token\n", "bad.yaml:4:17", "unknown detector \"gihub-token\""},
		{"egress:\n  allow:\n    - to: https://x.example\n      detector: jwt\n      secret: a\n", "bad.yaml:3:9", "name exactly one of detector, secret or sha256"},
		{"egress:\n  allow:\n    - to: x.example/path\n      detector: jwt\n", "bad.yaml:3:11", "\"x.example/path\" is not an origin"},
		{"egress:\n  allow:\n    - to: tool:Bash\n      detector: jwt\n", "bad.yaml:3:11", "\"Bash\" is not a tool that sends"},
		{"egress:\n  allow:\n    - to: https://x.example\n      secret: Bad-Name\n", "bad.yaml:4:15", "\"Bad-Name\" is not a secret's name"},
		{"egress:\n  secret: allow\n", "bad.yaml:2:11", "egress.secret"},
		{"egress:\n  allow:\n    - to: https://x.example\n      sha256: abc\n", "bad.yaml:4:15", "sha256"},
		{"egress:\n  alow: []\n", "bad.yaml:2:3", "alow"},
	} {
		_, err := Parse("bad.yaml", []byte(tc.in), ScopeUser, testWorkspace)
		if err == nil || !strings.HasPrefix(err.Error(), tc.at+": ") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q) = %v, want %s: …%s…", tc.in, err, tc.at, tc.want)
		}
	}
}
