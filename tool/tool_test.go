package tool_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/norma-run/norma/audit"
	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/guard/fsguard"
	"github.com/norma-run/norma/tool"
)

var _ tool.FS = (*fsguard.FS)(nil)

func okCall(context.Context, tool.Env, tool.Input) (tool.Result, error) {
	return tool.Result{Content: "ok"}, nil
}

// TestBuildFailsClosed: whatever a spec leaves out is the closed choice.
func TestBuildFailsClosed(t *testing.T) {
	tl, err := tool.Build(tool.Spec{Name: "bare", Call: okCall})
	if err != nil {
		t.Fatal(err)
	}
	in, _ := tool.ParseInput([]byte(`{}`))
	if tl.ReadOnly(in) || tl.ConcurrencySafe(in) {
		t.Error("bare tool is read-only or concurrency-safe")
	}
	if p := tl.CheckPermissions(t.Context(), in); p.Behavior != tool.Ask {
		t.Errorf("CheckPermissions = %v, want ask", p.Behavior)
	}
	if string(tl.InputSchema()) != string(tool.ClosedSchema) {
		t.Errorf("schema = %s, want the closed schema", tl.InputSchema())
	}
	if _, ok := tl.(tool.RawParser); ok {
		t.Error("bare tool is a RawParser")
	}
	for _, s := range []tool.Spec{
		{Name: "", Call: okCall},
		{Name: "bad name", Call: okCall},
		{Name: "1x", Call: okCall},
		{Name: "nohandler"},
		{Name: "badschema", Call: okCall, Schema: json.RawMessage(`{`)},
	} {
		if _, err := tool.Build(s); err == nil {
			t.Errorf("Build(%q) = nil error", s.Name)
		}
	}
	if tool.Behavior(7).String() != "deny" {
		t.Error("unknown behavior does not print as deny")
	}
}

func TestParseInput(t *testing.T) {
	tests := []struct {
		name, in string
		ok       bool
	}{
		{"object", `{"a":1,"b":[true,null,"x"],"c":{"d":-1.5e3}}`, true},
		{"escapes", `{"a":"\u00e9\n\"","b":"\ud83d\ude00"}`, true},
		{"whitespace", " \t\n{ \"a\" : 1 }\r\n", true},
		{"scalar", `"x"`, true},
		{"duplicate", `{"a":1,"a":2}`, false},
		{"nested-duplicate", `{"x":{"a":1,"a":1}}`, false},
		{"escaped-duplicate", `{"a":1,"\u0061":2}`, false},
		{"trailing", `{} {}`, false},
		{"trailing-comma", `{"a":1,}`, false},
		{"bad-number", `{"a":01}`, false},
		{"bad-utf8", "{\"a\":\"\xff\"}", false},
		{"control-char", "{\"a\":\"\x01\"}", false},
		{"unterminated", `{"a":"x`, false},
		{"empty", ``, false},
		{"deep", strings.Repeat("[", 70) + strings.Repeat("]", 70), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in, err := tool.ParseInput([]byte(tt.in))
			if (err == nil) != tt.ok {
				t.Fatalf("ParseInput(%q) error = %v, want ok %v", tt.in, err, tt.ok)
			}
			if err != nil {
				if _, ok := errors.AsType[*tool.InputError](err); !ok {
					t.Errorf("error type %T, want *tool.InputError", err)
				}
				return
			}
			var want any
			dec := json.NewDecoder(strings.NewReader(tt.in))
			dec.UseNumber()
			if err := dec.Decode(&want); err != nil {
				t.Fatal(err)
			}
			got, _ := json.Marshal(in.Value())
			w, _ := json.Marshal(want)
			if string(got) != string(w) {
				t.Errorf("ParseInput(%q) = %s, want %s", tt.in, got, w)
			}
		})
	}
}

type countSink struct {
	events []audit.Event
	err    error
}

