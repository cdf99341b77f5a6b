package agenthook

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/norma-run/norma/gate/gatetest"
	"github.com/norma-run/norma/settings"
)

// BenchmarkDecideWrite is one PreToolUse decision of a Claude Code Write
// in acceptEdits by a warm engine (the daemon's case): of a plain path
// (docs/a.md), and through a symbolic link (docs → notes), where the gate
// decides the name given and the resolved one. Both ask the agent-file
// catalogue. bench/compare_hookwrite.sh runs it beside the same file on
// an earlier commit; it depends on nothing but the package's exported
// API, so that both build it.
func BenchmarkDecideWrite(b *testing.B) {
	b.Run("plain", func(b *testing.B) { benchDecideWrite(b, false) })
	b.Run("link", func(b *testing.B) { benchDecideWrite(b, true) })
}

func benchDecideWrite(b *testing.B, link bool) {
	ws, _ := filepath.EvalSymlinks(b.TempDir())
	userDir := b.TempDir()
	if !link {
		if err := os.Mkdir(filepath.Join(ws, "docs"), 0o755); err != nil {
			b.Fatal(err)
		}
	} else {
		if err := os.Mkdir(filepath.Join(ws, "notes"), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.Symlink("notes", filepath.Join(ws, "docs")); err != nil {
			b.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(userDir, "settings.yaml"), []byte("permissions:\n  allow: [\"Bash(git status:*)\"]\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	// A workspace is not made the moment before its first call: stamps
	// older than a file system's clock tick.
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
	in := []byte(`{"session_id":"s","transcript_path":"/tmp/t.jsonl","cwd":"` + ws + `","permission_mode":"acceptEdits","hook_event_name":"PreToolUse","tool_name":"Write","tool_use_id":"toolu_b","tool_input":{"file_path":"` + filepath.Join(ws, "docs", "a.md") + `","content":"hello\n"}}`)
	if out, exit := Handle(b.Context(), Claude{}, eng, in); exit != 0 {
		b.Fatalf("exit %d: %s", exit, out)
	}
	start := cpuTime()
	n := 0
	for b.Loop() {
		Handle(b.Context(), Claude{}, eng, in)
		n++
	}
	// The process's CPU time per decision: on a loaded machine, wall time
	// also counts the waits for a core; this does not.
	b.ReportMetric(float64(cpuTime()-start)/float64(n), "cpu-ns/op")
}

// cpuTime is the user and system CPU time of this process, in ns.
func cpuTime() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
