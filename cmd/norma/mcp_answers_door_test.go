package main

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// fixtureTool is the gate's name of the fixture's tool "everything".
const fixtureTool = "mcp__local.fixture__everything"

// callResult calls tool and returns the whole result; a protocol error
// fails the test.
func callResult(t *testing.T, s *mcp.ClientSession, tool string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("tools/call %s is a protocol error, not a tool result: %v", tool, err)
	}
	return res
}

// TestMCPProxyApprovalAnswersDoor: a client of the 2025-11-25 protocol is
// asked for approval with elicitation/create through the built `norma mcp
// proxy`, and whatever it answers the call ends with a tool result, never
// a protocol error: yes runs the call once; no (deny) or a decline is
// APPROVAL_DENIED, the request decided and nothing run; a cancel, an
// error, an accept with fields that are not the form's (the client's SDK
// refuses to send it: an error) or no answer within --approval-wait
// leaves the request pending (APPROVAL_PENDING, its id in _meta), nothing
// run.
func TestMCPProxyApprovalAnswersDoor(t *testing.T) {
	mf := fixturePackageWith(t, strings.Replace(fixtureManifest, "{name: everything, risk: read, approval: never}", "{name: everything, risk: read}", 1))
	e := newRunEnv(t)
	answer := func(a *mcp.ElicitResult, err error) func(*mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		return func(*mcp.ElicitRequest) (*mcp.ElicitResult, error) { return a, err }
	}
	cases := []struct {
		name   string
		answer func(*mcp.ElicitRequest) (*mcp.ElicitResult, error)
		reason string
	}{
		{"yes", answer(&mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "approve"}}, nil), "ALLOWED"},
		{"no", answer(&mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "deny"}}, nil), "APPROVAL_DENIED"},
		{"wrong fields", answer(&mcp.ElicitResult{Action: "accept", Content: map[string]any{"approved": true}}, nil), "APPROVAL_PENDING"},
		{"decline", answer(&mcp.ElicitResult{Action: "decline"}, nil), "APPROVAL_DENIED"},
		{"cancel", answer(&mcp.ElicitResult{Action: "cancel"}, nil), "APPROVAL_PENDING"},
		{"error", answer(nil, errors.New("the client failed")), "APPROVAL_PENDING"},
		{"no answer", func(*mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			time.Sleep(8 * time.Second)
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "approve"}}, nil
		}, "APPROVAL_PENDING"},
	}
	for _, c := range cases {
		s := e.proxyClient(t, c.answer, "2025-11-25", "--manifest", mf, "--approval-wait", "3s", "--", "./mcpfixture")
		res := callResult(t, s, "everything", map[string]any{"word": c.name})
		reason, _ := res.Meta["norma/reason"].(string)
		id, _ := res.Meta["norma/approval"].(string)
		if reason != c.reason || res.IsError != (c.reason != "ALLOWED") {
			t.Errorf("%s: reason %q, isError %v, want %s: %v", c.name, reason, res.IsError, c.reason, res.Content)
		}
		if c.reason == "APPROVAL_PENDING" && id == "" {
			t.Errorf("%s: a pending refusal without its approval id", c.name)
		}
		s.Close()
	}
	ran := 0
	for _, r := range callReasons(e.auditEvents(t), fixtureTool) {
		if r == "ALLOWED" {
			ran++
		}
	}
	if ran != 1 {
		t.Errorf("the tool ran %d times, want once (the yes): %v", ran, callReasons(e.auditEvents(t), fixtureTool))
	}

}

// TestMCPProxyProbeDoor: a client probing prompts/list and
// resources/list of a server that offers neither gets empty lists, no
// error; the audit log records each probe as a decision of the gate,
// never a TOOL_ERROR.
func TestMCPProxyProbeDoor(t *testing.T) {
	mf := devPackage(t)
	e := newRunEnv(t)
	s := e.proxyClient(t, nil, "", "--manifest", mf, "--", "python3", "server.py")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pl, err := s.ListPrompts(ctx, nil)
	if err != nil || len(pl.Prompts) != 0 {
		t.Errorf("prompts/list: %v %v", pl, err)
	}
	rl, err := s.ListResources(ctx, nil)
	if err != nil || len(rl.Resources) != 0 {
		t.Errorf("resources/list: %v %v", rl, err)
	}
	evs := e.auditEvents(t)
	for _, tool := range []string{"ListMcpPrompts", "ListMcpResources"} {
		rs := callReasons(evs, tool)
		if len(rs) != 1 || slices.Contains(rs, "TOOL_ERROR") {
			t.Errorf("%s audited as %v, want one decision", tool, rs)
		}
	}
}
