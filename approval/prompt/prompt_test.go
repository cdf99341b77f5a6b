package prompt_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/norma-run/norma/approval"
	"github.com/norma-run/norma/approval/prompt"
)

func TestApproveAccessible(t *testing.T) {
	now := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	rec := approval.Record{Request: approval.Request{
		ID: "apr_1", Tool: "issues.comment", Plugin: "com.example.issue-helper", PluginVersion: "1.4.0",
		Effect: "external_write", Target: "example-org/demo-repo#42", Preview: "Comment: LGTM",
		Credential: "issue_api_token", Scope: approval.ScopeOnce, Expires: now.Add(5 * time.Minute),
	}}
	tests := []struct {
		name  string
		input string
		want  bool
	}{
		{"yes", "y\n", true},
		{"YES word", "yes\n", true},
		{"no", "n\n", false},
		{"default is no", "\n", false},
		{"end of input", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			p, err := prompt.New(strings.NewReader(tt.input), &out, &prompt.Options{Accessible: true, Who: "alice", Now: func() time.Time { return now }})
			if err != nil {
				t.Fatal(err)
			}
			v, err := p.Approve(t.Context(), rec)
			if err != nil {
				t.Fatalf("Approve(%q) err = %v", tt.input, err)
			}
			if v.Approve != tt.want || v.By != "terminal:alice" {
				t.Errorf("Approve(%q) = %+v, want Approve %v by terminal:alice", tt.input, v, tt.want)
			}
			for _, s := range []string{"external_write", "example-org/demo-repo#42", "Comment: LGTM", "issue_api_token", "in 5m0s", "[y/N]"} {
				if !strings.Contains(out.String(), s) {
					t.Errorf("prompt output lacks %q:\n%s", s, out.String())
				}
			}
		})
	}
}
