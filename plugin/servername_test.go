package plugin

import (
	"testing"

	"github.com/norma-run/norma/capability"
)

func TestServerName(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t)
	m := e.manager(t, &script{answers: map[Group][]string{}}, nil)
	for _, bad := range []string{"a__b", "_x", "x_", "has space", "dot.name", ""} {
		if bad != "" && ValidServerName(bad) {
			t.Errorf("ValidServerName(%q) = true", bad)
		}
	}
	if _, err := m.Install(ctx, e.pkg(t, "issue-helper-1.4.0"), InstallOptions{Name: "a__b"}); capability.ReasonOf(err) != capability.ReasonPluginState {
		t.Fatalf("Install(Name a__b) = %v, want PLUGIN_STATE", err)
	}
	if _, err := m.Info(helper); err == nil {
		t.Fatal("a refused name left the plugin installed")
	}
	if _, err := m.Install(ctx, e.pkg(t, "issue-helper-1.4.0"), InstallOptions{Name: "issues"}); err != nil {
		t.Fatal(err)
	}
	st, err := m.Info(helper)
	if err != nil || st.ServerName() != "issues" {
		t.Fatalf("Info = %+v, %v; want server name issues", st, err)
	}
	if err := m.checkName("org.other.plugin", "issues"); capability.ReasonOf(err) != capability.ReasonPluginState {
		t.Fatalf("checkName(taken) = %v, want PLUGIN_STATE", err)
	}
	if err := m.checkName("org.other.plugin", helper); err == nil {
		t.Fatal("checkName(another plugin's id) = nil")
	}
	if err := m.checkName("org.other.plugin", "other"); err != nil {
		t.Fatalf("checkName(free) = %v", err)
	}
}
