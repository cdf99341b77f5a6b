package plugin

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/norma-run/norma/audit"
	"github.com/norma-run/norma/capability"
)

// pkgStep is one package of a version test: version, contents (A is the
// fixture, anything else another description, so other bytes) and options.
type pkgStep struct {
	version  string
	contents string
	o        InstallOptions
}

// pkgText is the issue-helper manifest at version v with contents c.
func pkgText(t *testing.T, v, c string) string {
	text := withVersion(t, baseManifest(t), v)
	if c != "A" {
		text = replaceOnce(t, text, "description: Summarizes issues", "description: Contents "+c+". Summarizes issues")
	}
	return text
}

// TestUpdateVersionChecks: build metadata does not make another version,
// a version is never reused for other contents (not even as a downgrade),
// and a lower version needs AllowDowngrade — for unsigned --dev packages
// as for signed ones. Each case installs the first step, updates through
// the others, and expects the last update to give code ("" = accepted).
func TestUpdateVersionChecks(t *testing.T) {
	down := InstallOptions{AllowDowngrade: true}
	tests := []struct {
		name  string
		steps []pkgStep
		code  capability.Reason
		msg   string
	}{
		{"same version, build metadata, other bytes (red-team B4)", []pkgStep{{"1.4.0", "A", InstallOptions{}}, {"1.4.0+rebuild", "B", InstallOptions{}}},
			capability.ReasonPluginRollback, "version 1.4.0 is already installed with other contents"},
		{"same version, build metadata, other bytes, with AllowDowngrade", []pkgStep{{"1.4.0", "A", InstallOptions{}}, {"1.4.0+rebuild", "B", down}},
			capability.ReasonPluginRollback, "build metadata does not make another"},
		{"lower version (red-team B4)", []pkgStep{{"1.4.0", "A", InstallOptions{}}, {"1.3.0", "A", InstallOptions{}}},
			capability.ReasonPluginRollback, "lower than 1.4.0"},
		{"lower version with AllowDowngrade", []pkgStep{{"1.4.0", "A", InstallOptions{}}, {"1.3.0", "A", down}}, "", ""},
		{"lower than a version replaced before", []pkgStep{{"1.4.0", "A", InstallOptions{}}, {"1.5.0", "A", InstallOptions{}}, {"1.3.0", "A", down}, {"1.4.1", "A", InstallOptions{}}},
			capability.ReasonPluginRollback, "lower than 1.5.0"},
		{"version reused with other bytes (red-team B5)", []pkgStep{{"1.4.0", "A", InstallOptions{}}, {"1.4.1", "A", InstallOptions{}}, {"1.4.0", "B", down}},
			capability.ReasonPluginRollback, "1.4.0 was installed before with other contents"},
		{"version reused with other bytes and build metadata", []pkgStep{{"1.4.0", "A", InstallOptions{}}, {"1.4.1", "A", InstallOptions{}}, {"1.4.0+b", "B", down}},
			capability.ReasonPluginRollback, "installed before with other contents"},
		{"downgrade to the same bytes", []pkgStep{{"1.4.0", "A", InstallOptions{}}, {"1.4.1", "A", InstallOptions{}}, {"1.4.0", "A", down}}, "", ""},
		{"the active package again", []pkgStep{{"1.4.0", "A", InstallOptions{}}, {"1.5.0", "A", InstallOptions{}}, {"1.4.0", "A", down}, {"1.4.0", "A", InstallOptions{}}}, "", ""},
		{"higher version", []pkgStep{{"1.4.0", "A", InstallOptions{}}, {"1.4.1", "B", InstallOptions{}}}, "", ""},
	}
	for _, signed := range []bool{true, false} {
		for _, tt := range tests {
			t.Run(fmt.Sprintf("signed=%v/%s", signed, tt.name), func(t *testing.T) {
				ctx := t.Context()
				e := newEnv(t)
				m := e.manager(t, never(t), nil)
				grant := parseGrant(t, "  filesystem: {read: [workspace://docs/**]}\n")
				pkg := func(s pkgStep) (string, InstallOptions) {
					o := s.o
					o.Dev = !signed
					return e.pkgOf(t, pkgText(t, s.version, s.contents), signed), o
				}
				src, o := pkg(tt.steps[0])
				o.Grant = grant
				if _, err := m.Install(ctx, src, o); err != nil {
					t.Fatal(err)
				}
				last := len(tt.steps) - 1
				for _, s := range tt.steps[1:last] {
					src, o := pkg(s)
					if _, err := m.Update(ctx, src, o); err != nil {
						t.Fatalf("Update(%s %s): %v", s.version, s.contents, err)
					}
				}
				before, _ := m.Info(helper)
				s := tt.steps[last]
				src, o = pkg(s)
				res, err := m.Update(ctx, src, o)
				if tt.code == "" {
					if err != nil {
						t.Fatalf("Update(%s %s) = %v, want accepted", s.version, s.contents, err)
					}
					if st, _ := m.Info(helper); st.Active != s.version {
						t.Errorf("active = %s, want %s", st.Active, s.version)
					}
					return
				}
				if !isCode(err, tt.code) || !strings.Contains(fmt.Sprint(err), tt.msg) {
					t.Fatalf("Update(%s %s) = %+v, %v; want %s saying %q", s.version, s.contents, res, err, tt.code, tt.msg)
				}
				if after, _ := m.Info(helper); after.Active != before.Active || len(after.Versions) != len(before.Versions) {
					t.Errorf("refused update changed the state: %+v, was %+v", after, before)
				}
				if _, _, err := m.Grant(helper); err != nil {
					t.Errorf("plugin unusable after a refused update: %v", err)
				}
			})
		}
	}
}