func (s *countSink) Record(_ context.Context, e audit.Event) error {
	if s.err != nil {
		return s.err
	}
	s.events = append(s.events, e)
	return nil
}

func reg(t *testing.T, r *tool.Registry, name string, v tool.Visibility) {
	t.Helper()
	if err := r.Register(tool.Registration{Tool: tool.MustBuild(tool.Spec{Name: name, Call: okCall}), Visibility: v}); err != nil {
		t.Fatal(err)
	}
}

func TestRegisterAndReplace(t *testing.T) {
	sink := &countSink{}
	r := tool.NewRegistry(&tool.Options{Audit: sink})
	reg(t, r, "a", tool.Visible)
	err := r.Register(tool.Registration{Tool: tool.MustBuild(tool.Spec{Name: "a", Call: okCall})})
	if !errors.Is(err, tool.ErrDuplicate) {
		t.Fatalf("second Register = %v, want ErrDuplicate", err)
	}
	v, _ := r.OpenRun("r", "u")
	old, _ := v.Lookup("a")
	repl := tool.Registration{Tool: tool.MustBuild(tool.Spec{Name: "a", Description: "v2", Call: okCall})}
	if err := r.Replace(t.Context(), repl, "admin", "upgrade"); err != nil {
		t.Fatal(err)
	}
	if len(sink.events) != 1 || sink.events[0].Detail["change"] != "tool_replaced" || sink.events[0].Principal != "admin" {
		t.Errorf("audit events = %+v", sink.events)
	}
	cur, _ := v.Lookup("a")
	if cur.Description() != "v2" || cur.Generation() <= old.Generation() {
		t.Errorf("replaced entry = %q gen %d (old gen %d)", cur.Description(), cur.Generation(), old.Generation())
	}
	// A dispatcher refuses the stale entry.
	d, err := r.Claim()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Call(t.Context(), old, tool.Env{}, tool.Input{}); err == nil {
		t.Error("Dispatcher.Call(stale entry) = nil error")
	}
	if _, err := r.Claim(); !errors.Is(err, tool.ErrClaimed) {
		t.Errorf("second Claim = %v, want ErrClaimed", err)
	}
	// Replace is refused when it cannot be audited, or the name is unknown.
	sink.err = errors.New("down")
	if err := r.Replace(t.Context(), repl, "admin", "x"); err == nil {
		t.Error("Replace with failing audit = nil error")
	}
	sink.err = nil
	if err := tool.NewRegistry(nil).Replace(t.Context(), repl, "admin", "x"); err == nil {
		t.Error("Replace without audit sink = nil error")
	}
	missing := tool.Registration{Tool: tool.MustBuild(tool.Spec{Name: "zz", Call: okCall})}
	if err := r.Replace(t.Context(), missing, "admin", "x"); !errors.Is(err, tool.ErrNotFound) {
		t.Errorf("Replace(unknown) = %v, want ErrNotFound", err)
	}
	// Another registry's dispatcher cannot call this registry's entries.
	r2 := tool.NewRegistry(nil)
	d2, _ := r2.Claim()
	if _, err := d2.Call(t.Context(), cur, tool.Env{}, tool.Input{}); err == nil {
		t.Error("foreign dispatcher call = nil error")
	}
}

func names(es []*tool.Entry) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

