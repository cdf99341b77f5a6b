package gate_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/norma-run/norma/approval"
	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/gate"
	"github.com/norma-run/norma/gate/gatetest"
	"github.com/norma-run/norma/policy"
)

// TestAllowForSession: a session rule lets later calls of exactly that
// request through without approval; a neighbour still asks; deny rules,
// ask rules and the capability policy still win.
func TestAllowForSession(t *testing.T) {
	f := newFixture(t, func(o *gate.Options, _ *fixture) {
		o.Rules = policy.Rules{Deny: []string{"Write(src/secret/**)"}, Ask: []string{"Write(src/asked/**)"}}
	})
	ctx := t.Context()
	write := func(p string) gate.Result { return f.g.Execute(ctx, call("Write", `{"path":"`+p+`"}`)) }
	wantReason(t, write("src/a.go"), capability.ReasonApprovalDenied)
	for _, r := range []string{"Write(src/a.go)", "Write(src/secret/k)", "Write(src/asked/x)", "Write(etc/x)", "Bash(git status)"} {
		if err := f.g.AllowForSession(r); err != nil {
			t.Fatalf("AllowForSession(%q) = %v", r, err)
		}
	}
	if err := f.g.AllowForSession("Write(src/a.go)"); err != nil {
		t.Fatalf("AllowForSession twice = %v", err)
	}
	if got := f.g.SessionRules(); len(got) != 5 {
		t.Errorf("SessionRules = %q, want 5 rules (no duplicate)", got)
	}
	asked := len(f.approver.Requests())
	r := write("src/a.go")
	wantReason(t, r, capability.ReasonAllowed)
	if len(f.approver.Requests()) != asked {
		t.Errorf("%d new approval requests, want none", len(f.approver.Requests())-asked)
	}
	wantReason(t, write("src/b.go"), capability.ReasonApprovalDenied)
	wantReason(t, write("src/secret/k"), capability.ReasonRuleDenied)
	wantReason(t, write("src/asked/x"), capability.ReasonApprovalDenied)
	if d := write("etc/x").Decision; d.Mode != capability.Deny || d.Layer == capability.LayerRules {
		t.Errorf("a write outside the manifest = %+v, want the capability policy's denial", d)
	}
	wantReason(t, f.g.Execute(ctx, call("Bash", `{"command":"git status"}`)), capability.ReasonAllowed)
	wantReason(t, f.g.Execute(ctx, call("Bash", `{"command":"git status; rm -rf src"}`)), capability.ReasonApprovalDenied)

	for _, bad := range []string{"", "Read(x", "Bash(rm 'x)", "Glob(x)"} {
		if err := f.g.AllowForSession(bad); err == nil {
			t.Errorf("AllowForSession(%q) = nil, want an error", bad)
		}
	}
	if got := f.g.SessionRules(); len(got) != 5 {
		t.Errorf("a refused rule changed the session rules: %q", got)
	}
}

// The session rules are bounded.
func TestAllowForSessionBounded(t *testing.T) {
	f := newFixture(t)
	for i := range gate.MaxSessionRules {
		if err := f.g.AllowForSession(fmt.Sprintf("Read(f%d)", i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.g.AllowForSession("Read(one-more)"); err == nil {
		t.Error("AllowForSession past MaxSessionRules succeeded")
	}
}

// Rules are added while calls run (run with -race).
func TestAllowForSessionConcurrent(t *testing.T) {
	f := newFixture(t, func(o *gate.Options, f *fixture) { o.Approver = gatetest.NewMemoryApprover(true) })
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			_ = f.g.AllowForSession(fmt.Sprintf("Write(src/f%d)", i))
			f.g.Execute(t.Context(), call("Write", fmt.Sprintf(`{"path":"src/f%d"}`, i)))
		})
	}
	wg.Wait()
	if len(f.g.SessionRules()) != 8 {
		t.Errorf("SessionRules = %q", f.g.SessionRules())
	}
}

// TestRememberRules: the approver is offered the call's exact rules only
// when an allow rule would have let it through: not for an ask rule, a
// command whose effect is unknown, or several programs.
func TestRememberRules(t *testing.T) {
	var mu sync.Mutex
	var got [][]string
	f := newFixture(t, func(o *gate.Options, _ *fixture) {
		o.Rules = policy.Rules{Ask: []string{"Write(src/asked/**)"}}
		o.Approver = gatetest.AuthorizerFunc(func(ctx context.Context, r approval.Request) (approval.Ticket, error) {
			mu.Lock()
			got = append(got, approval.RulesOf(ctx))
			mu.Unlock()
			return approval.Ticket{}, capability.Denied(capability.ReasonApprovalDenied, r.Tool, "no")
		})
	})
	tests := []struct {
		tool, input string
		want        []string
	}{
		{"Write", `{"path":"src/a.go"}`, []string{"Write(src/a.go)"}},
		{"Write", `{"path":"./src/../src/b.go"}`, []string{"Write(src/b.go)"}},
		{"Bash", `{"command":"git status"}`, []string{"Bash(git status)"}},
		{"Bash", `{"command":"ls | wc -l"}`, nil},
		{"Bash", `{"command":"echo $(date)"}`, nil},
		{"Write", `{"path":"src/asked/x"}`, nil},
		{"WebFetch", `{"url":"https://api.example.invalid/repos/o/issues"}`, []string{"WebFetch(domain:api.example.invalid)"}},
	}
	for _, tt := range tests {
		mu.Lock()
		got = nil
		mu.Unlock()
		r := f.g.Execute(t.Context(), call(tt.tool, tt.input))
		mu.Lock()
		if len(got) != 1 || !slices.Equal(got[0], tt.want) {
			t.Errorf("%s %s: rules offered = %q, want %q (result %s %q)", tt.tool, tt.input, got, tt.want, r.Reason, r.Content)
		}
		mu.Unlock()
	}
}

// TestAllowForSessionKeepsPlacedRules: a deny written with an absolute
// path (placed by policy.Rules.Root) still denies after a session rule
// recompiles the rules (issue 31).
func TestAllowForSessionKeepsPlacedRules(t *testing.T) {
	f := newFixture(t, func(o *gate.Options, _ *fixture) {
		o.Rules = policy.Rules{Deny: []string{"Write(//home/u/proj/src/locked/**)"}, Root: "/home/u/proj"}
	})
	write := func(p string) gate.Result { return f.g.Execute(t.Context(), call("Write", `{"path":"`+p+`"}`)) }
	wantReason(t, write("src/locked/a"), capability.ReasonRuleDenied)
	if err := f.g.AllowForSession("Write(src/b.go)"); err != nil {
		t.Fatal(err)
	}
	wantReason(t, write("src/locked/a"), capability.ReasonRuleDenied)
	wantReason(t, write("src/b.go"), capability.ReasonAllowed)
}
