package team

import "testing"

// TestCan is the authorization table, spelled out: every role against
// every action, so a change to grants shows here.
func TestCan(t *testing.T) {
	acts := []Action{ActionReadApprovals, ActionDecide, ActionFile, ActionReadAudit, "other"}
	want := map[Role][]bool{
		RoleApprover: {true, true, false, true, false},
		RoleViewer:   {true, false, false, true, false},
		RoleRunner:   {true, false, true, false, false},
		"admin":      {false, false, false, false, false},
		"":           {false, false, false, false, false},
	}
	for role, w := range want {
		for i, a := range acts {
			if got := Can(role, a); got != w[i] {
				t.Errorf("Can(%q, %q) = %v, want %v", role, a, got, w[i])
			}
		}
	}
}

func TestParseRole(t *testing.T) {
	for _, r := range Roles {
		if got, err := ParseRole(string(r)); err != nil || got != r {
			t.Errorf("ParseRole(%q) = %q, %v", r, got, err)
		}
	}
	for _, s := range []string{"", "Approver", "admin", "approver "} {
		if _, err := ParseRole(s); err == nil {
			t.Errorf("ParseRole(%q) succeeded", s)
		}
	}
}
