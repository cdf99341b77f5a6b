package runtime_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/norma-run/norma/agent"
	"github.com/norma-run/norma/approval"
	"github.com/norma-run/norma/audit"
	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/gate"
	"github.com/norma-run/norma/gate/gatetest"
	"github.com/norma-run/norma/provider/scripted"
	"github.com/norma-run/norma/runtime"
	"github.com/norma-run/norma/store"
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

// TestSessionsTakeServices: a runtime opened over Services gives each
// session their approval service (a Write in default mode is stored as a
// pending approval of its run), their state directory (the run's state
// file) and their audit log; an Audit or a Home beside Services is
// refused.
func TestSessionsTakeServices(t *testing.T) {
	dir, home := newWorkspace(t, ""), t.TempDir()
	db, err := runtime.OpenStore(t.Context(), runtime.StoreLocation{SQLite: filepath.Join(home, store.FileName)})
	if err != nil {
		t.Fatal(err)
	}
	svcs, err := runtime.OpenServices(t.Context(), home, db, runtime.ServicesOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer svcs.Close()
	for name, o := range map[string]runtime.Options{
		"audit beside services": {Dir: dir, Services: svcs, Audit: nopSink{}},
		"another home":          {Dir: dir, Services: svcs, Home: t.TempDir()},
		"neither":               {Dir: dir},
	} {
		if rt, err := runtime.Open(t.Context(), o); err == nil {
			rt.Close()
			t.Errorf("%s: Open succeeded", name)
		}
	}
	rt, err := runtime.Open(t.Context(), runtime.Options{Dir: dir, Services: svcs, RunID: "run-s"})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	script := "turns:\n  - tool_calls:\n      - {id: t1, name: Write, input: {path: a.md, content: x}}\n"
	s, err := rt.Session(t.Context(), agent.WithProvider(scripted.New(mustScript(t, script)), "scripted"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Run(t.Context(), "go"); err != nil {
		t.Fatal(err)
	}
	pending, err := svcs.Approvals.List(t.Context(), approval.ListFilter{RunID: "run-s"})
	if err != nil || len(pending) != 1 {
		t.Fatalf("approvals of run-s in the services' store: %d, %v; want the Write's", len(pending), err)
	}
	if _, err := os.Stat(filepath.Join(home, "runs", "run-s", "state.json")); err != nil {
		t.Errorf("the run's state is not under the services' home: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "a.md")); err == nil {
		t.Error("the Write ran without approval")
	}
}
