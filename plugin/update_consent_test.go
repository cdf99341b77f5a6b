package plugin

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/manifest"
)

// baseManifest is the manifest of testdata/issue-helper-1.4.0, the starting
// point every widening below edits.
func baseManifest(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "issue-helper-1.4.0", "manifest.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// replaceOnce replaces old by new in s and fails the test when s lacks old,
// so that a fixture edit that no longer applies is noticed.
func replaceOnce(t *testing.T, s, old, new string) string {
	t.Helper()
	if !strings.Contains(s, old) {
		t.Fatalf("fixture edit: manifest lacks %q", old)
	}
	return strings.Replace(s, old, new, 1)
}

// withVersion sets the version of manifest text.
func withVersion(t *testing.T, text, version string) string {
	return replaceOnce(t, text, "version: 1.4.0\n", "version: "+version+"\n")
}

// pkgOf signs (or, unsigned, leaves for --dev) the issue-helper fixture
// with manifest text and packs it.
func (e *env) pkgOf(t *testing.T, text string, signed bool) string {
	t.Helper()
	dir := copyFixture(t, "issue-helper-1.4.0")
	if err := os.WriteFile(filepath.Join(dir, ManifestName), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if signed {
		if _, err := Sign(t.Context(), dir, e.key, &SignOptions{Now: fixedNow}); err != nil {
			t.Fatal(err)
		}
	}
	return packTo(t, dir)
}

func parseText(t *testing.T, text string) *manifest.Manifest {
	t.Helper()
	m, err := manifest.Parse("manifest.yaml", []byte(text))
	if err != nil {
		t.Fatalf("fixture edit does not parse: %v\n%s", err, text)
	}
	return m
}

// declineAll answers every consent question with nothing.
func declineAll(asked *[]Question) Consenter {
	return ConsenterFunc(func(_ context.Context, q Question) ([]string, error) {
		*asked = append(*asked, q)
		return nil, nil
	})
}

const extraTool = `tools:
  - name: issues.list
    description: List issues.
    effects: {data: %s, external_state: %s}
    approval: never
`

// widenings has one case per class of widening: the edit turns the
// issue-helper 1.4.0 manifest into one that asks for more. symmetric marks
// a change whose reverse is a change of target again, not a narrowing.
var widenings = []struct {
	name      string
	edit      func(t *testing.T, s string) string
	tool      bool // the change is about tools, which a grant cannot narrow
	symmetric bool
}{
	{"new read-only tool", func(t *testing.T, s string) string {
		return replaceOnce(t, s, "tools:\n", strings.Replace(strings.Replace(extraTool, "%s", "read", 1), "%s", "none", 1))
	}, true, false},
	{"new tool that writes externally without approval", func(t *testing.T, s string) string {
		return replaceOnce(t, s, "tools:\n", strings.Replace(strings.Replace(extraTool, "%s", "send", 1), "%s", "write", 1))
	}, true, false},
	{"tool effects read to external write", func(t *testing.T, s string) string {
		return replaceOnce(t, s, "effects: {data: read, external_state: none}", "effects: {data: read, external_state: write}")
	}, true, false},
	{"tool approval per_action to never", func(t *testing.T, s string) string {
		return replaceOnce(t, s, "external_state: write}\n    approval: per_action", "external_state: write}\n    approval: never")
	}, true, false},
	{"deny glob removed", func(t *testing.T, s string) string {
		return replaceOnce(t, s, "deny:  [workspace://**/.env*, workspace://**/.git/**]", "deny:  [workspace://**/.env*]")
	}, false, false},
	{"deny glob narrowed", func(t *testing.T, s string) string {
		return replaceOnce(t, s, "deny:  [workspace://**/.env*, workspace://**/.git/**]", "deny:  [workspace://.env, workspace://**/.git/**]")
	}, false, false},
	{"network approval dropped", func(t *testing.T, s string) string {
		return replaceOnce(t, s, "\n        approval: per_action", "")
	}, false, false},
	{"network origin added", func(t *testing.T, s string) string {
		return replaceOnce(t, s, "  secrets:\n", "      - origin: https://hooks.example.invalid\n        methods: [POST]\n        paths: [\"/notify/{channel}\"]\n  secrets:\n")
	}, false, false},
	{"network method added", func(t *testing.T, s string) string {
		return replaceOnce(t, s, "methods: [GET]", "methods: [GET, DELETE]")
	}, false, false},
	{"network path added", func(t *testing.T, s string) string {
		return replaceOnce(t, s, `"/repos/{owner}/issues/{number}"]`, `"/repos/{owner}/issues/{number}", "/repos/{owner}/pulls"]`)
	}, false, false},
	{"read glob widened", func(t *testing.T, s string) string {
		return replaceOnce(t, s, "read:  [workspace://docs/**]", "read:  [workspace://**]")
	}, false, false},
	{"write glob added", func(t *testing.T, s string) string {
		return replaceOnce(t, s, "write: [workspace://.agent-output/**]", "write: [workspace://.agent-output/**, workspace://src/**]")
	}, false, false},
	{"secret added", func(t *testing.T, s string) string {
		return replaceOnce(t, s, "  process:\n", "    - name: hooks_token\n      purpose: https://hooks.example.invalid\n      inject_as: brokered_header\n  process:\n")
	}, false, false},
	{"secret retargeted to another origin", func(t *testing.T, s string) string {
		return replaceOnce(t, s, "purpose: https://api.example.invalid", "purpose: https://other.example.invalid")
	}, false, true},
	{"secret given a new scope", func(t *testing.T, s string) string {
		return replaceOnce(t, s, "scopes: [issues:read, comments:write]", "scopes: [admin, issues:read, comments:write]")
	}, false, false},
	{"secret scope changed", func(t *testing.T, s string) string {
		return replaceOnce(t, s, "scopes: [issues:read, comments:write]", "scopes: [issues:read, issues:write]")
	}, false, true},
	{"secret injected elsewhere", func(t *testing.T, s string) string {
		return replaceOnce(t, s, "env: ISSUE_API_TOKEN", "env: ISSUE_API_TOKEN\n      header: X-Other")
	}, false, true},
	{"spawn allowed", func(t *testing.T, s string) string {
		return replaceOnce(t, s, "spawn: deny", "spawn: allow")
	}, false, false},
	{"external writes raised to allow", func(t *testing.T, s string) string {
		return replaceOnce(t, s, "default: approval_required", "default: allow")
	}, false, false},
}

// updateOutcome installs old (granting all it asks), updates to new with a
// consenter that fails the test when asked, and checks that the update is
// held exactly when manifest.Diff says re-consent. It returns the manager,
// the result and the grant in force before the update.
func updateOutcome(t *testing.T, e *env, oldText, newText string) (*Manager, *Result, *manifest.Layer) {
	t.Helper()
	ctx := t.Context()
	m := e.manager(t, &script{}, nil)
	if _, err := m.Install(ctx, e.pkgOf(t, oldText, true), InstallOptions{}); err != nil {
		t.Fatalf("Install(old): %v", err)
	}
	before, _, err := m.Grant(helper)
	if err != nil {
		t.Fatal(err)
	}
	d := manifest.Diff(parseText(t, oldText), parseText(t, newText))
	m = e.manager(t, never(t), nil)
	res, err := m.Update(ctx, e.pkgOf(t, newText, true), InstallOptions{})
	if err != nil {
		t.Fatalf("Update: %v", err)
	}
	if res.Held != d.NeedsConsent() {
		t.Fatalf("Update held = %v, but manifest.Diff(old, new).NeedsConsent() = %v; delta %+v", res.Held, d.NeedsConsent(), d)
	}
	return m, res, before
}

// notWider fails when grant b gives anything grant a does not.
func notWider(t *testing.T, what string, a, b *manifest.Layer) {
	t.Helper()
	if d := manifest.DiffPermissions(a.Permissions, b.Permissions); d.NeedsConsent() {
		t.Errorf("%s: grant widened without consent: %+v", what, append(d.Added, d.Widened...))
	}
}

// TestUpdateConsentFromDiff: for every class of widening, `plugin update`
// holds exactly when the manifest diff says re-consent, the running version
// keeps its grant, declining keeps the grant from widening, and the
// reverse update applies at once without a question.
func TestUpdateConsentFromDiff(t *testing.T) {
	for _, tc := range widenings {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			base := baseManifest(t)
			wide := tc.edit(t, base)
			if d := manifest.Diff(parseText(t, base), parseText(t, wide)); !d.NeedsConsent() {
				t.Fatalf("manifest.Diff does not call this a widening: %+v", d)
			}

			e := newEnv(t)
			m, res, before := updateOutcome(t, e, base, withVersion(t, wide, "1.4.1"))
			st, err := m.Info(helper)
			if err != nil || st.Active != "1.4.0" || st.Held != "1.4.1" {
				t.Fatalf("after a held update: %+v %v; want 1.4.0 active, 1.4.1 held", st, err)
			}
			if len(res.Widened) == 0 {
				t.Error("a held update lists nothing it asks for")
			}
			if g, _, err := m.Grant(helper); err != nil {
				t.Fatalf("the running version lost its grant: %v", err)
			} else {
				notWider(t, "held", before, g)
			}

			// Declining everything: a tool change keeps the update held; a
			// permission change activates it with no more than before.
			var asked []Question
			m = e.manager(t, declineAll(&asked), nil)
			_, err = m.Consent(ctx, helper, nil)
			if len(asked) == 0 {
				t.Error("Consent asked nothing")
			}
			if tc.tool {
				wantCode(t, "Consent(declined)", err, capability.ReasonPluginConsentDeclined, "")
				if st, _ := m.Info(helper); st.Active != "1.4.0" || st.Held != "1.4.1" {
					t.Fatalf("declined tool consent changed state: %+v", st)
				}
				m = e.manager(t, &script{}, nil)
				if _, err := m.Consent(ctx, helper, nil); err != nil {
					t.Fatalf("Consent(accepted): %v", err)
				}
			} else if err != nil {
				t.Fatalf("Consent(declined): %v", err)
			}
			after, _, err := m.Grant(helper)
			if err != nil {
				t.Fatalf("grant after consent: %v", err)
			}
			if st, _ := m.Info(helper); st.Active != "1.4.1" || st.Held != "" {
				t.Fatalf("after consent: %+v", st)
			}
			if !tc.tool {
				notWider(t, "declined", before, after)
			}

			// The reverse: from the wider manifest back to the base one.
			e = newEnv(t)
			m, res, before = updateOutcome(t, e, wide, withVersion(t, base, "1.4.1"))
			if tc.symmetric {
				if !res.Held {
					t.Fatal("the reverse of a retarget must be held too")
				}
				return
			}
			if res.Held {
				t.Fatalf("a narrowing update was held: %+v", res.Widened)
			}
			if st, _ := m.Info(helper); st.Active != "1.4.1" {
				t.Fatalf("narrowing not applied: active %s", st.Active)
			}
			after, _, err = m.Grant(helper)
			if err != nil {
				t.Fatalf("grant after a narrowing update: %v", err)
			}
			notWider(t, "narrowing", before, after)
			if d := manifest.DiffPermissions(parseText(t, base).Permissions, after.Permissions); d.NeedsConsent() {
				t.Errorf("grant after narrowing gives more than the manifest asks: %+v", append(d.Added, d.Widened...))
			}
		})
	}
}