// TestViewsListEqualsCallable: List and Lookup agree for every view, and
// the state round-trips through JSON without widening.
func TestViewsListEqualsCallable(t *testing.T) {
	r := tool.NewRegistry(nil)
	reg(t, r, "vis", tool.Visible)
	reg(t, r, "def", tool.Deferred)
	reg(t, r, "hid", tool.Hidden)
	reg(t, r, "other", tool.Visible)
	root, _ := r.OpenRun("run", "user")
	check := func(v *tool.View, want []string) {
		t.Helper()
		got := names(v.List())
		if !slices.Equal(got, want) {
			t.Errorf("%v List() = %v, want %v", v.Principals(), got, want)
		}
		for _, n := range r.Names() {
			_, ok := v.Lookup(n)
			if ok != slices.Contains(want, n) {
				t.Errorf("%v Lookup(%s) = %v, List disagrees", v.Principals(), n, ok)
			}
		}
	}
	check(root, []string{"vis", "other"})
	if d := root.Deferred(); !slices.Equal(d, []string{"def"}) {
		t.Errorf("Deferred() = %v", d)
	}
	if err := root.Unlock("def"); err != nil {
		t.Fatal(err)
	}
	check(root, []string{"vis", "def", "other"})
	sub, _ := root.Subagent("sub", []string{"vis", "def", "hid"})
	check(sub, []string{"vis", "def"})
	if err := sub.Unlock("hid"); err != nil {
		t.Fatal(err)
	}
	check(sub, []string{"vis", "def"}) // parent cannot call hid
	if err := sub.Unlock("other"); err == nil {
		t.Error("subagent unlocked a tool it was not given")
	}
	if err := root.Unlock("nope"); !errors.Is(err, tool.ErrNotFound) {
		t.Errorf("Unlock(unknown) = %v", err)
	}
	// Persist and restore in a fresh registry.
	b, err := json.Marshal(root.State())
	if err != nil {
		t.Fatal(err)
	}
	r2 := tool.NewRegistry(nil)
	reg(t, r2, "vis", tool.Visible)
	reg(t, r2, "def", tool.Deferred)
	reg(t, r2, "hid", tool.Hidden)
	reg(t, r2, "other", tool.Visible)
	var st tool.ViewState
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	root2, err := r2.Restore(st)
	if err != nil {
		t.Fatal(err)
	}
	check(root2, []string{"vis", "def", "other"})
	sub2, err := r2.View("run", []string{"user", "sub"})
	if err != nil {
		t.Fatal(err)
	}
	check(sub2, []string{"vis", "def"})
	// A tampered child state cannot widen: the child is re-derived.
	st.Children[0].Allowed = append(st.Children[0].Allowed, "other")
	st.Children[0].Principals = []string{"user", "sub2"}
	r3 := tool.NewRegistry(nil)
	reg(t, r3, "vis", tool.Visible)
	reg(t, r3, "other", tool.Visible)
	if _, err := r3.Restore(st); err != nil {
		t.Fatal(err)
	}
	if v, err := r3.View("run", []string{"user", "sub2"}); err != nil || len(v.List()) != 2 {
		t.Errorf("restored child = %v, %v", v, err)
	}
	if _, err := r.View("run", []string{"user", "nobody"}); !errors.Is(err, tool.ErrNoView) {
		t.Errorf("View(unknown chain) = %v", err)
	}
}

// TestEntryJudgmentsRecoverPanics: a panicking judgment fails closed.
func TestEntryJudgmentsRecoverPanics(t *testing.T) {
	r := tool.NewRegistry(nil)
	boom := func(tool.Input) bool { panic("x") }
	err := r.Register(tool.Registration{Tool: tool.MustBuild(tool.Spec{
		Name: "p", Call: okCall, ReadOnly: boom, ConcurrencySafe: boom,
		CheckPermissions: func(context.Context, tool.Input) tool.Permission { panic("x") },
		Accesses:         func(tool.Input) ([]tool.Access, error) { panic("x") },
	})})
	if err != nil {
		t.Fatal(err)
	}
	v, _ := r.OpenRun("r", "u")
	e, _ := v.Lookup("p")
	in, _ := tool.ParseInput([]byte(`{}`))
	if e.ReadOnly(in) || e.ConcurrencySafe(in) || e.CheckPermissions(t.Context(), in).Behavior != tool.Deny {
		t.Error("panicking judgment did not fail closed")
	}
	if _, declared, err := e.Accesses(in); !declared || err == nil {
		t.Error("panicking Accesses did not report an error")
	}
	_ = capability.FSRead
}
