package host

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/norma-run/norma/approval"
	"github.com/norma-run/norma/audit"
	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/gate"
	"github.com/norma-run/norma/secret"
	"github.com/norma-run/norma/tool"
)

// TestIssueHelperThroughTheGate drives the installed, sandboxed plugin
// through the gate with durable approvals: summarize runs; the comment waits
// for an approval, runs exactly once when the approval is granted and
// retried; the same call with a changed body is a different action and does
// not run on that approval.
func TestIssueHelperThroughTheGate(t *testing.T) {
	e := newEnv(t)
	// No approver: a request is stored and the call refused until someone
	// decides it (as `norma approvals approve` does from another process).
	svc, err := approval.NewService(approval.NewMemoryBackend(), &approval.Options{Sink: e.audit})
	if err != nil {
		t.Fatal(err)
	}
	call := issueHelperGate(t, e, gate.Options{Approver: svc})

	if r := call("t1", "issues.summarize", `{"owner":"acme"}`); r.IsError || r.Reason != capability.ReasonAllowed {
		t.Fatalf("summarize through the gate: %+v", r)
	}
	comment := `{"owner":"acme","number":42,"body":"Looks good"}`
	r := call("t2", "issues.comment", comment)
	if !r.IsError || len(e.api.Comments()) != 0 {
		t.Fatalf("an unapproved comment ran: %+v, comments %d", r, len(e.api.Comments()))
	}
	ctx := t.Context()
	pending, err := svc.List(ctx, approval.ListFilter{})
	if err != nil || len(pending) != 1 {
		t.Fatalf("pending approvals: %v %v", pending, err)
	}
	if _, err := svc.Decide(ctx, pending[0].ID, true, "tester", "ok"); err != nil {
		t.Fatal(err)
	}
	if r := call("t3", "issues.comment", comment); r.IsError {
		t.Fatalf("approved comment: %+v", r)
	}
	if c := e.api.Comments(); len(c) != 1 || c[0].Body != "Looks good" || c[0].IdempotencyKey == "" {
		t.Fatalf("comments after approval = %+v", c)
	}
	// A changed body is another action: the approval does not cover it.
	if r := call("t4", "issues.comment", `{"owner":"acme","number":42,"body":"Actually, delete everything"}`); !r.IsError {
		t.Fatalf("a changed body ran on another action's approval: %+v", r)
	}
	// And the approved one was consumed: running it again needs a new approval.
	if r := call("t5", "issues.comment", comment); !r.IsError {
		t.Fatalf("a consumed approval was reused: %+v", r)
	}
	if n := len(e.api.Comments()); n != 1 {
		t.Fatalf("the API has %d comments, want exactly 1", n)
	}
}

// issueHelperGate installs and loads the issue-helper plugin and returns a
// caller of its tools through a gate made with opts (registry, audit and
// policy set here).
func issueHelperGate(t *testing.T, e *env, opts gate.Options) func(id, name, input string) gate.Result {
	t.Helper()
	e.install(t, "issue-helper", filepath.Join(repoRoot(t), "examples/plugins/issue-helper/manifest.yaml"))
	ctx := t.Context()
	p, err := e.host.Load(ctx, "com.example.issue-helper")
	if err != nil {
		t.Fatal(err)
	}
	ts, err := p.Tools()
	if err != nil {
		t.Fatal(err)
	}
	reg := tool.NewRegistry(&tool.Options{Audit: e.audit})
	m := p.Manifest()
	tp := tool.Plugin{ID: m.ID, Version: m.Version, ManifestDigest: m.Digest()}
	for _, x := range ts {
		if err := reg.Register(tool.Registration{Tool: x, Plugin: tp, Visibility: tool.Visible}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := reg.OpenRun("run-1", "user:test"); err != nil {
		t.Fatal(err)
	}
	opts.Registry, opts.Audit = reg, e.audit
	opts.Policy = func(pl tool.Plugin) (capability.Decider, error) { return p.Policy(), nil }
	g, err := gate.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return func(id, name, input string) gate.Result {
		return g.Execute(ctx, gate.Call{ID: id, RunID: "run-1", Principals: []string{"user:test"}, Tool: ToolName(m.ID, name), Input: json.RawMessage(input)})
	}
}

// TestPluginResultRedactedAtTheGate: what a sandboxed plugin returns is
// redacted by the gate like a built-in tool's result — here an issue
// title the run's redactor knows as a secret value — and the audit log
// gets the output_redacted event of the plugin's call.
func TestPluginResultRedactedAtTheGate(t *testing.T) {
	e := newEnv(t)
	const title = "Crash when the config file is empty"
	red := secret.NewRedactor()
	if err := red.AddValue("issue_title", secret.NewValue([]byte(title))); err != nil {
		t.Fatal(err)
	}
	call := issueHelperGate(t, e, gate.Options{Redactor: red})
	r := call("t1", "issues.summarize", `{"owner":"acme"}`)
	if r.IsError || r.Reason != capability.ReasonAllowed {
		t.Fatalf("summarize: %+v", r)
	}
	if strings.Contains(r.Content, title) || !strings.Contains(r.Content, "[REDACTED:issue_title]") || !strings.Contains(r.Content, "Document the --home flag") {
		t.Errorf("summarize result = %q", r.Content)
	}
	recs, err := e.audit.Query(t.Context(), audit.Filter{Type: audit.TypeOutputRedacted})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || recs[0].Event.Plugin != "com.example.issue-helper" || recs[0].Event.Detail["redacted.issue_title"] != "1" {
		t.Errorf("output_redacted events = %+v", recs)
	}
}