// TestConsentGrantsWhatWasAccepted: Consent asks exactly the items the
// delta adds or widens, puts what was accepted into the grant, keeps what
// was declined out of it, and the user's earlier narrowing survives.
func TestConsentGrantsWhatWasAccepted(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t)
	base := baseManifest(t)
	sc := &script{answers: map[Group][]string{GroupFilesystemWrite: {"workspace://.agent-output/reports/**"}}}
	m := e.manager(t, sc, nil)
	if _, err := m.Install(ctx, e.pkgOf(t, base, true), InstallOptions{}); err != nil {
		t.Fatal(err)
	}
	wide := replaceOnce(t, base, "\n        approval: per_action", "")
	wide = replaceOnce(t, wide, "spawn: deny", "spawn: allow")
	wide = replaceOnce(t, wide, "deny:  [workspace://**/.env*, workspace://**/.git/**]", "deny:  [workspace://**/.env*]")
	wide = replaceOnce(t, wide, "read:  [workspace://docs/**]", "read:  [workspace://**]")
	if res, err := m.Update(ctx, e.pkgOf(t, withVersion(t, wide, "1.4.1"), true), InstallOptions{}); err != nil || !res.Held {
		t.Fatalf("Update = %+v, %v; want held", res, err)
	}
	// Accept the approval drop and the deny lift; decline spawn and the read glob.
	sc = &script{answers: map[Group][]string{GroupProcess: nil, GroupFilesystemRead: nil}}
	m = e.manager(t, sc, nil)
	res, err := m.Consent(ctx, helper, nil)
	if err != nil {
		t.Fatal(err)
	}
	asked := map[Group][]string{}
	for _, q := range sc.asked {
		asked[q.Group] = q.Requested
	}
	want := map[Group][]string{
		GroupFilesystemRead: {"workspace://**"},
		GroupDenyLifted:     {"workspace://**/.git/**"},
		GroupNetwork:        {"POST https://api.example.invalid:443 /repos/{owner}/issues/{number}/comments"},
		GroupProcess:        {"allow"},
	}
	if !reflect.DeepEqual(asked, want) {
		t.Errorf("Consent asked %v, want %v", asked, want)
	}
	p := res.Grant.Permissions
	if got := p.Filesystem.Read; !slices.Equal(got, []string{"workspace://docs/**"}) {
		t.Errorf("read after declining ** = %v, want docs/** kept", got)
	}
	if got := p.Filesystem.Write; !slices.Equal(got, []string{"workspace://.agent-output/reports/**"}) {
		t.Errorf("the install-time narrowing was lost: write %v", got)
	}
	if slices.Contains(p.Filesystem.Deny, "workspace://**/.git/**") {
		t.Errorf("accepted deny lift still denied: %v", p.Filesystem.Deny)
	}
	for _, r := range p.Network.Requests {
		if r.Methods[0] == "POST" && r.Approval != "never" {
			t.Errorf("accepted approval drop not applied: %+v", r)
		}
	}
	if p.Process.Spawn != "deny" {
		t.Errorf("declined spawn granted: %s", p.Process.Spawn)
	}

	// The same update, declined item by item from a fresh install: nothing widens.
	e = newEnv(t)
	m = e.manager(t, &script{}, nil)
	if _, err := m.Install(ctx, e.pkgOf(t, base, true), InstallOptions{}); err != nil {
		t.Fatal(err)
	}
	before, _, _ := m.Grant(helper)
	if _, err := m.Update(ctx, e.pkgOf(t, withVersion(t, wide, "1.4.1"), true), InstallOptions{}); err != nil {
		t.Fatal(err)
	}
	var declined []Question
	m = e.manager(t, declineAll(&declined), nil)
	res, err = m.Consent(ctx, helper, nil)
	if err != nil {
		t.Fatal(err)
	}
	notWider(t, "declined", before, res.Grant)
	if r := grantedApprovalOf(res.Grant, "POST"); r != "per_action" {
		t.Errorf("declined approval drop: POST approval %q, want per_action", r)
	}
	if !slices.Contains(res.Grant.Permissions.Filesystem.Deny, "workspace://**/.git/**") {
		t.Errorf("declined deny lift: deny %v lacks **/.git/**", res.Grant.Permissions.Filesystem.Deny)
	}
}

