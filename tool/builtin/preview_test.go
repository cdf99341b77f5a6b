package builtin_test

import (
	"strings"
	"testing"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/gate/gatetest"
)

// TestFilePreviews: the approval preview of Write, Edit and MultiEdit is
// the unified diff of the real file, read through the file guard, and the
// change the call would make; a denied approval changes nothing on disk.
func TestFilePreviews(t *testing.T) {
	ap := gatetest.NewMemoryApprover(false)
	f := newFixture(t, fixtureOpts{approver: ap})
	f.write(t, map[string]string{"docs/a.md": "# Title\nalpha\nbeta\ngamma\n", "private/p.md": "secret\n"})
	tests := []struct {
		tool  string
		input any
		want  []string
	}{
		{"Edit", map[string]any{"path": "docs/a.md", "old_string": "beta", "new_string": "BETA \x1b[8mhidden\x1b[0m"},
			[]string{"--- a/docs/a.md\n+++ b/docs/a.md\n@@ -1,4 +1,4 @@\n # Title\n alpha\n-beta\n+BETA \x1b[8mhidden\x1b[0m\n gamma\n"}},
		{"MultiEdit", map[string]any{"path": "docs/a.md", "edits": []map[string]any{
			{"old_string": "alpha", "new_string": "one"}, {"old_string": "gamma", "new_string": "three"}}},
			[]string{"-alpha\n+one\n", "-gamma\n+three\n"}},
		{"Write", map[string]any{"path": "docs/a.md", "content": "# Title\nnew\n"},
			[]string{"--- a/docs/a.md\n+++ b/docs/a.md\n", " # Title\n-alpha\n-beta\n-gamma\n+new\n"}},
		{"Write", map[string]any{"path": "docs/new.md", "content": "x\ny"},
			[]string{"--- /dev/null\n+++ b/docs/new.md\n@@ -0,0 +1,2 @@\n+x\n+y\n\\ No newline at end of file\n"}},
		{"Edit", map[string]any{"path": "docs/a.md", "old_string": "absent", "new_string": "x"},
			[]string{`"old_string":"absent"`, "(the change cannot be shown: ", "EDIT_NO_MATCH"}},
	}
	for _, tt := range tests {
		r := f.call(t, tt.tool, tt.input)
		wantReason(t, r, capability.ReasonApprovalDenied)
		reqs := ap.Requests()
		got := reqs[len(reqs)-1].Preview
		for _, w := range tt.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s %v: preview\n%s\nlacks\n%s", tt.tool, tt.input, got, w)
			}
		}
	}
	if got := f.read(t, "docs/a.md"); got != "# Title\nalpha\nbeta\ngamma\n" {
		t.Errorf("a denied approval changed the file: %q", got)
	}
	if f.exists("docs/new.md") {
		t.Error("a denied Write created its file")
	}
}
