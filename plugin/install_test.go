package plugin

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/norma-run/norma/audit"
	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/manifest"
)

// recorder is an audit.Sink that keeps events in memory.
type recorder struct {
	mu     sync.Mutex
	events []audit.Event
	fail   bool
}

func (r *recorder) Record(_ context.Context, e audit.Event) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fail {
		return errors.New("disk full")
	}
	r.events = append(r.events, e)
	return nil
}

func (r *recorder) types() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, e := range r.events {
		out = append(out, e.Type)
	}
	return out
}

// script answers consent questions from a table and records what was asked.
type script struct {
	answers map[Group][]string // missing group: grant everything requested
	asked   []Question
}

func (s *script) Ask(_ context.Context, q Question) ([]string, error) {
	s.asked = append(s.asked, q)
	if a, ok := s.answers[q.Group]; ok {
		return a, nil
	}
	return q.Requested, nil
}

// never fails the test when asked: for flows that must not prompt.
func never(t *testing.T) Consenter {
	return ConsenterFunc(func(_ context.Context, q Question) ([]string, error) {
		t.Errorf("unexpected consent question: %+v", q)
		return nil, errors.New("no")
	})
}

type env struct {
	home  string
	key   ed25519.PrivateKey
	trust *TrustStore
	audit *recorder
	out   bytes.Buffer
}

