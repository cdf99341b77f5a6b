package settings

import (
	"strings"
	"testing"
)

// TestSampling: mcp.sampling is read from the user's, --settings and
// managed files (the highest wins), needs a budget when allowed, and is
// refused in a workspace's files (see testdata/invalid/mcp-sampling-*).
func TestSampling(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		scope      Scope
		err        string
	}{
		{"no budget", "mcp:\n  sampling:\n    allow: true\n", ScopeUser, "user.yaml:3:10: mcp.sampling: allow: true needs max_tokens"},
		{"local", "mcp:\n  sampling:\n    allow: false\n", ScopeLocal, "user.yaml:3:10: mcp.sampling: sampling spends your provider budget"},
	} {
		_, err := Parse("user.yaml", []byte(tc.text), tc.scope, testWorkspace)
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.err)
		}
	}
	user, err := Parse("user.yaml", []byte("mcp:\n  sampling:\n    allow: true\n    max_tokens: 500\n"), ScopeUser, testWorkspace)
	if err != nil {
		t.Fatal(err)
	}
	if s := Merge([]*File{user}).Sampling; s == nil || !s.Allow || s.MaxTokens != 500 || s.Source.Line != 3 {
		t.Fatalf("user sampling = %+v", s)
	}
	managed, err := Parse("managed.yaml", []byte("mcp:\n  sampling:\n    allow: false\n"), ScopeManaged, testWorkspace)
	if err != nil {
		t.Fatal(err)
	}
	if s := Merge([]*File{managed, user}).Sampling; s == nil || s.Allow || s.Source.Scope != ScopeManaged {
		t.Fatalf("managed over user = %+v", s)
	}
	if s := Merge(nil).Sampling; s != nil {
		t.Fatalf("no file: %+v", s)
	}
}