func grantedApprovalOf(g *manifest.Layer, method string) string {
	for _, r := range g.Permissions.Network.Requests {
		if r.Methods[0] == method {
			return r.Approval
		}
	}
	return ""
}

// TestAnswerWiderThanAsked: an answer wider than the question is refused
// even when the manifest requests it (the user narrowed it at install).
func TestAnswerWiderThanAsked(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t)
	base := baseManifest(t)
	m := e.manager(t, &script{answers: map[Group][]string{GroupFilesystemWrite: {"workspace://.agent-output/reports/**"}}}, nil)
	if _, err := m.Install(ctx, e.pkgOf(t, base, true), InstallOptions{}); err != nil {
		t.Fatal(err)
	}
	wide := replaceOnce(t, base, "write: [workspace://.agent-output/**]", "write: [workspace://.agent-output/**, workspace://src/**]")
	if _, err := m.Update(ctx, e.pkgOf(t, withVersion(t, wide, "1.4.1"), true), InstallOptions{}); err != nil {
		t.Fatal(err)
	}
	m = e.manager(t, &script{answers: map[Group][]string{GroupFilesystemWrite: {"workspace://src/**", "workspace://.agent-output/**"}}}, nil)
	_, err := m.Consent(ctx, helper, nil)
	wantCode(t, "Consent(wider answer)", err, capability.ReasonPluginGrantMismatch, "workspace://.agent-output/** is wider than requested")
	if st, _ := m.Info(helper); st.Active != "1.4.0" || st.Held != "1.4.1" {
		t.Fatalf("refused consent changed state: %+v", st)
	}
}

