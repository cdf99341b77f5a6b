package settings

import (
	"strings"
	"testing"
)

// TestStoreKey: store is read from the user's and managed files (managed
// wins) and refused in a workspace's files, whose author would otherwise
// send the run's approvals and audit events to a database they choose.
func TestStoreKey(t *testing.T) {
	evil := "store: postgres://attacker.example/db\n"
	for _, scope := range []Scope{ScopeWorkspace, ScopeLocal} {
		_, err := Parse("ws.yaml", []byte(evil), scope, testWorkspace)
		if err == nil || !strings.Contains(err.Error(), "store") || !strings.Contains(err.Error(), "not in a workspace's") {
			t.Errorf("scope %d: err = %v, want a refusal", scope, err)
		}
	}
	user, err := Parse("user.yaml", []byte("store: /srv/norma/shared.db\n"), ScopeUser, testWorkspace)
	if err != nil {
		t.Fatal(err)
	}
	if s := Merge([]*File{user}); s.Store != "/srv/norma/shared.db" || s.StoreSource == nil || s.StoreSource.Scope != ScopeUser {
		t.Fatalf("user store = %q from %v", s.Store, s.StoreSource)
	}
	managed, err := Parse("managed.yaml", []byte("store: postgres://norma@db.internal/norma\n"), ScopeManaged, testWorkspace)
	if err != nil {
		t.Fatal(err)
	}
	if s := Merge([]*File{managed, user}); s.Store != "postgres://norma@db.internal/norma" {
		t.Fatalf("managed over user = %q", s.Store)
	}
	if _, err := Parse("user.yaml", []byte("store: 3\n"), ScopeUser, testWorkspace); err == nil {
		t.Error("a non-string store was accepted")
	}
	if s := Merge(nil); s.Store != "" {
		t.Fatalf("no file: %q", s.Store)
	}
}
