package gate_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/norma-run/norma/approval"
	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/gate"
	"github.com/norma-run/norma/gate/gatetest"
	"github.com/norma-run/norma/tool"
)

// TestPreviewIsTheAction: the approver is shown one preview per call kind,
// built from the input the action hash covers: a tool's own rendering in
// full (here a command line of several statements, one hidden by SGR
// conceal), and for a tool without one its input as canonical JSON
// (sorted keys, no whitespace) — never a shortened argv.
func TestPreviewIsTheAction(t *testing.T) {
	var mu sync.Mutex
	var seen []approval.Request
	f := newFixture(t, func(o *gate.Options, _ *fixture) {
		o.Approver = gatetest.AuthorizerFunc(func(_ context.Context, r approval.Request) (approval.Ticket, error) {
			mu.Lock()
			seen = append(seen, r)
			mu.Unlock()
			return approval.Ticket{}, &capability.Error{Decision: capability.Decision{Mode: capability.Deny, Reason: capability.ReasonApprovalDenied}}
		})
	})
	sh := f.bashTool()
	sh.Name = "Shell"
	sh.Preview = func(_ context.Context, _ tool.Env, in tool.Input) (string, error) {
		c, _ := in.String("command")
		return c, nil
	}
	f.register(t, sh, tool.Visible)
	note := tool.Spec{Name: "Note", Schema: json.RawMessage(`{"type":"object"}`),
		Call: func(context.Context, tool.Env, tool.Input) (tool.Result, error) {
			f.calls.Add(1)
			return tool.Result{}, nil
		}}
	f.register(t, note, tool.Visible)

	cmd := "echo hi; \x1b[8mrm -rf src/old\x1b[0m\nls -la && cat /etc/passwd | tee src/out"
	for _, c := range []struct{ tool, input, want string }{
		{"Shell", `{"command":` + jsonString(cmd) + `}`, cmd},
		{"Note", `{ "z": [1, 2], "a": {"k": "v\u001b[8m"} }`, `{"a":{"k":"v\u001b[8m"},"z":[1,2]}`},
	} {
		r := f.g.Execute(t.Context(), call(c.tool, c.input))
		if r.Reason != capability.ReasonApprovalDenied {
			t.Fatalf("%s: reason %s, want APPROVAL_DENIED", c.tool, r.Reason)
		}
		mu.Lock()
		got := seen[len(seen)-1]
		mu.Unlock()
		if got.Preview != c.want {
			t.Errorf("%s preview = %q, want %q", c.tool, got.Preview, c.want)
		}
	}
	if n := f.calls.Load(); n != 0 {
		t.Errorf("%d handlers ran without approval", n)
	}
}

// TestPreviewChangedAfterApproval: when what a call would do changes
// while the human looks at its preview (the file of an Edit is rewritten
// meanwhile), the approval does not cover it: APPROVAL_MISMATCH, and the
// handler does not run.
func TestPreviewChangedAfterApproval(t *testing.T) {
	var mu sync.Mutex
	content := "one\n"
	f := newFixture(t, func(o *gate.Options, _ *fixture) {
		o.Approver = gatetest.AuthorizerFunc(func(_ context.Context, r approval.Request) (approval.Ticket, error) {
			mu.Lock()
			content = "ONE\n" // changed while the prompt was shown
			mu.Unlock()
			return approval.Ticket{ApprovalID: "apr_x", ActionHash: r.ActionHash, Use: 1}, nil
		})
	})
	ed := f.writeTool()
	ed.Name = "Change"
	ed.Preview = func(context.Context, tool.Env, tool.Input) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		return "-" + content + "+two\n", nil
	}
	f.register(t, ed, tool.Visible)
	r := f.g.Execute(t.Context(), call("Change", `{"path":"src/a.txt"}`))
	if r.Reason != capability.ReasonApprovalMismatch || !strings.Contains(r.Content, "changed after the approval") {
		t.Fatalf("result = %s %q, want APPROVAL_MISMATCH", r.Reason, r.Content)
	}
	if n := f.calls.Load(); n != 0 {
		t.Errorf("the handler ran %d times", n)
	}
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
