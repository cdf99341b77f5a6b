package sandbox_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/internal/treetest"
	"github.com/norma-run/norma/sandbox"
)

// TestFreezeKeepsAgentFiles performs, with a real shell, the writes,
// creations, renames, removals and link swaps a process would use to
// plant a file an agent loads in a frozen directory, through a symbolic
// link to one, or in place of a link leading outside the grants: each
// must fail, a denied file inside a frozen directory stays hidden, and
// the host tree is byte-for-byte the same afterwards. Reads of frozen
// files and writes elsewhere in the grant still work, and a negative
// control shows that the same write succeeds without Freeze.
func TestFreezeKeepsAgentFiles(t *testing.T) {
	requireSandbox(t)
	ws, outside := t.TempDir(), t.TempDir()
	const canary = "canary-frozen-4b1e"
	for name, body := range map[string]string{
		".claude/settings.json": canary + "\n",
		".claude/agents/a.md":   "agent\n",
		"cfg/settings.json":     "{}\n",
		".git/config":           "[core]\n\tbare = false\n",
		".git/HEAD":             "ref: refs/heads/main\n",
		"docs/readme.md":        "docs\n",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(ws, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		mustWrite(t, filepath.Join(ws, name), body)
	}
	if err := os.Symlink("cfg", filepath.Join(ws, ".vscode")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(ws, ".codex")); err != nil {
		t.Fatal(err)
	}
	freeze := []string{filepath.Join(ws, ".claude"), filepath.Join(ws, ".vscode"), filepath.Join(ws, ".codex"), filepath.Join(ws, ".git/config")}
	spec := func(script string, freeze []string) sandbox.Spec {
		return sandbox.Spec{
			Argv:      []string{"/bin/sh", "-c", script},
			Dir:       ws,
			ReadWrite: []string{ws},
			Deny:      []string{filepath.Join(ws, ".claude/settings.json")},
			Freeze:    freeze,
		}
	}
	before := treetest.Snapshot(t, ws)
	outsideBefore := treetest.Snapshot(t, outside)
	attacks := []string{
		"echo {} > .claude/settings.local.json",
		"mkdir .claude/hooks",
		"echo x >> .claude/agents/a.md",
		"rm .claude/agents/a.md",
		"mv .claude/agents .claude/b",
		"mv .claude .c2",
		"rm -rf .claude",
		"mv .claude .c2 && mkdir .claude && echo {} > .claude/settings.local.json",
		"cat .claude/settings.json",
		"echo {} > .vscode/tasks.json",
		"echo {} > cfg/tasks.json",
		"mv cfg cfg2",
		"rm .vscode && mkdir .vscode && echo {} > .vscode/tasks.json",
		"ln -sfn docs .vscode",
		"mv .vscode v2",
		"rm .codex && mkdir .codex && echo x > .codex/config.toml",
		"mv .codex c2",
		"echo x >> .git/config",
		"cp .git/config c && echo '[core] fsmonitor = x' >> c && mv c .git/config",
		"ln -f docs/readme.md .git/config",
		"mv .git .g2",
		"rm -f .git/config",
		"ln .claude/agents/a.md here.md",
	}
	for _, a := range attacks {
		res, o := run(t, spec(a, freeze))
		out := o.stdout.String() + o.stderr.String()
		if res.ExitCode == 0 {
			t.Errorf("%q succeeded in the sandbox; output %q", a, out)
		}
		if o.stderr.Len() == 0 {
			t.Errorf("%q failed without an error on stderr", a)
		}
		if strings.Contains(out, canary) {
			t.Errorf("%q printed the hidden canary: %q", a, out)
		}
		// What an attack may leave beside the frozen names (c, here.md)
		// is removed, so that only changes to what was there count.
		for _, extra := range []string{"c", "here.md"} {
			os.RemoveAll(filepath.Join(ws, extra))
		}
		treetest.Equal(t, ws, before)
		treetest.Equal(t, outside, outsideBefore)
	}
	// Reading stays possible, and so does writing beside the frozen names.
	res, o := run(t, spec("cat .claude/agents/a.md .vscode/settings.json .git/config >/dev/null && echo hi > new.txt && echo ref > .git/ORIG_HEAD", freeze))
	if res.ExitCode != 0 {
		t.Fatalf("reads and ordinary writes failed: %+v %q", res, o.stderr.String())
	}
	if b, err := os.ReadFile(filepath.Join(ws, "new.txt")); err != nil || string(b) != "hi\n" {
		t.Errorf("new.txt = %q, %v; want hi", b, err)
	}
	// Negative control: without Freeze the planting goes through.
	if res, o := run(t, spec("echo {} > .claude/settings.local.json && rm .vscode", nil)); res.ExitCode != 0 {
		t.Errorf("without Freeze, the write failed: %+v %q; the test proves nothing", res, o.stderr.String())
	}
}

// TestFreezeRefusesMissing: a frozen name whose link leads to a missing
// name inside a read-write grant would let the process create it; the
// sandbox refuses to start (SANDBOX_SPEC_INVALID) rather than leave it.
func TestFreezeRefusesMissing(t *testing.T) {
	requireSandbox(t)
	ws := t.TempDir()
	if err := os.Symlink("cfg", filepath.Join(ws, ".claude")); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{".claude", ".gemini"} {
		_, err := sandbox.Run(t.Context(), sandbox.Spec{Argv: []string{"/bin/true"}, ReadWrite: []string{ws},
			Freeze: []string{filepath.Join(ws, name)}})
		if capability.ReasonOf(err) != capability.ReasonSandboxSpecInvalid {
			t.Errorf("Freeze of missing %s: %v; want SANDBOX_SPEC_INVALID", name, err)
		}
	}
}

// BenchmarkLaunchFreeze is the cost of the agent-file floor on a launch:
// /bin/true with a read-write workspace grant and 0 or 10 frozen paths
// (the floor of a repository: 7 directories and 3 files, the ancestor
// .git pinned).
func BenchmarkLaunchFreeze(b *testing.B) {
	requireSandbox(b)
	ws := b.TempDir()
	var frozen []string
	for _, d := range []string{".claude", ".codex", ".gemini", ".cursor", ".vscode", ".git/hooks", ".git/info"} {
		if err := os.MkdirAll(filepath.Join(ws, d), 0o755); err != nil {
			b.Fatal(err)
		}
		frozen = append(frozen, filepath.Join(ws, d))
	}
	for _, f := range []string{".git/config", ".mcp.json", ".envrc"} {
		if err := os.WriteFile(filepath.Join(ws, f), nil, 0o644); err != nil {
			b.Fatal(err)
		}
		frozen = append(frozen, filepath.Join(ws, f))
	}
	for _, n := range []int{0, len(frozen)} {
		b.Run(fmt.Sprintf("frozen=%d", n), func(b *testing.B) {
			s := sandbox.Spec{Argv: []string{"/bin/true"}, ReadWrite: []string{ws}, Freeze: frozen[:n]}
			for b.Loop() {
				res, err := sandbox.Run(b.Context(), s)
				if err != nil || res.ExitCode != 0 {
					b.Fatalf("Run(true) = %+v, %v", res, err)
				}
			}
		})
	}
}
