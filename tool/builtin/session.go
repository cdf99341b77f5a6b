package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/gate"
	"github.com/norma-run/norma/internal/atomicfile"
	"github.com/norma-run/norma/tool"
)

// Todo is one item of a session's todo list.
type Todo struct {
	ID      string `json:"id"`
	Content string `json:"content"`
	// Status is pending, in_progress or completed.
	Status string `json:"status"`
}

// TodoStore persists todo lists per session. Implementations must be safe
// for concurrent use; an error fails the TodoWrite call.
type TodoStore interface {
	Save(ctx context.Context, session string, todos []Todo) error
	Load(ctx context.Context, session string) ([]Todo, error)
}

var sessionRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`) })

// FileTodoStore keeps each session's list as DIR/SESSION.todos.json,
// written atomically. Session ids are validated, so a session id cannot
// name a file outside Dir.
type FileTodoStore struct {
	// Dir is a host directory (the state dir), not the workspace.
	Dir string
}

func (s FileTodoStore) file(session string) (string, error) {
	if !sessionRE().MatchString(session) {
		return "", fail(capability.ReasonInvalidRequest, "invalid session id")
	}
	if s.Dir == "" || !filepath.IsAbs(s.Dir) {
		return "", errors.New("tools: FileTodoStore needs an absolute Dir")
	}
	return filepath.Join(s.Dir, session+".todos.json"), nil
}

// Save implements TodoStore.
func (s FileTodoStore) Save(_ context.Context, session string, todos []Todo) error {
	p, err := s.file(session)
	if err != nil {
		return err
	}
	data, err := json.MarshalIndent(todos, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return err
	}
	return atomicfile.Write(p, data, 0o600)
}

// Load implements TodoStore; a session without a list has none.
func (s FileTodoStore) Load(_ context.Context, session string) ([]Todo, error) {
	p, err := s.file(session)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Todo
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, fmt.Errorf("tools: todo list of %s: %w", session, err)
	}
	return out, nil
}

// MemoryTodoStore keeps lists in memory; for tests and ephemeral runs.
type MemoryTodoStore struct {
	mu sync.Mutex
	m  map[string][]Todo
}

// Save implements TodoStore.
func (s *MemoryTodoStore) Save(_ context.Context, session string, todos []Todo) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string][]Todo{}
	}
	s.m[session] = append([]Todo(nil), todos...)
	return nil
}

// Load implements TodoStore.
func (s *MemoryTodoStore) Load(_ context.Context, session string) ([]Todo, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Todo(nil), s.m[session]...), nil
}

func todoWriteTool(store TodoStore, session string) tool.Spec {
	return tool.Spec{
		Name:        "TodoWrite",
		Description: "Replace this session's todo list.",
		Prompt: "Keeps a todo list for the current task: send the whole list each time (it replaces the previous one). " +
			"Each item has a unique id, content and a status of pending, in_progress or completed; keep at most one item in_progress. The list belongs to this session only.",
		Schema: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["todos"],"properties":{"todos":{"type":"array","maxItems":100,"items":{"type":"object","additionalProperties":false,"required":["id","content","status"],"properties":{` +
			`"id":{"type":"string","minLength":1,"maxLength":64},"content":{"type":"string","minLength":1,"maxLength":2000},"status":{"enum":["pending","in_progress","completed"]}}}}}}`),
		ReadOnly:         yes, // it changes the tool's own session state, nothing in the workspace
		CheckPermissions: allow,
		Accesses:         noAccess,
		Call: func(ctx context.Context, env tool.Env, in tool.Input) (tool.Result, error) {
			var a struct{ Todos []Todo }
			if err := in.Decode(&a); err != nil {
				return tool.Result{}, fail(capability.ReasonInvalidRequest, "%v", err)
			}
			if err := validateTodos(a.Todos); err != nil {
				return tool.Result{}, err
			}
			sid := session
			if sid == "" {
				sid = env.RunID
			}
			if err := store.Save(ctx, sid, a.Todos); err != nil {
				return tool.Result{}, fmt.Errorf("saving the todo list: %w", err)
			}
			var b strings.Builder
			counts := map[string]int{}
			for _, t := range a.Todos {
				counts[t.Status]++
				mark := map[string]string{"pending": "[ ]", "in_progress": "[~]", "completed": "[x]"}[t.Status]
				fmt.Fprintf(&b, "%s %s %s\n", mark, t.ID, t.Content)
			}
			fmt.Fprintf(&b, "(%d pending, %d in progress, %d completed)", counts["pending"], counts["in_progress"], counts["completed"])
			return tool.Result{Content: b.String()}, nil
		},
	}
}

