package broker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/norma-run/norma/approval"
	"github.com/norma-run/norma/audit"
	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/gate"
	"github.com/norma-run/norma/tool"
)

// askEverything is a policy under which every request needs approval.
type askEverything struct{}

func (askEverything) Decide(context.Context, capability.Request) capability.Decision {
	return capability.Decision{Mode: capability.ApprovalRequired, Reason: capability.ReasonApprovalRequired, Layer: "test"}
}

// TestOneServiceForGateAndBroker: one *approval.Service is the approver of
// a gate and of a broker (approval.Authorizer is the one approver
// interface). A tool call and a brokered POST are each stored, decided,
// consumed for exactly their own action hash and finished there, and each
// side runs under its own ticket's idempotency key.
func TestOneServiceForGateAndBroker(t *testing.T) {
	ctx := t.Context()
	sink := audit.NewMemory()
	svc, err := approval.NewService(approval.NewMemoryBackend(), &approval.Options{Sink: sink, Approver: approval.Auto{Grant: true, By: "test"}})
	if err != nil {
		t.Fatal(err)
	}
	const run = "run-1" // the broker env's identity runs in run-1 too

	// The broker asks svc about a per_action POST.
	e := newEnv(t, envOptions{approver: svc})
	url := e.api.origin + "/repos/acme/issues/42/comments"
	body := `{"body":"LGTM"}`
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if r := e.do(e.client, req); r.status != http.StatusCreated || e.api.count() != 1 {
		t.Fatalf("approved POST = %d %s (server saw %d), want 201 once", r.status, r.body, e.api.count())
	}
	brokerEvent := e.lastEvent()

	// The gate asks the same svc about a tool call.
	reg := tool.NewRegistry(&tool.Options{Audit: sink})
	var key string
	note := tool.MustBuild(tool.Spec{
		Name:   "Note",
		Schema: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["path"],"properties":{"path":{"type":"string"}}}`),
		Accesses: func(in tool.Input) ([]tool.Access, error) {
			p, _ := in.String("path")
			return []tool.Access{{Kind: capability.FSWrite, Path: p}}, nil
		},
		Call: func(_ context.Context, env tool.Env, _ tool.Input) (tool.Result, error) {
			key = env.IdempotencyKey()
			return tool.Result{Content: "noted"}, nil
		},
	})
	if err := reg.Register(tool.Registration{Tool: note, Visibility: tool.Visible}); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.OpenRun(run, "user:test"); err != nil {
		t.Fatal(err)
	}
	g, err := gate.New(gate.Options{
		Registry: reg, Audit: sink, Approver: svc,
		Policy: func(tool.Plugin) (capability.Decider, error) { return askEverything{}, nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	gr := g.Execute(ctx, gate.Call{ID: "tu-1", RunID: run, Principals: []string{"user:test"}, Tool: "Note", Input: json.RawMessage(`{"path":"notes.txt"}`)})
	if gr.IsError || gr.Reason != capability.ReasonAllowed || gr.ApprovalID == "" {
		t.Fatalf("approved tool call = %+v", gr)
	}

	recs, err := svc.List(ctx, approval.ListFilter{RunID: run})
	if err != nil || len(recs) != 2 {
		t.Fatalf("approvals = %+v, %v; want 2 (one per side)", recs, err)
	}
	byTool := map[string]approval.Record{}
	for _, r := range recs {
		byTool[r.Tool] = r
	}
	sum := sha256.Sum256([]byte(body))
	wantBroker, err := ActionHash(e.broker.id, http.MethodPost, url, "sha256:"+hex.EncodeToString(sum[:]))
	if err != nil {
		t.Fatal(err)
	}
	wantGate, err := approval.HashAction(approval.Action{Tool: "Note", Input: json.RawMessage(`{"path":"notes.txt"}`), RunID: run})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		tool, hash, approvalID, key, toolUseID string
	}{
		{ToolNetRequest, wantBroker, brokerEvent.ApprovalID, e.api.last().Header.Get("Idempotency-Key"), ""},
		{"Note", wantGate, gr.ApprovalID, key, "tu-1"},
	} {
		r, ok := byTool[tt.tool]
		switch {
		case !ok:
			t.Errorf("no approval for %s in %+v", tt.tool, recs)
		case r.ActionHash != tt.hash:
			t.Errorf("%s: ActionHash = %s, want %s", tt.tool, r.ActionHash, tt.hash)
		case r.ID != tt.approvalID:
			t.Errorf("%s: approval %s, but the call ran under %q", tt.tool, r.ID, tt.approvalID)
		case r.State != approval.StateConsumed || r.Uses != 1:
			t.Errorf("%s: state %s, uses %d; want consumed once", tt.tool, r.State, r.Uses)
		case tt.key != approval.IdempotencyKey(r.ID, r.ActionHash, 1):
			t.Errorf("%s: idempotency key %q, want the ticket's", tt.tool, tt.key)
		case r.ToolUseID != tt.toolUseID:
			t.Errorf("%s: ToolUseID = %q, want %q", tt.tool, r.ToolUseID, tt.toolUseID)
		}
	}

	// Both sides told svc that their execution is over. The broker does
	// so once the upstream exchange has been relayed, so allow it a moment.
	deadline := time.Now().Add(10 * time.Second)
	for {
		left, err := svc.Unfinished(ctx, run)
		if err != nil {
			t.Fatal(err)
		}
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("unfinished tickets = %+v, want none", left)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// authorizerFunc adapts a function to approval.Authorizer (tests only).
type authorizerFunc func(ctx context.Context, req approval.Request) (approval.Ticket, error)

func (f authorizerFunc) Authorize(ctx context.Context, req approval.Request) (approval.Ticket, error) {
	return f(ctx, req)
}

// TestAuthorizerFailsClosed: an approver's error keeps its reason code, any
// other error is APPROVAL_DENIED, and a ticket without an approval id or
// for another action is APPROVAL_MISMATCH; in every case nothing is sent.
// The "ok" row is the control: the same request with a good ticket is sent.
func TestAuthorizerFailsClosed(t *testing.T) {
	for _, tt := range []struct {
		name   string
		a      authorizerFunc
		status int
		want   capability.Reason
	}{
		{"ok", func(_ context.Context, r approval.Request) (approval.Ticket, error) {
			return approval.Ticket{ApprovalID: "a1", ActionHash: r.ActionHash}, nil
		}, http.StatusCreated, ""},
		{"store-down", func(context.Context, approval.Request) (approval.Ticket, error) {
			return approval.Ticket{}, capability.Denied(capability.ReasonApprovalStoreUnavailable, "", "down")
		}, http.StatusForbidden, capability.ReasonApprovalStoreUnavailable},
		{"plain-error", func(context.Context, approval.Request) (approval.Ticket, error) {
			return approval.Ticket{}, errors.New("boom")
		}, http.StatusForbidden, capability.ReasonApprovalDenied},
		{"empty-ticket", func(context.Context, approval.Request) (approval.Ticket, error) {
			return approval.Ticket{}, nil
		}, http.StatusForbidden, capability.ReasonApprovalMismatch},
		{"wrong-hash", func(context.Context, approval.Request) (approval.Ticket, error) {
			return approval.Ticket{ApprovalID: "a1", ActionHash: "sha256:00"}, nil
		}, http.StatusForbidden, capability.ReasonApprovalMismatch},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, envOptions{approver: tt.a})
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, e.api.origin+"/repos/acme/issues/42/comments", strings.NewReader("{}"))
			r := e.do(e.client, req)
			if r.status != tt.status || (tt.want != "" && r.reason() != tt.want) {
				t.Errorf("POST = %d %s, want %d %s", r.status, r.body, tt.status, tt.want)
			}
			if sent := e.api.count(); (tt.want == "") != (sent == 1) {
				t.Errorf("server saw %d requests", sent)
			}
		})
	}
}

// TestActionHashBindsWorkspace: a brokered request of the same plugin and
// run in another workspace is another action.
func TestActionHashBindsWorkspace(t *testing.T) {
	id := Identity{Plugin: "p", Version: "1", ManifestDigest: "sha256:m", RunID: "r", Process: "1"}
	a, err := ActionHash(id, http.MethodPost, "https://api.example.invalid/x", "sha256:00")
	if err != nil {
		t.Fatal(err)
	}
	id.Workspace = "wsid:other"
	b, err := ActionHash(id, http.MethodPost, "https://api.example.invalid/x", "sha256:00")
	if err != nil || a == b {
		t.Errorf("ActionHash in another workspace = %s, %v; same as %s", b, err, a)
	}
}
