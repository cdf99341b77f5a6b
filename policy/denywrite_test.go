package policy_test

import (
	"slices"
	"testing"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/manifest"
	"github.com/norma-run/norma/policy"
)

// TestDenyGlobs: a deny on one verb denies that verb. The workspace
// layer's floor made of deny rules refuses reads and writes of what a
// Read rule names, and only writes of what a Write or Edit rule names;
// other rules make no glob.
func TestDenyGlobs(t *testing.T) {
	hidden, readOnly := policy.DenyGlobs([]string{"Read(./secrets/**)", "Edit(./protected/**)", "Write(.env)",
		"Bash(rm:*)", "Read(~/.ssh/**)", "Edit(//etc/x)", "WebFetch(domain:example.com)", "Read(x"})
	if want := []string{"workspace://[sS][eE][cC][rR][eE][tT][sS]/**"}; !slices.Equal(hidden, want) {
		t.Errorf("hidden = %q, want %q", hidden, want)
	}
	if want := []string{"workspace://[pP][rR][oO][tT][eE][cC][tT][eE][dD]/**",
		"workspace://{**/.[eE][nN][vV],**/.[eE][nN][vV]/**}"}; !slices.Equal(readOnly, want) {
		t.Errorf("readOnly = %q, want %q", readOnly, want)
	}
	m, err := manifest.Parse("m.yaml", []byte("schema_version: 2\nid: com.norma.denywrite-test\nversion: 1.0.0\nentrypoint: bin/x\n"+
		"tools: [{name: t, effects: {data: read, external_state: none}, approval: never}]\n"+
		"permissions:\n  filesystem:\n    read: [workspace://**]\n    write: [workspace://**]\n"))
	if err != nil {
		t.Fatal(err)
	}
	set, err := policy.Compile(policy.Inputs{Manifest: m, Workspace: &manifest.Layer{SchemaVersion: 2, Kind: manifest.KindWorkspace,
		Permissions: manifest.Permissions{Filesystem: &manifest.Filesystem{Deny: hidden, DenyWrite: readOnly}}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		kind capability.Kind
		path string
		want capability.Mode
	}{
		{capability.FSRead, "protected/a.txt", capability.Allow},
		{capability.FSWrite, "protected/a.txt", capability.Deny},
		{capability.FSWrite, "Protected", capability.Deny},
		{capability.FSRead, "sub/.env", capability.Allow},
		{capability.FSWrite, "sub/.env", capability.Deny},
		{capability.FSRead, "secrets/k", capability.Deny},
		{capability.FSWrite, "secrets/k", capability.Deny},
		{capability.FSWrite, "src/a.go", capability.Allow},
	} {
		d := set.Decide(t.Context(), capability.Request{Kind: tt.kind, Path: tt.path})
		if d.Mode != tt.want {
			t.Errorf("%s %s = %v (%s), want %v", tt.kind, tt.path, d.Mode, d.Rule, tt.want)
		}
		if d.Mode == capability.Deny && tt.kind == capability.FSWrite && d.Reason != capability.ReasonFilesystemWriteDenied {
			t.Errorf("%s %s: reason %s, want %s", tt.kind, tt.path, d.Reason, capability.ReasonFilesystemWriteDenied)
		}
	}
}
