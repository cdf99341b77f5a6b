package runtime_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/runtime"
	"github.com/norma-run/norma/settings"
)

func parseSettings(t *testing.T, body string) *settings.File {
	t.Helper()
	if body == "none" {
		return nil
	}
	f, err := settings.Parse("/ws/.norma/settings.yaml", []byte(body), settings.ScopeWorkspace, "/ws")
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestSettingsDelta: a settings file's change is classified by the
// manifest diff engine, in both directions.
func TestSettingsDelta(t *testing.T) {
	for _, tc := range []struct {
		name     string
		old, new string
		widens   bool
		back     bool // new → old widens
	}{
		{"an allow rule", "none", "permissions: {allow: [\"Bash(curl:*)\"]}\n", true, false},
		{"a deny rule", "none", "permissions: {deny: [\"Read(docs/**)\"]}\n", false, true},
		{"an ask rule", "none", "permissions: {ask: [\"Bash\"]}\n", false, true},
		{"acceptEdits mode", "permissions: {defaultMode: default}\n", "permissions: {defaultMode: acceptEdits}\n", true, false},
		{"plan mode", "none", "permissions: {defaultMode: plan}\n", false, true},
		{"a network destination", "none", "network: {requests: [{origin: \"https://a.example\", methods: [GET], paths: [\"/x\"]}]}\n", true, false},
		{"a private range", "none", "network: {allow_private: [\"127.0.0.1/32\"]}\n", true, false},
		{"an env entry", "none", "env: {LANG: C}\n", true, false},
		{"an env value", "env: {LANG: C}\n", "env: {LANG: en_US.UTF-8}\n", true, true},
		{"a hook", "none", "hooks: {PreToolUse: [{hooks: [{type: command, command: ./.norma/hooks/h}]}]}\n", true, true},
		{"an additional directory", "none", "permissions: {additionalDirectories: [/srv]}\n", true, false},
		{"comments only", "permissions: {allow: [Read]}\n", "# note\npermissions:\n  allow: [Read]\n", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := runtime.SettingsDelta(parseSettings(t, tc.old), parseSettings(t, tc.new))
			if d.NeedsConsent() != tc.widens {
				t.Errorf("old → new NeedsConsent = %v, want %v: %+v", d.NeedsConsent(), tc.widens, d)
			}
			if b := runtime.SettingsDelta(parseSettings(t, tc.new), parseSettings(t, tc.old)); b.NeedsConsent() != tc.back {
				t.Errorf("new → old NeedsConsent = %v, want %v: %+v", b.NeedsConsent(), tc.back, b)
			}
		})
	}
}

// trustEnv is a workspace and a state directory.
type trustEnv struct{ dir, home string }

func newTrustEnv(t *testing.T) trustEnv {
	return trustEnv{dir: newWorkspace(t, ""), home: t.TempDir()}
}