// TestHeadlessUpdateGrantFile: with a grant file (--yes --grant) a
// widening update applies at once, and the file is the consent for exactly
// the asked groups: its items, the tool changes, and the lifting of the deny
// globs it does not deny itself.
func TestHeadlessUpdateGrantFile(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t)
	base := baseManifest(t)
	m := e.manager(t, &script{}, nil)
	if _, err := m.Install(ctx, e.pkgOf(t, base, true), InstallOptions{}); err != nil {
		t.Fatal(err)
	}
	wide := replaceOnce(t, base, "tools:\n", strings.Replace(strings.Replace(extraTool, "%s", "send", 1), "%s", "write", 1))
	wide = replaceOnce(t, wide, "deny:  [workspace://**/.env*, workspace://**/.git/**]", "deny:  []")
	wide = replaceOnce(t, wide, "spawn: deny", "spawn: allow")
	file, err := manifest.ParseLayer("g.yaml", []byte("schema_version: 2\nkind: grant\npermissions:\n  filesystem:\n    deny: [workspace://**/.git/**]\n"))
	if err != nil {
		t.Fatal(err)
	}
	m = e.manager(t, never(t), nil)
	res, err := m.Update(ctx, e.pkgOf(t, withVersion(t, wide, "1.4.1"), true), InstallOptions{Grant: file})
	if err != nil || res.Held {
		t.Fatalf("Update(--grant) = %+v, %v; want applied", res, err)
	}
	p := res.Grant.Permissions
	if !slices.Equal(p.Filesystem.Deny, []string{"workspace://**/.git/**"}) {
		t.Errorf("deny after the headless update = %v, want the one the file keeps", p.Filesystem.Deny)
	}
	if p.Process.Spawn != "deny" {
		t.Errorf("spawn = %s: the file does not grant it", p.Process.Spawn)
	}
	if st, _ := m.Info(helper); st.Active != "1.4.1" || st.Held != "" {
		t.Errorf("state after the headless update: %+v", st)
	}
}

