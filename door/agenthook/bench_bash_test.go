package agenthook

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/norma-run/norma/gate/gatetest"
	"github.com/norma-run/norma/settings"
)

// BenchmarkDecideBash is one PreToolUse decision of a Claude Code Bash
// call by a warm engine (the daemon's case): a command an allow rule
// covers (git status -s under Bash(git status:*)), and a read-only
// command no rule names (cat README.md). bench/compare_bash.sh runs it
// beside the same file on an earlier commit; it depends on nothing but
// the package's exported API, so that both build it.
func BenchmarkDecideBash(b *testing.B) {
	b.Run("allowed", func(b *testing.B) { benchDecideBash(b, "git status -s") })
	b.Run("readonly", func(b *testing.B) { benchDecideBash(b, "cat README.md") })
}

func benchDecideBash(b *testing.B, cmd string) {
	ws, _ := filepath.EvalSymlinks(b.TempDir())
	userDir := b.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "README.md"), []byte("# readme\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(userDir, "settings.yaml"), []byte("permissions:\n  allow: [\"Bash(git status:*)\"]\n  deny: [\"Read(.env)\"]\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	past := time.Now().Add(-time.Hour)
	for _, d := range []string{ws, userDir} {
		if err := os.Chtimes(d, past, past); err != nil {
			b.Fatal(err)
		}
	}
	eng, err := NewEngine(EngineOptions{Home: b.TempDir(), Settings: settings.Options{UserDir: userDir}, Audit: &gatetest.MemorySink{}})
	if err != nil {
		b.Fatal(err)
	}
	defer eng.Close()
	input, _ := json.Marshal(map[string]string{"command": cmd})
	in := []byte(`{"session_id":"s","transcript_path":"/tmp/t.jsonl","cwd":"` + ws + `","permission_mode":"default","hook_event_name":"PreToolUse","tool_name":"Bash","tool_use_id":"toolu_b","tool_input":` + string(input) + `}`)
	if out, exit := Handle(b.Context(), Claude{}, eng, in); exit != 0 {
		b.Fatalf("exit %d: %s", exit, out)
	}
	start := cpuTime()
	n := 0
	for b.Loop() {
		Handle(b.Context(), Claude{}, eng, in)
		n++
	}
	b.ReportMetric(float64(cpuTime()-start)/float64(n), "cpu-ns/op")
}