func (e trustEnv) write(t *testing.T, rel, body string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(e.dir, rel), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// open opens the runtime in dontAsk and returns how Read of notes.md and
// the warnings were decided.
func (e trustEnv) open(t *testing.T, accept func(runtime.FileChange) bool) (*runtime.Runtime, capability.Mode, []string) {
	t.Helper()
	var warns []string
	rt, err := runtime.Open(t.Context(), runtime.Options{Dir: e.dir, Home: e.home, Audit: nopSink{},
		Mode: 3, Accept: accept, Warn: func(err error) { warns = append(warns, err.Error()) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	ex, err := rt.Explain(t.Context(), "Read", json.RawMessage(`{"path":"notes.md"}`))
	if err != nil {
		t.Fatal(err)
	}
	return rt, ex.Decision.Mode, warns
}

// TestOpenAppliesAcceptedVersions: at first sight a narrowing file applies
// and becomes the accepted version; a widening one is held with a warning
// carrying the delta (escaped), and the accepted version stays in force
// until Trust records the change; a terminal's yes (Accept) applies it at
// once; removing an accepted deny is a widening too.
func TestOpenAppliesAcceptedVersions(t *testing.T) {
	e := newTrustEnv(t)
	deny := "permissions: {deny: [\"Read(notes.md)\"]}\n"
	e.write(t, settings.WorkspaceFile, deny)
	if _, m, warns := e.open(t, nil); m != capability.Deny || len(warns) != 0 {
		t.Fatalf("a narrowing at first sight: Read %v, warnings %q; want deny, none", m, warns)
	}
	// The deny is now the accepted version: dropping it widens.
	e.write(t, settings.WorkspaceFile, "network: {requests: [{origin: \"https://a.example\", methods: [GET], paths: [\"/a\\e[8mb\"]}]}\n")
	rt, m, warns := e.open(t, nil)
	if m != capability.Deny {
		t.Errorf("a held widening applied: Read %v", m)
	}
	if len(warns) != 1 || !strings.Contains(warns[0], "not applied") || !strings.Contains(warns[0], "+ widened permissions.deny Read(notes.md)") {
		t.Errorf("warnings = %q", warns)
	}
	if strings.ContainsRune(warns[0], 0x1b) || !strings.Contains(warns[0], `\x1b[8m`) {
		t.Errorf("the delta is not escaped: %q", warns[0])
	}
	if cs := rt.Changes(); len(cs) != 1 || !cs[0].Held || cs[0].File != settings.WorkspaceFile {
		t.Errorf("Changes = %+v", cs)
	}
	// A no at the terminal keeps it held; a yes applies it.
	if _, m, _ := e.open(t, func(runtime.FileChange) bool { return false }); m != capability.Deny {
		t.Errorf("declined, Read %v", m)
	}
	asked := 0
	if _, m, _ := e.open(t, func(runtime.FileChange) bool { asked++; return true }); m != capability.Allow || asked != 1 {
		t.Errorf("accepted at the terminal: Read %v, asked %d", m, asked)
	}
	if _, m, warns := e.open(t, nil); m != capability.Allow || len(warns) != 0 {
		t.Errorf("after acceptance: Read %v, warnings %q", m, warns)
	}
}

// TestTrustRecordsWhatWasShown: Trust accepts the content Changes read,
// not what the file holds by then.
func TestTrustRecordsWhatWasShown(t *testing.T) {
	e := newTrustEnv(t)
	e.write(t, runtime.PolicyFile, "schema_version: 2\nkind: workspace\npermissions:\n  network: {requests: []}\n")
	if _, _, w := e.open(t, nil); len(w) != 0 {
		t.Fatalf("a narrowing policy warned: %q", w)
	}
	e.write(t, runtime.PolicyFile, "schema_version: 2\nkind: workspace\npermissions:\n  network: {allow_private: [\"127.0.0.1/32\"]}\n")
	cs, err := runtime.Changes(e.dir, e.home)
	if err != nil || len(cs) != 1 || !cs[0].Held {
		t.Fatalf("Changes = %+v, %v", cs, err)
	}
	// Meanwhile the file changes again, to something wider still.
	e.write(t, settings.LocalFile, "permissions: {allow: [Bash]}\n")
	if err := runtime.Trust(e.dir, e.home, "test", cs); err != nil {
		t.Fatal(err)
	}
	cs, err = runtime.Changes(e.dir, e.home)
	if err != nil || len(cs) != 1 || cs[0].File != settings.LocalFile || !cs[0].Held {
		t.Errorf("after Trust, Changes = %+v, %v; want only the later local file, held", cs, err)
	}
}

// TestAcceptLocalAllowKeepsAHold: an "always" answer adds its rule to the
// accepted version of the local file; a widening the file already held
// stays held.
func TestAcceptLocalAllowKeepsAHold(t *testing.T) {
	e := newTrustEnv(t)
	e.write(t, settings.LocalFile, "permissions: {allow: [\"Bash(curl:*)\"]}\n") // the agent's
	if err := settings.AddLocalAllow(e.dir, "Read(notes.md)"); err != nil {
		t.Fatal(err)
	}
	if err := settings.AcceptLocalAllow(e.home, e.dir, "Read(notes.md)"); err != nil {
		t.Fatal(err)
	}
	cs, err := runtime.Changes(e.dir, e.home)
	if err != nil || len(cs) != 1 || !cs[0].Held || len(cs[0].Delta.Added) != 1 || cs[0].Delta.Added[0].Item != "Bash(curl:*)" {
		t.Errorf("Changes = %+v, %v; want only Bash(curl:*) held", cs, err)
	}
}

// TestOpenHoldsAPolicyRemoval: the policy is a ceiling, so removing it, or
// replacing it by a directory, widens: the accepted ceiling stays in
// force.
func TestOpenHoldsAPolicyRemoval(t *testing.T) {
	e := newTrustEnv(t)
	e.write(t, runtime.PolicyFile, "schema_version: 2\nkind: workspace\npermissions:\n  filesystem: {deny: [\"workspace://notes.md\"]}\n")
	if _, m, w := e.open(t, nil); m != capability.Deny || len(w) != 0 {
		t.Fatalf("the accepted deny: Read %v, warnings %q", m, w)
	}
	p := filepath.Join(e.dir, runtime.PolicyFile)
	for _, replace := range []func() error{
		func() error { return os.Remove(p) },
		func() error { return os.Mkdir(p, 0o755) },
	} {
		if err := replace(); err != nil {
			t.Fatal(err)
		}
		rt, m, w := e.open(t, nil)
		if m != capability.Deny || len(w) != 1 || !strings.Contains(w[0], "+ widened filesystem.deny workspace://notes.md") {
			t.Errorf("policy gone: Read %v, warnings %q", m, w)
		}
		if cs := rt.Changes(); len(cs) != 1 || !cs[0].Removed || !cs[0].Held {
			t.Errorf("Changes = %+v", cs)
		}
	}
}
