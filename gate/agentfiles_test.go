package gate_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/gate"
	"github.com/norma-run/norma/guard/fsguard"
	"github.com/norma-run/norma/manifest"
	"github.com/norma-run/norma/policy"
)

// agentFilesSet allows reading and writing the whole workspace, but
// denies cfgdeny/**: the floor of the agent-file catalogue must hold
// whatever the policy allows.
func agentFilesSet(t *testing.T) *policy.Set {
	t.Helper()
	m, err := manifest.Parse("m.yaml", []byte(`schema_version: 2
id: com.example.agent-files
version: 1.0.0
entrypoint: bin/x
tools:
  - name: Write
    effects: {data: none, external_state: none}
    approval: never
permissions:
  filesystem:
    read: [workspace://**]
    write: [workspace://**]
    deny: [workspace://secretdir/**]
  process:
    spawn: allow
`))
	if err != nil {
		t.Fatal(err)
	}
	s, err := policy.Compile(policy.Inputs{Manifest: m, Host: policy.Host{Sandbox: true}})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestAgentFilesFloor: a write of a file an agent loads as code is denied
// AGENT_FILE_PROTECTED in every mode, whatever the rules allow, by the
// name given and by the name links resolve to; a write of an instruction
// file asks in every mode (dontAsk denies); the handler never runs.
func TestAgentFilesFloor(t *testing.T) {
	ws := t.TempDir()
	home := t.TempDir()
	t.Setenv("HOME", home)
	for _, d := range []string{"cfg", "src", "secretdir"} {
		if err := os.MkdirAll(filepath.Join(ws, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	links := map[string]string{".claude": "cfg", "notes": "secretdir", "CLAUDE.md": "src/guide.md", "src/hooks": "../.git/hooks"}
	if err := os.MkdirAll(filepath.Join(ws, ".git", "hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(ws, name)); err != nil {
			t.Fatal(err)
		}
	}
	rules := policy.Rules{Allow: []string{"Write", "Bash(echo:*)"}}
	for _, mode := range []gate.Mode{gate.ModeDefault, gate.ModeAcceptEdits, gate.ModeBypass, gate.ModeDontAsk} {
		f := newFixture(t, withRules(rules), withMode(mode), func(o *gate.Options, f *fixture) {
			f.pol.d = agentFilesSet(t)
			fs, err := fsguard.New(ws, f.pol)
			if err != nil {
				t.Fatal(err)
			}
			o.Workspace, o.Resolve = ws, fs.Resolve
		})
		ask := capability.ApprovalRequired
		if mode == gate.ModeDontAsk {
			ask = capability.Deny
		}
		// Any other write under .git/ or .claude/ asks whatever allows
		// it, as in Claude Code (its protected paths), but in bypass.
		prot, protReason := ask, capability.ReasonApprovalRequired
		switch mode {
		case gate.ModeBypass:
			prot, protReason = capability.Allow, capability.ReasonAllowed
		case gate.ModeDontAsk:
			protReason = capability.ReasonModeDenied
		}
		for _, tc := range []struct {
			c      gate.Call
			want   capability.Mode
			reason capability.Reason
		}{
			{write(".claude/settings.local.json"), capability.Deny, capability.ReasonAgentFileProtected},
			{write(".claude/agents/x.md"), capability.Deny, capability.ReasonAgentFileProtected},
			{write(".claude/skills/s/SKILL.md"), capability.Deny, capability.ReasonAgentFileProtected},
			{write(".Claude/Settings.JSON"), capability.Deny, capability.ReasonAgentFileProtected},
			{write("./src/../.mcp.json"), capability.Deny, capability.ReasonAgentFileProtected},
			{write(".codex/config.toml"), capability.Deny, capability.ReasonAgentFileProtected},
			{write(".gemini/settings.json"), capability.Deny, capability.ReasonAgentFileProtected},
			{write(".cursor/mcp.json"), capability.Deny, capability.ReasonAgentFileProtected},
			{write(".vscode/tasks.json"), capability.Deny, capability.ReasonAgentFileProtected},
			{write(".git/config"), capability.Deny, capability.ReasonAgentFileProtected},
			{write("src/hooks/pre-commit"), capability.Deny, capability.ReasonAgentFileProtected}, // resolves to .git/hooks
			{write(".envrc"), capability.Deny, capability.ReasonAgentFileProtected},
			{bash("echo '{}' > .claude/settings.local.json"), capability.Deny, capability.ReasonAgentFileProtected},
			{bash("echo x >> .git/config"), capability.Deny, capability.ReasonAgentFileProtected},
			// The policy's deny globs hold for the name given too.
			{write("notes/key.txt"), capability.Deny, capability.ReasonFilesystemWriteDenied},
			{write("CLAUDE.md"), ask, capability.ReasonInstructionFile},
			{write("src/guide.md"), capability.Allow, capability.ReasonAllowed}, // the same file, by a name no agent loads
			{write("docs/AGENTS.md"), ask, capability.ReasonInstructionFile},
			{write(".git/index"), prot, protReason},
			{write("cfg/notes.txt"), prot, protReason},
			// cfg is what the agent loads as .claude.
			{write("cfg/settings.local.json"), capability.Deny, capability.ReasonAgentFileProtected},
			{write("cfg/agents/x.md"), capability.Deny, capability.ReasonAgentFileProtected},
		} {
			e := f.g.Explain(t.Context(), tc.c)
			reason := e.Decision.Reason
			if mode == gate.ModeDontAsk && tc.reason == capability.ReasonInstructionFile {
				reason = capability.ReasonInstructionFile // dontAsk reports MODE_DENIED
				if e.Decision.Reason != capability.ReasonModeDenied {
					t.Errorf("%s %s: reason %s, want MODE_DENIED", mode, tc.c.Input, e.Decision.Reason)
				}
			}
			if e.Decision.Mode != tc.want || reason != tc.reason {
				t.Errorf("%s %s: %s %s (%s), want %s %s", mode, tc.c.Input, e.Decision.Mode, e.Decision.Reason, e.Decision.Rule, tc.want, tc.reason)
			}
			if tc.want == capability.Deny {
				before := f.calls.Load()
				if r := f.g.Execute(t.Context(), tc.c); !r.IsError {
					t.Errorf("%s %s: Execute ran: %s", mode, tc.c.Input, r.Content)
				}
				if f.calls.Load() != before {
					t.Errorf("%s %s: the handler ran", mode, tc.c.Input)
				}
			}
		}
	}
}

// TestAgentFilesFloorHome: when the workspace contains $HOME, the user's
// own agent and shell files are protected too.
func TestAgentFilesFloorHome(t *testing.T) {
	ws := t.TempDir()
	if err := os.MkdirAll(filepath.Join(ws, "u"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", filepath.Join(ws, "u"))
	f := newFixture(t, withRules(policy.Rules{Allow: []string{"Write"}}), withMode(gate.ModeBypass), func(o *gate.Options, f *fixture) {
		f.pol.d = agentFilesSet(t)
		fs, err := fsguard.New(ws, f.pol)
		if err != nil {
			t.Fatal(err)
		}
		o.Workspace, o.Resolve = ws, fs.Resolve
	})
	for in, want := range map[string]capability.Mode{"u/.bashrc": capability.Deny, "u/.claude/settings.json": capability.Deny, "u/.ssh/config": capability.Deny, ".bashrc": capability.Allow, "u/notes.txt": capability.Allow} {
		if e := f.g.Explain(t.Context(), write(in)); e.Decision.Mode != want {
			t.Errorf("%s: %s %s, want %s", in, e.Decision.Mode, e.Decision.Reason, want)
		}
	}
}

func write(p string) gate.Call { return call("Write", `{"path":"`+p+`"}`) }

// TestAgentFilesHardLink: another agent's write of a file with a second
// name (here .claude/settings.local.json) is refused; Norma's own write,
// which replaces the name and never changes the other, is not.
func TestAgentFilesHardLink(t *testing.T) {
	ws := t.TempDir()
	if err := os.MkdirAll(filepath.Join(ws, ".claude"), 0o755); err != nil {
		t.Fatal(err)
	}
	settings := filepath.Join(ws, ".claude", "settings.local.json")
	if err := os.WriteFile(settings, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(settings, filepath.Join(ws, "notes.json")); err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, withRules(policy.Rules{Allow: []string{"Write"}}), func(o *gate.Options, f *fixture) {
		f.pol.d = agentFilesSet(t)
		fs, err := fsguard.New(ws, f.pol)
		if err != nil {
			t.Fatal(err)
		}
		o.Workspace, o.Resolve = ws, fs.Resolve
	})
	unc := write("notes.json")
	unc.Unconfined = &gate.AgentShell{}
	if e := f.g.Explain(t.Context(), unc); e.Decision.Mode != capability.Deny || e.Decision.Reason != capability.ReasonHardlinkRefused {
		t.Errorf("unconfined write of a hard link: %s %s, want HARDLINK_REFUSED", e.Decision.Mode, e.Decision.Reason)
	}
	if e := f.g.Explain(t.Context(), write("notes.json")); e.Decision.Mode != capability.Allow {
		t.Errorf("confined write of a hard link: %s %s, want allowed", e.Decision.Mode, e.Decision.Reason)
	}
}
