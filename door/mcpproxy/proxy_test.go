package mcpproxy

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/norma-run/norma/approval"
	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/gate"
	"github.com/norma-run/norma/provider"
)

// fakeGate stands for the session: mcp__srv__write needs approval
// apr_N, granted once the approval service decided it yes (the fake
// service below), and runs then; mcp__srv__denied is refused by a rule.
type fakeGate struct {
	mu      sync.Mutex
	ran     []string // inputs of the calls that ran
	granted map[string]bool
	pending map[string]string // input → approval id
	records map[string]approval.Record
	decided []string
}

func newFake() *fakeGate {
	return &fakeGate{granted: map[string]bool{}, pending: map[string]string{}, records: map[string]approval.Record{}}
}

func (f *fakeGate) ToolSpecs() []provider.ToolSpec {
	schema := json.RawMessage(`{"type":"object","properties":{"x":{"type":"number"}}}`)
	return []provider.ToolSpec{
		{Name: "Read", Description: "built-in", InputSchema: schema},
		{Name: "mcp__srv__write", Description: "writes", InputSchema: schema},
		{Name: "mcp__srv__denied", Description: "denied", InputSchema: schema},
		{Name: "mcp__other__write", Description: "another server's", InputSchema: schema},
	}
}

func (f *fakeGate) Execute(ctx context.Context, tool string, in json.RawMessage) gate.Result {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch tool {
	case "mcp__srv__denied":
		return gate.Result{Tool: tool, IsError: true, Reason: capability.ReasonRuleDenied, Content: "denied by rule"}
	case "mcp__srv__write":
		key := string(in)
		if id := f.pending[key]; id != "" && f.granted[id] {
			delete(f.pending, key)
			f.ran = append(f.ran, key)
			return gate.Result{Tool: tool, Reason: capability.ReasonAllowed, Content: "wrote " + key}
		}
		id := "apr_" + string(rune('a'+len(f.records)))
		f.pending[key] = id
		f.records[id] = approval.Record{Request: approval.Request{ID: id, Tool: tool, Preview: "write " + key, Expires: time.Now().Add(time.Minute)}}
		return gate.Result{Tool: tool, IsError: true, Reason: capability.ReasonApprovalPending, ApprovalID: id, Content: "pending"}
	}
	return gate.Result{Tool: tool, IsError: true, Reason: capability.ReasonToolUnknown}
}

func (f *fakeGate) Get(_ context.Context, id string) (approval.Record, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.records[id], nil
}

func (f *fakeGate) Decide(_ context.Context, id string, yes bool, who, why string) (approval.Record, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.granted[id] = yes
	f.decided = append(f.decided, id)
	return f.records[id], nil
}

// connect serves a proxy over f to a client that declares elicitation
// and handles input requests itself.
func connect(t *testing.T, f *fakeGate) *mcp.ClientSession {
	t.Helper()
	p, err := New(Options{Door: f, Server: "srv", Approvals: f})
	if err != nil {
		t.Fatal(err)
	}
	st, ct := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := p.Server().Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "test"}, &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return nil, nil
		},
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
	})
	cs, err := c.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); ss.Close() })
	return cs
}

func text(r *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// TestToolsAndRefusal: only the server's tools are listed, under their
// own names with their schemas; a refusal carries its code.
func TestToolsAndRefusal(t *testing.T) {
	cs := connect(t, newFake())
	ctx := context.Background()
	tl, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tl.Tools {
		names = append(names, tool.Name)
	}
	if strings.Join(names, ",") != "denied,write" {
		t.Errorf("tools: %v", names)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "denied", Arguments: map[string]any{}})
	if err != nil || !res.IsError || text(res) != "norma: RULE_DENIED: denied by rule" || res.Meta[MetaReason] != "RULE_DENIED" {
		t.Errorf("refusal: %v %v", res, err)
	}
}

// TestApprovalAnswerBinding: a call that needs approval returns an input
// request with the approval's preview; the client's yes decides that
// approval and the repeated call runs, once. The answer cannot be moved
// to another call (other arguments), replayed, or made up for an
// approval the proxy never asked: each is refused (INVALID_REQUEST),
// nothing is decided and nothing runs.
func TestApprovalAnswerBinding(t *testing.T) {
	f := newFake()
	cs := connect(t, f)
	ctx := context.Background()
	call := func(x int, state string, answer *mcp.ElicitResult) *mcp.CallToolResult {
		t.Helper()
		p := &mcp.CallToolParams{Name: "write", Arguments: map[string]any{"x": x}, RequestState: state}
		if answer != nil {
			p.InputResponses = mcp.InputResponseMap{inputKey: answer}
		}
		res, err := cs.CallTool(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	yes := &mcp.ElicitResult{Action: "accept", Content: map[string]any{choiceField: choiceApprove}}

	first := call(1, "", nil)
	ask, ok := first.InputRequests[inputKey].(*mcp.ElicitParams)
	if !first.NeedsInput() || !ok || !strings.Contains(ask.Message, `write {"x":1}`) || first.RequestState == "" {
		t.Fatalf("first call: %+v", first)
	}
	id := first.RequestState

	// Moved to another call: refused, nothing decided or run.
	if r := call(2, id, yes); !r.IsError || r.Meta[MetaReason] != string(capability.ReasonInvalidRequest) {
		t.Errorf("answer moved to x=2: %v", text(r))
	}
	// Made up for an approval never asked.
	if r := call(1, "apr_forged", yes); !r.IsError || r.Meta[MetaReason] != string(capability.ReasonInvalidRequest) {
		t.Errorf("made-up approval: %v", text(r))
	}
	if len(f.decided) != 0 || len(f.ran) != 0 {
		t.Fatalf("decided %v, ran %v", f.decided, f.ran)
	}

	// Asked again, answered yes: decided, and the call runs once.
	again := call(1, "", nil)
	if r := call(1, again.RequestState, yes); r.IsError || text(r) != `wrote {"x":1}` {
		t.Errorf("approved call: %v", text(r))
	}
	if len(f.decided) != 1 || len(f.ran) != 1 {
		t.Errorf("decided %v, ran %v", f.decided, f.ran)
	}
	// Replayed: refused.
	if r := call(1, again.RequestState, yes); !r.IsError || r.Meta[MetaReason] != string(capability.ReasonInvalidRequest) {
		t.Errorf("replayed answer: %v", text(r))
	}
	// A no is recorded and nothing runs.
	no := call(3, "", nil)
	if r := call(3, no.RequestState, &mcp.ElicitResult{Action: "decline"}); !r.IsError || r.Meta[MetaReason] != string(capability.ReasonApprovalDenied) {
		t.Errorf("declined: %v", text(r))
	}
	if len(f.decided) != 2 || len(f.ran) != 1 {
		t.Errorf("decided %v, ran %v", f.decided, f.ran)
	}
}