func validateTodos(ts []Todo) error {
	seen := map[string]bool{}
	inProgress := 0
	for i, t := range ts {
		switch t.Status {
		case "pending", "completed":
		case "in_progress":
			inProgress++
		default:
			return fail(capability.ReasonInvalidRequest, "todo %d: status %q is not pending, in_progress or completed", i+1, t.Status)
		}
		if t.ID == "" || strings.TrimSpace(t.Content) == "" {
			return fail(capability.ReasonInvalidRequest, "todo %d: id and content are required", i+1)
		}
		if seen[t.ID] {
			return fail(capability.ReasonInvalidRequest, "todo id %q is used twice", t.ID)
		}
		seen[t.ID] = true
	}
	if inProgress > 1 {
		return fail(capability.ReasonInvalidRequest, "%d todos are in_progress; keep at most one", inProgress)
	}
	return nil
}

// Question is what AskUser puts to the user.
type Question struct {
	RunID    string
	Question string
	Options  []string
}

// AskFunc asks the user and returns the answer. It is called while the
// tool call runs and must honor ctx.
type AskFunc func(ctx context.Context, q Question) (string, error)

func askUserTool(ask AskFunc) tool.Spec {
	return tool.Spec{
		Name:        "AskUser",
		Description: "Ask the user a question and wait for the answer.",
		Prompt: "Asks the user a clarifying question, optionally with suggested options, and returns the answer. " +
			"In a headless run nobody can answer: the call fails with HOST_UNAVAILABLE, so decide yourself and state the assumption.",
		Schema: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["question"],"properties":{"question":{"type":"string","minLength":1,"maxLength":4000},` +
			`"options":{"type":"array","maxItems":10,"items":{"type":"string","minLength":1,"maxLength":200}}}}`),
		ReadOnly:         yes,
		CheckPermissions: allow,
		Accesses:         noAccess,
		Call: func(ctx context.Context, env tool.Env, in tool.Input) (tool.Result, error) {
			if ask == nil {
				return tool.Result{}, fail(capability.ReasonHostUnavailable, "no user is attached to this run (headless); decide without asking and state your assumption")
			}
			var a struct {
				Question string
				Options  []string
			}
			if err := in.Decode(&a); err != nil {
				return tool.Result{}, fail(capability.ReasonInvalidRequest, "%v", err)
			}
			ans, err := ask(ctx, Question{RunID: env.RunID, Question: a.Question, Options: a.Options})
			if err != nil {
				return tool.Result{}, fmt.Errorf("the user did not answer: %w", err)
			}
			return tool.Result{Content: "The user answered: " + ans}, nil
		},
	}
}

// GateRef is a late binding to the session's gate, which the host creates
// after the registry of built-in tools. Until Bind, the tools that need the
// gate (EnterPlanMode, ExitPlanMode, ExecuteExtraTool) fail closed with
// HOST_UNAVAILABLE.
type GateRef struct {
	g atomic.Pointer[gate.Gate]
	// prev is the mode plan mode was entered from.
	prev atomic.Uint32
}

// Bind sets the gate once; binding again is an error.
func (r *GateRef) Bind(g *gate.Gate) error {
	if g == nil {
		return errors.New("tools: GateRef.Bind: nil gate")
	}
	if !r.g.CompareAndSwap(nil, g) {
		return errors.New("tools: GateRef.Bind: already bound")
	}
	return nil
}

func (r *GateRef) get() (*gate.Gate, error) {
	if r == nil {
		return nil, fail(capability.ReasonHostUnavailable, "this session has no gate binding")
	}
	g := r.g.Load()
	if g == nil {
		return nil, fail(capability.ReasonHostUnavailable, "the session's gate is not bound yet")
	}
	return g, nil
}

// ConsentFunc asks the user whether to leave plan mode with plan; true
// means yes. It is called while ExitPlanMode runs and must honor ctx.
type ConsentFunc func(ctx context.Context, runID, plan string) (bool, error)

func enterPlanTool(ref *GateRef) tool.Spec {
	return tool.Spec{
		Name:        "EnterPlanMode",
		Description: "Switch the session to plan mode: read-only tools only.",
		Prompt: "Enters plan mode: from now on every mutating tool call (writes, edits, commands that change things) is denied with MODE_DENIED until the user approves leaving it. " +
			"Use it to investigate and propose a plan before changing anything.",
		Schema:           json.RawMessage(`{"type":"object","additionalProperties":false,"properties":{}}`),
		ReadOnly:         yes, // it only takes power away
		CheckPermissions: allow,
		Accesses:         noAccess,
		Inline:           true, // it only sets the gate's mode
		Call: func(ctx context.Context, env tool.Env, in tool.Input) (tool.Result, error) {
			g, err := ref.get()
			if err != nil {
				return tool.Result{}, err
			}
			cur := g.Mode()
			if cur == gate.ModePlan {
				return tool.Result{Content: "already in plan mode"}, nil
			}
			ref.prev.Store(uint32(cur))
			if err := g.SetMode(gate.ModePlan); err != nil {
				return tool.Result{}, err
			}
			return tool.Result{Content: "plan mode: mutating tools are denied until ExitPlanMode is approved by the user"}, nil
		},
	}
}

func exitPlanTool(ref *GateRef, consent ConsentFunc) tool.Spec {
	return tool.Spec{
		Name:        "ExitPlanMode",
		Description: "Present a plan and ask the user to leave plan mode.",
		Prompt: "Shows your plan to the user and asks for consent to leave plan mode. Only the user's explicit yes leaves it; " +
			"a no, a headless run or any failure keeps plan mode (PLAN_EXIT_DENIED). Write the plan as concise Markdown.",
		Schema: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["plan"],"properties":{"plan":{"type":"string","minLength":1,"maxLength":20000}}}`),
		// Read-only so that it can be called in plan mode; it changes the
		// mode only with the host's consent.
		ReadOnly:         yes,
		CheckPermissions: allow,
		Accesses:         noAccess,
		Call: func(ctx context.Context, env tool.Env, in tool.Input) (tool.Result, error) {
			g, err := ref.get()
			if err != nil {
				return tool.Result{}, err
			}
			if g.Mode() != gate.ModePlan {
				return tool.Result{Content: "not in plan mode"}, nil
			}
			if consent == nil {
				return tool.Result{}, fail(capability.ReasonPlanExitDenied, "no user can consent in this run; staying in plan mode")
			}
			ok, err := consent(ctx, env.RunID, str(in, "plan", ""))
			if err != nil {
				return tool.Result{}, fail(capability.ReasonPlanExitDenied, "consent failed (%v); staying in plan mode", err)
			}
			if !ok {
				return tool.Result{}, fail(capability.ReasonPlanExitDenied, "the user did not approve the plan; staying in plan mode — revise the plan or ask")
			}
			prev := gate.Mode(ref.prev.Load())
			if prev == gate.ModePlan {
				prev = gate.ModeDefault
			}
			if err := g.SetMode(prev); err != nil {
				return tool.Result{}, err
			}
			return tool.Result{Content: "the user approved the plan; left plan mode (now " + prev.String() + ")"}, nil
		},
	}
}
