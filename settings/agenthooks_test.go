package settings

import (
	"strings"
	"testing"
)

// TestConfineBash: agentHooks.confineBash is read from the user's,
// --settings and managed files (the highest wins) and refused in a
// workspace's files, whose author would let the agent's commands out of
// the sandbox.
func TestConfineBash(t *testing.T) {
	off := "agentHooks:\n  confineBash: false\n"
	for _, scope := range []Scope{ScopeWorkspace, ScopeLocal} {
		_, err := Parse("ws.yaml", []byte(off), scope, testWorkspace)
		if err == nil || !strings.Contains(err.Error(), "agentHooks.confineBash") || !strings.Contains(err.Error(), "not in a workspace's") {
			t.Errorf("scope %d: err = %v, want a refusal", scope, err)
		}
	}
	user, err := Parse("user.yaml", []byte(off), ScopeUser, testWorkspace)
	if err != nil {
		t.Fatal(err)
	}
	if c := Merge([]*File{user}).ConfineBash; c == nil || *c {
		t.Fatalf("user confineBash = %v, want false", c)
	}
	managed, err := Parse("managed.yaml", []byte("agentHooks:\n  confineBash: true\n"), ScopeManaged, testWorkspace)
	if err != nil {
		t.Fatal(err)
	}
	if c := Merge([]*File{managed, user}).ConfineBash; c == nil || !*c {
		t.Fatalf("managed over user = %v, want true", c)
	}
	if c := Merge(nil).ConfineBash; c != nil {
		t.Fatalf("no file: %v", c)
	}
}