// TestSameVersionOtherBytes: an update with the version already installed
// but other contents is refused, and the installed plugin stays usable; the
// very same package again changes nothing.
func TestSameVersionOtherBytes(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t)
	base := baseManifest(t)
	grant, err := manifest.ParseLayerFile(filepath.Join("testdata", "grant-reports-only.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	m := e.manager(t, nil, nil)
	same := e.pkgOf(t, base, false)
	if _, err := m.Install(ctx, same, InstallOptions{Dev: true, Grant: grant}); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, e.home)
	wider := replaceOnce(t, base, "write: [workspace://.agent-output/**]", "write: [workspace://.agent-output/**, workspace://src/**]")
	for _, o := range []InstallOptions{{Dev: true}, {Dev: true, Grant: grant}} {
		_, err = m.Update(ctx, e.pkgOf(t, wider, false), o)
		wantCode(t, "Update(same version, other bytes)", err, capability.ReasonPluginRollback, "1.4.0 is already installed with other contents")
	}
	if after := snapshot(t, e.home); strings.Join(before, "\n") != strings.Join(after, "\n") {
		t.Errorf("refused update changed the state directory:\nbefore %q\nafter  %q", before, after)
	}
	if _, _, err := m.Grant(helper); err != nil {
		t.Fatalf("plugin unusable after a refused same-version update: %v", err)
	}
	if _, err := m.Consent(ctx, helper, nil); capability.ReasonOf(err) != capability.ReasonPluginNotInstalled {
		t.Errorf("Consent after a refused update = %v, want no held update", err)
	}
	res, err := m.Update(ctx, same, InstallOptions{Dev: true})
	if err != nil || res.Held {
		t.Fatalf("Update(the installed package again) = %+v, %v", res, err)
	}
	if _, _, err := m.Grant(helper); err != nil {
		t.Fatalf("grant after a no-op update: %v", err)
	}
}
