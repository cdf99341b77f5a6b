package runtime_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/norma-run/norma/agent"
	"github.com/norma-run/norma/audit"
	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/gate"
	"github.com/norma-run/norma/gate/gatetest"
	"github.com/norma-run/norma/provider/scripted"
	"github.com/norma-run/norma/runtime"
)

// planScript enters plan mode, then tries a write, which plan mode refuses.
const planScript = `turns:
  - tool_calls:
      - {id: t1, name: TodoWrite, input: {todos: [{id: "1", content: "plan a", status: in_progress}]}}
      - {id: t2, name: EnterPlanMode, input: {}}
  - tool_calls:
      - {id: t3, name: Write, input: {path: a.md, content: "from a"}}
  - text: done
`

// writeScript writes b.md in acceptEdits.
const writeScript = `turns:
  - tool_calls:
      - {id: t1, name: TodoWrite, input: {todos: [{id: "1", content: "write b", status: completed}]}}
      - {id: t2, name: Write, input: {path: b.md, content: "from b"}}
  - text: done
`

// TestManySessions: one runtime serves two sessions of two runs at once,
// and explains beside them. Each session has its own gate binding (plan
// mode entered by one does not reach the other), its own todo list under
// its run, and its calls audited under its run id; a second session of a
// run is refused while the first exists.
func TestManySessions(t *testing.T) {
	dir := newWorkspace(t, "")
	home := t.TempDir()
	sink := &gatetest.MemorySink{}
	rt, err := runtime.Open(t.Context(), runtime.Options{Dir: dir, Home: home, RunID: "run-a", Mode: gate.ModeAcceptEdits, Audit: sink})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	opts := func(script string) []agent.Option {
		return []agent.Option{agent.WithProvider(scripted.New(mustScript(t, script)), "scripted"), agent.WithStateDir(home)}
	}
	// run-a is the runtime's own run; run-b another.
	sa, err := rt.Session(t.Context(), opts(planScript)...)
	if err != nil {
		t.Fatal(err)
	}
	defer sa.Close()
	sb, err := rt.SessionOf(t.Context(), "run-b", false, opts(writeScript)...)
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	if _, err := rt.SessionOf(t.Context(), "run-b", false); err == nil {
		t.Fatal("a second session of run-b started")
	}

	var wg sync.WaitGroup
	for _, s := range []*agent.Session{sa, sb} {
		wg.Go(func() {
			if _, err := s.Run(t.Context(), "go"); err != nil {
				t.Errorf("run: %v", err)
			}
		})
	}
	wg.Wait()

	if _, err := os.Stat(filepath.Join(dir, "a.md")); err == nil {
		t.Error("run-a wrote a.md in plan mode")
	}
	if got, err := os.ReadFile(filepath.Join(dir, "b.md")); err != nil || string(got) != "from b" {
		t.Errorf("run-b's write: %q, %v (plan mode of run-a reached it?)", got, err)
	}
	for run, want := range map[string]string{"run-a": "plan a", "run-b": "write b"} {
		got, err := os.ReadFile(filepath.Join(home, "runs", run, run+".todos.json"))
		if err != nil || !strings.Contains(string(got), want) {
			t.Errorf("%s's todo list: %s, %v; want %q", run, got, err, want)
		}
	}
	writes := map[string]string{}
	for _, e := range sink.Events() {
		if (e.Type == audit.TypeCapabilityDecision || e.Type == audit.TypeToolCallStarted) && e.Tool == "Write" {
			writes[e.RunID] = e.Reason
		}
	}
	if writes["run-a"] != string(capability.ReasonModeDenied) || writes["run-b"] != string(capability.ReasonAllowed) {
		t.Errorf("the writes' decisions by run: %v", writes)
	}

	// Explain asks the first session started: run-a, in plan mode now.
	e, err := rt.Explain(t.Context(), "Write", json.RawMessage(`{"path":"c.md","content":"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	if e.Decision.Reason != capability.ReasonModeDenied {
		t.Errorf("Explain beside the sessions: %s, want %s", e.Decision.Reason, capability.ReasonModeDenied)
	}
}

func mustScript(t *testing.T, s string) *scripted.Script {
	t.Helper()
	sc, err := scripted.Parse("script.yaml", []byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return sc
}