// TestReinstallVersionReuse: the trust store keeps every signed version's
// contents across a removal, so a reinstall cannot reuse a version number
// for other contents, even with AllowDowngrade; the same contents again
// need only AllowDowngrade.
func TestReinstallVersionReuse(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t)
	m := e.manager(t, never(t), nil)
	grant := parseGrant(t, "  {}\n")
	for _, v := range []string{"1.4.0", "1.4.1"} {
		src := e.pkgOf(t, pkgText(t, v, "A"), true)
		var err error
		if v == "1.4.0" {
			_, err = m.Install(ctx, src, InstallOptions{Grant: grant})
		} else {
			_, err = m.Update(ctx, src, InstallOptions{})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Remove(ctx, helper); err != nil {
		t.Fatal(err)
	}
	_, err := m.Install(ctx, e.pkgOf(t, pkgText(t, "1.4.0+other", "B"), true), InstallOptions{Grant: grant, AllowDowngrade: true})
	wantCode(t, "Install(1.4.0 with other bytes after removal)", err, capability.ReasonPluginRollback, "1.4.0+other was installed before with other contents")
	_, err = m.Install(ctx, e.pkgOf(t, pkgText(t, "1.4.0", "A"), true), InstallOptions{Grant: grant})
	wantCode(t, "Install(1.4.0 after 1.4.1, no AllowDowngrade)", err, capability.ReasonPluginRollback, "lower than 1.4.1")
	if _, err := m.Install(ctx, e.pkgOf(t, pkgText(t, "1.4.0", "A"), true), InstallOptions{Grant: grant, AllowDowngrade: true}); err != nil {
		t.Fatalf("Install(1.4.0, the same bytes, AllowDowngrade) = %v", err)
	}
}

// TestUnsignedReplace: an unsigned --dev package does not replace a signed
// version, even with equal permissions (where nothing is asked), unless
// AllowUnsignedReplace; then the update is audited as such. The reverse,
// signed after --dev, needs nothing.
func TestUnsignedReplace(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t)
	m := e.manager(t, never(t), nil)
	if _, err := m.Install(ctx, e.pkgOf(t, pkgText(t, "1.4.0", "A"), true), InstallOptions{Grant: parseGrant(t, "  {}\n")}); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, e.home)
	for _, o := range []InstallOptions{{Dev: true}, {Dev: true, AllowDowngrade: true}} {
		_, err := m.Update(ctx, e.pkgOf(t, pkgText(t, "1.4.1", "A"), false), o)
		wantCode(t, "Update(--dev over signed)", err, capability.ReasonPluginUnsigned, "--allow-unsigned-replace")
	}
	// Held, with a widening: still refused.
	wide := replaceOnce(t, pkgText(t, "1.4.1", "A"), "spawn: deny", "spawn: allow")
	_, err := m.Update(ctx, e.pkgOf(t, wide, false), InstallOptions{Dev: true})
	wantCode(t, "Update(--dev over signed, widening)", err, capability.ReasonPluginUnsigned, "signed by Example Corp")
	if after := snapshot(t, e.home); !slices.Equal(before, after) {
		t.Errorf("refused update changed the state directory:\nbefore %q\nafter  %q", before, after)
	}

	res, err := m.Update(ctx, e.pkgOf(t, pkgText(t, "1.4.1", "A"), false), InstallOptions{Dev: true, AllowUnsignedReplace: true})
	if err != nil || res.Held {
		t.Fatalf("Update(--dev --allow-unsigned-replace) = %+v, %v", res, err)
	}
	st, _ := m.Info(helper)
	if vs := st.Versions["1.4.1"]; st.Active != "1.4.1" || vs == nil || !vs.Untrusted {
		t.Fatalf("after the unsigned replace: %+v", st)
	}
	last := e.audit.events[len(e.audit.events)-1]
	if last.Type != audit.TypePluginUpdated || last.Detail["allowUnsignedReplace"] != "true" || last.Detail["trust"] != "untrusted" {
		t.Errorf("unsigned replace audit = %+v", last)
	}
	// Unsigned over unsigned, and signed over unsigned, need no flag.
	if _, err := m.Update(ctx, e.pkgOf(t, pkgText(t, "1.4.2", "A"), false), InstallOptions{Dev: true}); err != nil {
		t.Fatalf("Update(--dev over --dev) = %v", err)
	}
	if _, err := m.Update(ctx, e.pkgOf(t, pkgText(t, "1.4.3", "A"), true), InstallOptions{}); err != nil {
		t.Fatalf("Update(signed over --dev) = %v", err)
	}
}

