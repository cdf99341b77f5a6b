// Command embed shows how a Go program embeds Norma, the way README.md's
// "Embedding Norma in a Go program" says (its snippet is the region of run
// between the README:begin and README:end comments): it opens a store and
// the services over it, assembles the runtime of a workspace (the built-in
// tools under the workspace policy, the file guard, the OS sandbox), runs
// a scripted (offline) session with one custom tool, explains a call
// beside the session, and prints every decision the gate made.
//
// Run it with `go run ./examples/embed`. It works in a temporary state
// directory and workspace, removed when it ends.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/norma-run/norma/agent"
	"github.com/norma-run/norma/approval"
	"github.com/norma-run/norma/provider/scripted"
	"github.com/norma-run/norma/runtime"
	"github.com/norma-run/norma/tool"
)

// The model's turns. t1 reads a ticket; t2's id breaks the tool's schema;
// t3 closes the ticket, which the tool asks approval for (a change of the
// tracker) and this program's approver grants; t4 reads the workspace's
// .env, which the built-in tools' policy denies; t5 calls a tool that does
// not exist.
const script = `turns:
  - text: "Let me look up the ticket."
    tool_calls:
      - {id: t1, name: Ticket, input: {action: read, id: 42}}
      - {id: t2, name: Ticket, input: {action: read, id: -1}}
  - tool_calls:
      - {id: t3, name: Ticket, input: {action: close, id: 42}}
      - {id: t4, name: Read, input: {path: .env}}
      - {id: t5, name: Deploy, input: {service: tracker}}
  - text: "Ticket 42 is closed."
`

// ticketTool is the program's own tool: the gate checks its input against
// its schema, asks approval when it says so and audits every call.
func ticketTool() tool.CoreTool {
	isRead := func(in tool.Input) bool { a, _ := in.String("action"); return a == "read" }
	return tool.MustBuild(tool.Spec{
		Name:        "Ticket",
		Description: "Read or close a ticket in the tracker.",
		Schema: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["action","id"],` +
			`"properties":{"action":{"enum":["read","close"]},"id":{"type":"integer","minimum":1}}}`),
		ReadOnly:        isRead,
		ConcurrencySafe: isRead,
		CheckPermissions: func(_ context.Context, in tool.Input) tool.Permission {
			if isRead(in) {
				return tool.Permission{Behavior: tool.Allow}
			}
			return tool.Permission{Behavior: tool.Ask, Reason: "closing a ticket changes the tracker"}
		},
		// The tracker is the tool's own business: no file, network or
		// process access to declare.
		Accesses: func(tool.Input) ([]tool.Access, error) { return nil, nil },
		Call: func(_ context.Context, _ tool.Env, in tool.Input) (tool.Result, error) {
			id, _ := in.Get("id")
			if isRead(in) {
				return tool.Result{Content: fmt.Sprintf("ticket %v: printer on fire", id)}, nil
			}
			return tool.Result{Content: fmt.Sprintf("ticket %v closed", id)}, nil
		},
	})
}

// approver stands in for the person who decides: it prints each request
// and grants it, for that one call. A real one asks someone (a terminal, a
// chat message, `norma approvals approve ID` through agent.PendingApprover);
// approval.Auto{Grant: true} grants without printing.
var approver = approverFunc(func(_ context.Context, r approval.Record) (approval.Verdict, error) {
	fmt.Printf("approval asked: %s (%s)\n", r.Tool, r.ToolUseID)
	return approval.Verdict{Approve: true, By: "examples/embed", Why: "the example grants every request"}, nil
})

func main() {
	if err := run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "embed:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	sc, err := scripted.Parse("embed.yaml", []byte(script))
	if err != nil {
		return err
	}
	// Norma's state directory (store, audit log) and the workspace the
	// built-in tools work in: temporary here, your own in a real program.
	tmp, err := os.MkdirTemp("", "norma-embed-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	stateDir, workspace := filepath.Join(tmp, "state"), filepath.Join(tmp, "workspace")
	for _, d := range []string{stateDir, workspace} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(workspace, ".env"), []byte("TRACKER_TOKEN=not-for-the-model\n"), 0o600); err != nil {
		return err
	}

	// README:begin
	db, err := runtime.OpenStore(ctx, runtime.StoreLocation{SQLite: filepath.Join(stateDir, "norma.db")})
	if err != nil {
		return err
	}
	svcs, err := runtime.OpenServices(ctx, stateDir, db, runtime.ServicesOptions{Approver: approver})
	if err != nil {
		return err
	}
	defer svcs.Close() // signs a checkpoint of the audit log
	rt, err := runtime.Open(ctx, runtime.Options{Dir: workspace, Services: svcs})
	if err != nil {
		return err
	}
	defer rt.Close()
	s, err := rt.Session(ctx,
		agent.WithProvider(scripted.New(sc), "scripted"), // or anthropic.New(...), openai.New(...)
		agent.WithTools(ticketTool()))                    // your own tools, beside the built-in ones
	if err != nil {
		return err
	}
	defer s.Close()
	out, err := s.Run(ctx, "Close ticket 42 if it is about the printer.")
	if err != nil {
		return err
	}
	for _, c := range out.Calls {
		fmt.Printf("%s %-6s %-8s %s\n", c.ID, c.Tool, c.Decision, c.Reason)
	}
	fmt.Printf("status: %s, model said: %s\n", out.Status, out.Text)
	// The decision alone, beside the session: nothing runs.
	d, err := rt.Explain(ctx, "Bash", json.RawMessage(`{"command":"echo x > .norma/policy.yaml"}`))
	if err != nil {
		return err
	}
	fmt.Printf("explain Bash echo x > .norma/policy.yaml: %s %s\n", d.Decision.Mode, d.Decision.Reason)
	// README:end

	// Every decision above is an event of the hash-chained audit log.
	v, err := svcs.Audit.Verify(ctx)
	if err != nil {
		return err
	}
	if v.FirstBroken != 0 || v.Reason != "" {
		return fmt.Errorf("audit log: %s %s", v.Reason, v.Problem)
	}
	fmt.Println("audit log: chain verified")
	return nil
}

// approverFunc adapts a function to approval.Approver, what the approval
// service asks when a call needs approval.
type approverFunc func(context.Context, approval.Record) (approval.Verdict, error)

func (f approverFunc) Approve(ctx context.Context, r approval.Record) (approval.Verdict, error) {
	return f(ctx, r)
}
