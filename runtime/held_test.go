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

// heldEnv is a trust environment with secrets/key.txt and the
// directories the Write calls name.
func heldEnv(t *testing.T) trustEnv {
	t.Helper()
	e := newTrustEnv(t)
	for _, d := range []string{"secrets", "out", "tmp", "docs"} {
		if err := os.MkdirAll(filepath.Join(e.dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	e.write(t, "secrets/key.txt", "CANARY-held-narrowing\n")
	return e
}

// decisions opens the runtime (dontAsk, no terminal) and explains each
// call "Tool path"; it returns the modes by call and the warnings.
func (e trustEnv) decisions(t *testing.T, calls ...string) (map[string]capability.Mode, []string) {
	t.Helper()
	var warns []string
	rt, err := runtime.Open(t.Context(), runtime.Options{Dir: e.dir, Home: e.home, Audit: nopSink{},
		Mode: 3, Warn: func(err error) { warns = append(warns, err.Error()) }})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	got := map[string]capability.Mode{}
	for _, c := range calls {
		tool, path, _ := strings.Cut(c, " ")
		in, _ := json.Marshal(map[string]string{"path": path, "content": "x"})
		if tool == "Read" {
			in, _ = json.Marshal(map[string]string{"path": path})
		}
		ex, err := rt.Explain(t.Context(), tool, in)
		if err != nil {
			t.Fatal(err)
		}
		got[c] = ex.Decision.Mode
	}
	return got, warns
}

func checkDecisions(t *testing.T, when string, got map[string]capability.Mode, want map[string]capability.Mode) {
	t.Helper()
	for c, w := range want {
		if got[c] != w {
			t.Errorf("%s: %s = %v, want %v", when, c, got[c], w)
		}
	}
}

// TestHeldFreshWorkspaceAppliesDeny: a fresh clone ships settings that
// both allow and deny. The allow widens the built-in defaults and waits
// for `norma policy trust`; the deny narrows and applies at once, and the
// warning says which is which. After Trust both apply.
func TestHeldFreshWorkspaceAppliesDeny(t *testing.T) {
	e := heldEnv(t)
	e.write(t, settings.WorkspaceFile, "permissions:\n  allow: [\"Write(out/**)\"]\n  deny: [\"Read(./secrets/**)\"]\n")
	calls := []string{"Read secrets/key.txt", "Write out/a.md", "Read notes.md"}
	got, warns := e.decisions(t, calls...)
	checkDecisions(t, "held", got, map[string]capability.Mode{
		"Read secrets/key.txt": capability.Deny, // the deny applies now
		"Write out/a.md":       capability.Deny, // the allow waits (dontAsk: no approval)
		"Read notes.md":        capability.Allow,
	})
	const summary = "held: 1 allow rule waits for `norma policy trust`; 1 deny rule applies now"
	if len(warns) != 1 || !strings.Contains(warns[0], "not applied, except the parts that narrow") || !strings.Contains(warns[0], summary) {
		t.Errorf("warnings = %q, want one with %q", warns, summary)
	}
	cs, err := runtime.Changes(e.dir, e.home)
	if err != nil || len(cs) != 1 || !cs[0].Held || !cs[0].FirstSight {
		t.Fatalf("Changes = %+v, %v", cs, err)
	}
	if l := runtime.DeltaLines(cs[0].Delta); len(l) == 0 || l[0] != summary {
		t.Errorf("DeltaLines (the policy trust listing) = %q, want %q first", l, summary)
	}
	// Nothing of the held file was recorded: it is still held.
	if _, warns := e.decisions(t); len(warns) != 1 {
		t.Errorf("second run: warnings %q, want the file still held", warns)
	}
	if err := runtime.Trust(e.dir, e.home, "test", cs); err != nil {
		t.Fatal(err)
	}
	got, warns = e.decisions(t, calls...)
	checkDecisions(t, "trusted", got, map[string]capability.Mode{
		"Read secrets/key.txt": capability.Deny,
		"Write out/a.md":       capability.Allow,
		"Read notes.md":        capability.Allow,
	})
	if len(warns) != 0 {
		t.Errorf("after Trust: warnings %q", warns)
	}
}

// TestHeldChangeOfAcceptedVersion: from an accepted version, a change
// that adds a deny, drops an allow and adds another allow: the deny and
// the removal apply at once, the new allow waits; after Trust it applies.
func TestHeldChangeOfAcceptedVersion(t *testing.T) {
	e := heldEnv(t)
	e.write(t, settings.WorkspaceFile, "permissions:\n  allow: [\"Write(out/**)\", \"Write(tmp/**)\"]\n")
	trustAll(t, e)
	calls := []string{"Read secrets/key.txt", "Write out/a.md", "Write tmp/a.md", "Write docs/a.md"}
	got, _ := e.decisions(t, calls...)
	checkDecisions(t, "accepted", got, map[string]capability.Mode{
		"Read secrets/key.txt": capability.Allow,
		"Write out/a.md":       capability.Allow,
		"Write tmp/a.md":       capability.Allow,
		"Write docs/a.md":      capability.Deny,
	})

	e.write(t, settings.WorkspaceFile, "permissions:\n  allow: [\"Write(out/**)\", \"Write(docs/**)\"]\n  deny: [\"Read(secrets/**)\"]\n")
	got, warns := e.decisions(t, calls...)
	checkDecisions(t, "held", got, map[string]capability.Mode{
		"Read secrets/key.txt": capability.Deny,  // a new deny: now
		"Write out/a.md":       capability.Allow, // kept
		"Write tmp/a.md":       capability.Deny,  // an allow removed: now
		"Write docs/a.md":      capability.Deny,  // a new allow: waits
	})
	const summary = "held: 1 allow rule waits for `norma policy trust`; 1 removed allow rule and 1 deny rule apply now"
	if len(warns) != 1 || !strings.Contains(warns[0], summary) || !strings.Contains(warns[0], "changed since it was accepted") {
		t.Errorf("warnings = %q, want one with %q", warns, summary)
	}

	trustAll(t, e)
	got, warns = e.decisions(t, calls...)
	checkDecisions(t, "trusted", got, map[string]capability.Mode{
		"Read secrets/key.txt": capability.Deny,
		"Write out/a.md":       capability.Allow,
		"Write tmp/a.md":       capability.Deny,
		"Write docs/a.md":      capability.Allow,
	})
	if len(warns) != 0 {
		t.Errorf("after Trust: warnings %q", warns)
	}
}

// TestHeldOnlyAllowRemoved: a change that only drops an allow narrows: it
// is not held at all, and applies (and is accepted) at once.
func TestHeldOnlyAllowRemoved(t *testing.T) {
	e := heldEnv(t)
	e.write(t, settings.WorkspaceFile, "permissions:\n  allow: [\"Write(out/**)\", \"Write(tmp/**)\"]\n")
	trustAll(t, e)
	e.write(t, settings.WorkspaceFile, "permissions:\n  allow: [\"Write(out/**)\"]\n")
	got, warns := e.decisions(t, "Write tmp/a.md", "Write out/a.md")
	checkDecisions(t, "narrowed", got, map[string]capability.Mode{"Write tmp/a.md": capability.Deny, "Write out/a.md": capability.Allow})
	if len(warns) != 0 {
		t.Errorf("a narrowing warned: %q", warns)
	}
}

// TestHeldPolicyAppliesNarrowing: a workspace policy is held the same
// way: at first sight its deny globs and its lower read ceiling apply,
// while the private range it admits waits.
func TestHeldPolicyAppliesNarrowing(t *testing.T) {
	e := heldEnv(t)
	e.write(t, runtime.PolicyFile, "schema_version: 2\nkind: workspace\npermissions:\n"+
		"  filesystem:\n    read: [\"workspace://docs/**\", \"workspace://secrets/**\", \"workspace://notes.md\"]\n    deny: [\"workspace://secrets/**\"]\n"+
		"  network: {allow_private: [\"127.0.0.1/32\"]}\n")
	e.write(t, "docs/a.md", "a\n")
	e.write(t, "other.txt", "x\n")
	calls := []string{"Read secrets/key.txt", "Read docs/a.md", "Read notes.md", "Read other.txt"}
	got, warns := e.decisions(t, calls...)
	checkDecisions(t, "held", got, map[string]capability.Mode{
		"Read secrets/key.txt": capability.Deny, // the deny glob
		"Read docs/a.md":       capability.Allow,
		"Read notes.md":        capability.Allow,
		"Read other.txt":       capability.Deny, // outside the read ceiling
	})
	const summary = "held: 1 private address range waits for `norma policy trust`; 1 changed read glob and 1 deny glob apply now"
	if len(warns) != 1 || !strings.Contains(warns[0], summary) {
		t.Errorf("warnings = %q, want one with %q", warns, summary)
	}
	cs, err := runtime.Changes(e.dir, e.home)
	if err != nil || len(cs) != 1 || cs[0].File != runtime.PolicyFile || !cs[0].Held {
		t.Fatalf("Changes = %+v, %v", cs, err)
	}
	if err := runtime.Trust(e.dir, e.home, "test", cs); err != nil {
		t.Fatal(err)
	}
	got, warns = e.decisions(t, calls...)
	checkDecisions(t, "trusted", got, map[string]capability.Mode{
		"Read secrets/key.txt": capability.Deny,
		"Read docs/a.md":       capability.Allow,
		"Read other.txt":       capability.Deny,
	})
	if len(warns) != 0 {
		t.Errorf("after Trust: warnings %q", warns)
	}
}

// TestHeldDeclinedAtTerminal: a no at the terminal keeps the widening
// held, and the narrowing parts still apply.
func TestHeldDeclinedAtTerminal(t *testing.T) {
	e := heldEnv(t)
	e.write(t, settings.LocalFile, "permissions:\n  allow: [\"Write(out/**)\"]\n  ask: [\"Read(secrets/**)\"]\n")
	asked := 0
	rt, err := runtime.Open(t.Context(), runtime.Options{Dir: e.dir, Home: e.home, Audit: nopSink{}, Mode: 3,
		Accept: func(c runtime.FileChange) bool {
			asked++
			if !strings.Contains(c.String(), "held: 1 allow rule waits for `norma policy trust`; 1 ask rule applies now") {
				t.Errorf("the prompt's text:\n%s", c)
			}
			return false
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	ex, err := rt.Explain(t.Context(), "Read", json.RawMessage(`{"path":"secrets/key.txt"}`))
	if err != nil {
		t.Fatal(err)
	}
	// ask in dontAsk: denied.
	if asked != 1 || ex.Decision.Mode != capability.Deny {
		t.Errorf("asked %d, Read secrets/key.txt %v; want asked once, deny", asked, ex.Decision.Mode)
	}
}

// trustAll accepts every change of e's workspace, as `norma policy trust`
// does.
func trustAll(t *testing.T, e trustEnv) {
	t.Helper()
	cs, err := runtime.Changes(e.dir, e.home)
	if err != nil {
		t.Fatal(err)
	}
	if err := runtime.Trust(e.dir, e.home, "test", cs); err != nil {
		t.Fatal(err)
	}
}