func newEnv(t *testing.T) *env {
	e := &env{home: filepath.Join(t.TempDir(), "home"), key: testKey(7), audit: &recorder{}}
	ts, err := OpenTrustStore(filepath.Join(e.home, "trust"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ts.Add(pub(e.key), "Example Corp", []string{"com.example"}, fixedNow()); err != nil {
		t.Fatal(err)
	}
	e.trust = ts
	return e
}

func (e *env) manager(t *testing.T, c Consenter, ws *manifest.Layer) *Manager {
	m, err := NewManager(Options{Home: e.home, Trust: e.trust, Audit: e.audit, Consenter: c, Workspace: ws, Out: &e.out, Now: fixedNow})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func (e *env) pkg(t *testing.T, name string) string {
	return packTo(t, signedFixture(t, name, e.key))
}

func grantItems(t *testing.T, m *Manager, id string) map[Group][]string {
	t.Helper()
	g, _, err := m.Grant(id)
	if err != nil {
		t.Fatalf("Grant(%s) = %v", id, err)
	}
	return GrantItems(g.Permissions)
}

const helper = "com.example.issue-helper"

func TestInstallUpdateConsent(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t)
	// Install 1.4.0, narrowing the requested write to reports only.
	sc := &script{answers: map[Group][]string{GroupFilesystemWrite: {"workspace://.agent-output/reports/**"}}}
	m := e.manager(t, sc, nil)
	if _, err := m.Install(ctx, e.pkg(t, "issue-helper-1.4.0"), InstallOptions{}); err != nil {
		t.Fatal(err)
	}
	var groups []Group
	for _, q := range sc.asked {
		groups = append(groups, q.Group)
	}
	if want := []Group{GroupFilesystemRead, GroupFilesystemWrite, GroupNetwork, GroupSecrets, GroupExternalWrites}; !slices.Equal(groups, want) {
		t.Errorf("asked groups %v, want %v", groups, want)
	}
	if !strings.Contains(e.out.String(), "Signed by Example Corp") || !strings.Contains(e.out.String(), "com.example.issue-helper 1.4.0") {
		t.Errorf("install screen:\n%s", e.out.String())
	}
	if got := grantItems(t, m, helper)[GroupFilesystemWrite]; !slices.Equal(got, []string{"workspace://.agent-output/reports/**"}) {
		t.Errorf("granted write = %v, want the narrowed glob", got)
	}
	if got, want := e.audit.types(), []string{"consent_granted", "plugin_installed"}; !slices.Equal(got, want) {
		t.Errorf("audit = %v, want %v", got, want)
	}
	// Installed files are read-only.
	info, err := os.Stat(filepath.Join(m.Dir(helper, "1.4.0"), "bin", "issue-helper"))
	if err != nil || info.Mode().Perm() != 0o555 {
		t.Errorf("installed entrypoint mode = %v, %v; want 0555", info.Mode(), err)
	}

	// Update to 1.5.0 widens: held, nothing asked, old version stays active.
	e.out.Reset()
	m = e.manager(t, never(t), nil)
	res, err := m.Update(ctx, e.pkg(t, "issue-helper-1.5.0"), InstallOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantWidened := map[Group][]string{
		GroupFilesystemRead: {"workspace://src/**"},
		GroupNetwork:        {"POST https://hooks.example.invalid:443 /notify/{channel}"},
	}
	if !res.Held || !reflect.DeepEqual(res.Widened, wantWidened) {
		t.Fatalf("Update(1.5.0) held=%v widened=%v, want held and %v", res.Held, res.Widened, wantWidened)
	}
	st, _ := m.Info(helper)
	if st.Active != "1.4.0" || st.Held != "1.5.0" {
		t.Fatalf("state active %s held %s", st.Active, st.Held)
	}
	if _, _, err := m.Grant(helper); err != nil {
		t.Fatalf("grant of the running 1.4.0 after a held update: %v", err)
	}

	// Consent shows only what widened; the user accepts it.
	sc = &script{}
	m = e.manager(t, sc, nil)
	if _, err := m.Consent(ctx, helper, nil); err != nil {
		t.Fatal(err)
	}
	asked := map[Group][]string{}
	for _, q := range sc.asked {
		asked[q.Group] = q.Requested
	}
	if !reflect.DeepEqual(asked, wantWidened) {
		t.Fatalf("consent asked %v, want exactly %v", asked, wantWidened)
	}
	for _, line := range []string{"+ filesystem.read workspace://src/**", "+ network POST https://hooks.example.invalid:443/notify/{channel}"} {
		if !strings.Contains(e.out.String(), line) {
			t.Errorf("consent screen lacks %q:\n%s", line, e.out.String())
		}
	}
	st, _ = m.Info(helper)
	if st.Active != "1.5.0" || st.Held != "" || st.Versions["1.4.0"] != nil {
		t.Fatalf("after consent: %+v", st)
	}
	if _, err := os.Stat(m.Dir(helper, "1.4.0")); !os.IsNotExist(err) {
		t.Errorf("old version files kept: %v", err)
	}
	g := grantItems(t, m, helper)
	if !slices.Contains(g[GroupFilesystemRead], "workspace://src/**") || !slices.Equal(g[GroupFilesystemWrite], []string{"workspace://.agent-output/reports/**"}) {
		t.Errorf("grant after consent = %v; want src/** added and the narrowed write kept", g)
	}

	// Rollback: 1.4.1 after 1.5.0 is refused, then allowed and audited.
	_, err = m.Update(ctx, e.pkg(t, "issue-helper-1.4.1"), InstallOptions{})
	wantCode(t, "Update(1.4.1 after 1.5.0)", err, capability.ReasonPluginRollback, "lower than 1.5.0")
	if _, err := m.Update(ctx, e.pkg(t, "issue-helper-1.4.1"), InstallOptions{AllowDowngrade: true}); err != nil {
		t.Fatal(err)
	}
	last := e.audit.events[len(e.audit.events)-1]
	if last.Type != audit.TypePluginUpdated || last.Detail["allowDowngrade"] != "true" {
		t.Errorf("downgrade audit = %+v", last)
	}
}

func TestNarrowingUpdateAppliesWithoutPrompt(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t)
	m := e.manager(t, &script{}, nil)
	if _, err := m.Install(ctx, e.pkg(t, "issue-helper-1.4.0"), InstallOptions{}); err != nil {
		t.Fatal(err)
	}
	m = e.manager(t, never(t), nil)
	res, err := m.Update(ctx, e.pkg(t, "issue-helper-1.4.1"), InstallOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Held || len(res.Delta.Removed) != 1 {
		t.Fatalf("Update(1.4.1) held=%v delta=%+v", res.Held, res.Delta)
	}
	st, _ := m.Info(helper)
	if st.Active != "1.4.1" {
		t.Fatalf("active = %s", st.Active)
	}
	if g := grantItems(t, m, helper); len(g[GroupFilesystemWrite]) != 0 {
		t.Errorf("grant still has write %v after a narrowing update", g[GroupFilesystemWrite])
	}
}

func TestInstallRefusals(t *testing.T) {
	ctx := t.Context()
	ws := &manifest.Layer{SchemaVersion: 2, Kind: manifest.KindWorkspace, Permissions: manifest.Permissions{
		Filesystem: &manifest.Filesystem{Write: []string{"workspace://.agent-output/reports/**"}},
	}}
	wideGrant := &manifest.Layer{SchemaVersion: 2, Kind: manifest.KindGrant, Permissions: manifest.Permissions{
		Filesystem: &manifest.Filesystem{Write: []string{"workspace://**"}},
	}}
	tests := []struct {
		name string
		pkg  func(t *testing.T, e *env) string
		c    func(t *testing.T) Consenter
		ws   *manifest.Layer
		o    InstallOptions
		code capability.Reason
		msg  string
	}{
		{"workspace forbids before any prompt", func(t *testing.T, e *env) string { return e.pkg(t, "issue-helper-1.4.0") }, never, ws, InstallOptions{},
			capability.ReasonPluginWorkspaceForbids, "rule filesystem.write [workspace://.agent-output/reports/**] forbids filesystem.write workspace://.agent-output/**"},
		{"headless without grant", func(t *testing.T, e *env) string { return e.pkg(t, "issue-helper-1.4.0") }, func(*testing.T) Consenter { return nil }, nil, InstallOptions{},
			capability.ReasonPluginConsentRequired, "--grant FILE"},
		{"grant wider than requested", func(t *testing.T, e *env) string { return e.pkg(t, "issue-helper-1.4.0") }, never, nil, InstallOptions{Grant: wideGrant},
			capability.ReasonPluginGrantMismatch, "filesystem.write workspace://**"},
		{"unsigned without --dev", func(t *testing.T, e *env) string { return packTo(t, copyFixture(t, "issue-helper-1.4.0")) }, never, nil, InstallOptions{},
			capability.ReasonPluginUnsigned, "pass --dev"},
		{"untrusted key", func(t *testing.T, e *env) string {
			return packTo(t, signedFixture(t, "issue-helper-1.4.0", testKey(99)))
		}, never, nil, InstallOptions{},
			capability.ReasonPluginKeyUntrusted, "not in the trust store"},
		{"tampered archive", func(t *testing.T, e *env) string {
			dir := signedFixture(t, "issue-helper-1.4.0", e.key)
			flipByte(t, filepath.Join(dir, "bin", "issue-helper"), 0)
			return packTo(t, dir)
		}, never, nil, InstallOptions{}, capability.ReasonPluginFileModified, "bin/issue-helper"},
		{"traversal archive", func(t *testing.T, e *env) string {
			p := filepath.Join(t.TempDir(), "evil.tar.gz")
			os.WriteFile(p, makeArchive(t, []entry{{name: "manifest.yaml", body: "x"}, {name: "../../trust/keys.json", body: "[]"}}), 0o644)
			return p
		}, never, nil, InstallOptions{}, capability.ReasonPluginPathInvalid, "path traverses upwards"},
		{"symlink archive", func(t *testing.T, e *env) string {
			p := filepath.Join(t.TempDir(), "evil.tar.gz")
			os.WriteFile(p, makeArchive(t, []entry{{name: "bin", typ: '2', linkname: "/usr/bin"}}), 0o644)
			return p
		}, never, nil, InstallOptions{}, capability.ReasonPluginLink, "symbolic link entry refused"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			m := e.manager(t, tt.c(t), tt.ws)
			src := tt.pkg(t, e)
			before := snapshot(t, e.home)
			_, err := m.Install(ctx, src, tt.o)
			wantCode(t, "Install", err, tt.code, tt.msg)
			if after := snapshot(t, e.home); !slices.Equal(before, after) {
				t.Errorf("refused install changed the state directory:\nbefore %q\nafter  %q", before, after)
			}
			if len(e.audit.events) != 0 {
				t.Errorf("refused install audited %v", e.audit.types())
			}
		})
	}
}

func TestHeadlessAndDev(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t)
	grant, err := manifest.ParseLayerFile(filepath.Join("testdata", "grant-reports-only.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	m := e.manager(t, nil, nil)
	if _, err := m.Install(ctx, packTo(t, copyFixture(t, "issue-helper-1.4.0")), InstallOptions{Dev: true, Grant: grant}); err != nil {
		t.Fatal(err)
	}
	st, _ := m.Info(helper)
	if !st.Versions["1.4.0"].Untrusted {
		t.Error("unsigned --dev install not flagged untrusted")
	}
	if !strings.Contains(e.out.String(), "UNTRUSTED") {
		t.Errorf("install screen does not flag untrusted:\n%s", e.out.String())
	}
	g := grantItems(t, m, helper)
	// Package manifest fills an absent external_writes section of a parsed
	// grant with approval_required (every external write still needs an
	// approval); everything else absent is not granted.
	want := map[Group][]string{GroupFilesystemRead: {"workspace://docs/**"}, GroupFilesystemWrite: {"workspace://.agent-output/reports/**"}, GroupExternalWrites: {"approval_required"}}
	if !reflect.DeepEqual(g, want) {
		t.Errorf("headless grant = %v, want %v", g, want)
	}
	// The binding fails closed when the grant file is edited.
	p := filepath.Join(e.home, "plugins", helper, "grant.yaml")
	data, _ := os.ReadFile(p)
	os.WriteFile(p, bytes.Replace(data, []byte("reports/**"), []byte("**"), 1), 0o600)
	_, _, err = m.Grant(helper)
	wantCode(t, "Grant(edited grant.yaml)", err, capability.ReasonPluginGrantMismatch, "changed since consent")
	os.WriteFile(p, data, 0o600)
	// …and when the binding names another permission digest.
	st.Versions["1.4.0"].PermissionDigest = "sha256:" + strings.Repeat("0", 64)
	m.writeState(st)
	_, _, err = m.Grant(helper)
	wantCode(t, "Grant(other permission digest)", err, capability.ReasonPluginGrantMismatch, "permission digest")
}

func TestRemove(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t)
	m := e.manager(t, &script{}, nil)
	if _, err := m.Install(ctx, e.pkg(t, "issue-helper-1.4.0"), InstallOptions{}); err != nil {
		t.Fatal(err)
	}
	stopped := ""
	m.o.Stopper = stopperFunc(func(_ context.Context, id string) error { stopped = id; return nil })
	if err := m.Remove(ctx, helper); err != nil {
		t.Fatal(err)
	}
	if stopped != helper {
		t.Errorf("Stopper called with %q", stopped)
	}
	if _, err := os.Stat(filepath.Join(e.home, "plugins", helper)); !os.IsNotExist(err) {
		t.Errorf("plugin dir kept: %v", err)
	}
	if l, _ := m.List(); len(l) != 0 {
		t.Errorf("List after remove = %v", l)
	}
	if got := e.audit.types(); got[len(got)-1] != audit.TypePluginRemoved {
		t.Errorf("audit = %v", got)
	}
	// The rollback floor survives removal.
	if err := e.trust.CheckRollback(helper, "1.3.0", Digest{}, false); capability.ReasonOf(err) != capability.ReasonPluginRollback {
		t.Errorf("CheckRollback after remove = %v", err)
	}
	err := m.Remove(ctx, helper)
	wantCode(t, "Remove(again)", err, capability.ReasonPluginNotInstalled, "")
}

func TestAuditFailureAborts(t *testing.T) {
	e := newEnv(t)
	e.audit.fail = true
	m := e.manager(t, &script{}, nil)
	before := snapshot(t, e.home)
	_, err := m.Install(t.Context(), e.pkg(t, "issue-helper-1.4.0"), InstallOptions{})
	wantCode(t, "Install(audit down)", err, capability.ReasonPluginState, "audit record failed")
	if after := snapshot(t, e.home); !slices.Equal(before, after) {
		t.Errorf("install without audit changed state: %q", after)
	}
}

type stopperFunc func(ctx context.Context, id string) error

func (f stopperFunc) Stop(ctx context.Context, id string) error { return f(ctx, id) }