// TestVersionHistoryBounded: a history keeps the first contents recorded
// per version identity and forgets the lowest versions beyond
// MaxVersionHistory.
func TestVersionHistoryBounded(t *testing.T) {
	h := map[string]Digest{}
	for i := range MaxVersionHistory + 10 {
		v, err := parseVersion(fmt.Sprintf("1.%d.0+build%d", i, i))
		if err != nil {
			t.Fatal(err)
		}
		remember(h, v, Digest{byte(i)})
	}
	if len(h) != MaxVersionHistory {
		t.Fatalf("len(history) = %d, want %d", len(h), MaxVersionHistory)
	}
	if _, ok := h["1.9.0"]; ok {
		t.Error("the lowest versions were not forgotten first")
	}
	if r, ok := h["1.10.0"]; !ok || r != (Digest{10}) {
		t.Errorf("history[1.10.0] = %v, %v; want kept, keyed without build metadata", r, ok)
	}
	v, _ := parseVersion("1.10.0+again")
	remember(h, v, Digest{0xff})
	if h["1.10.0"] != (Digest{10}) {
		t.Error("remember replaced the contents first recorded for a version")
	}
}

// TestOldStateWithoutHistory: state.json and rollback.json written before
// the version history still check the versions they know.
func TestOldStateWithoutHistory(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t)
	m := e.manager(t, never(t), nil)
	if _, err := m.Install(ctx, e.pkgOf(t, pkgText(t, "1.4.0", "A"), false), InstallOptions{Dev: true, Grant: parseGrant(t, "  {}\n")}); err != nil {
		t.Fatal(err)
	}
	st, _ := m.Info(helper)
	st.History = nil
	if err := m.writeState(st); err != nil {
		t.Fatal(err)
	}
	_, err := m.Update(ctx, e.pkgOf(t, pkgText(t, "1.4.0+x", "B"), false), InstallOptions{Dev: true})
	wantCode(t, "Update(same version, other bytes, no history)", err, capability.ReasonPluginRollback, "already installed with other contents")
	if err := e.trust.Record("com.example.old", KeyRef{ID: "k"}, "2.0.0", Digest{1}); err != nil {
		t.Fatal(err)
	}
	p, _, _ := e.trust.Plugin("com.example.old")
	p.Versions = nil
	if err := e.trust.write("rollback.json", rollbackFile{Plugins: map[string]*PluginTrust{"com.example.old": p}}); err != nil {
		t.Fatal(err)
	}
	err = e.trust.CheckRollback("com.example.old", "2.0.0+x", Digest{2}, true)
	wantCode(t, "CheckRollback(same version, other bytes, no versions table)", err, capability.ReasonPluginRollback, "other contents")
}
