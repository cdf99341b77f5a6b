package approval_test

import (
	"encoding/json"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/norma-run/norma/approval"
	"github.com/norma-run/norma/audit"
	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/store"
)

type clock struct{ t atomic.Int64 }

func newClock() *clock {
	c := &clock{}
	c.t.Store(time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC).UnixNano())
	return c
}
func (c *clock) Now() time.Time          { return time.Unix(0, c.t.Load()).UTC() }
func (c *clock) Advance(d time.Duration) { c.t.Add(int64(d)) }

func hashOf(t testing.TB, run, input string) string {
	t.Helper()
	h, err := approval.HashAction(approval.Action{
		Plugin: "com.example.issue-helper", Version: "1.4.0", ManifestDigest: "sha256:abc",
		Tool: "issues.comment", Input: json.RawMessage(input), RunID: run,
	})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func request(t testing.TB, run, input string, scope approval.Scope) approval.Request {
	return approval.Request{
		RunID: run, Principals: []string{"user:alice", "agent:main"}, ToolUseID: "toolu_1", Plugin: "com.example.issue-helper",
		PluginVersion: "1.4.0", ManifestDigest: "sha256:abc", Tool: "issues.comment", Effect: "external_write",
		Target: "example-org/demo-repo#42", Preview: "Comment: looks good", Credential: "issue_api_token",
		ActionHash: hashOf(t, run, input), Scope: scope,
	}
}

// backends returns the backends every service test runs on.
func backends(t *testing.T) map[string]approval.Backend {
	db, err := store.Open(t.Context(), filepath.Join(t.TempDir(), store.FileName))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return map[string]approval.Backend{"memory": approval.NewMemoryBackend(), "sqlite": db}
}

func newService(t *testing.T, b approval.Backend, ap approval.Approver, c *clock) (*approval.Service, *audit.Log) {
	t.Helper()
	sink := audit.NewMemory()
	t.Cleanup(func() { sink.Close() })
	s, err := approval.NewService(b, &approval.Options{Sink: sink, Approver: ap, Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	return s, sink
}

func wantReason(t *testing.T, what string, err error, want capability.Reason) {
	t.Helper()
	if got := capability.ReasonOf(err); got != want {
		t.Errorf("%s: reason = %q (err %v), want %q", what, got, err, want)
	}
	if _, ok := err.(*capability.Error); want != "" && !ok {
		t.Errorf("%s: error is %T, want *capability.Error", what, err)
	}
}

func TestHashAction(t *testing.T) {
	base := approval.Action{Plugin: "p", Version: "1", ManifestDigest: "sha256:m", Tool: "t", RunID: "r", Input: json.RawMessage(`{"b":1,"a":[1,2]}`)}
	h0, err := approval.HashAction(base)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		mod     func(a *approval.Action)
		same    bool
		wantErr bool
	}{
		{"key order and space", func(a *approval.Action) { a.Input = json.RawMessage(" {\"a\": [1, 2], \"b\": 1.0}") }, true, false},
		{"changed argument", func(a *approval.Action) { a.Input = json.RawMessage(`{"b":2,"a":[1,2]}`) }, false, false},
		{"other run", func(a *approval.Action) { a.RunID = "r2" }, false, false},
		{"other workspace", func(a *approval.Action) { a.Workspace = "wsid:other" }, false, false},
		{"other version", func(a *approval.Action) { a.Version = "2" }, false, false},
		{"other digest", func(a *approval.Action) { a.ManifestDigest = "sha256:n" }, false, false},
		{"invalid input", func(a *approval.Action) { a.Input = json.RawMessage(`{"a":`) }, false, true},
		{"empty input", func(a *approval.Action) { a.Input = nil }, false, true},
		{"no run", func(a *approval.Action) { a.RunID = "" }, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := base
			tt.mod(&a)
			h, err := approval.HashAction(a)
			if (err != nil) != tt.wantErr {
				t.Fatalf("HashAction() err = %v, wantErr %v", err, tt.wantErr)
			}
			if err == nil && (h == h0) != tt.same {
				t.Errorf("HashAction() = %s, base %s; same = %v, want %v", h, h0, h == h0, tt.same)
			}
		})
	}
}

// TestNilService: a nil *Service is an Authorizer that denies (the gate
// and the broker hold it as an interface, so it is not a nil approver).
func TestNilService(t *testing.T) {
	var s *approval.Service
	var a approval.Authorizer = s
	_, err := a.Authorize(t.Context(), request(t, "run-1", `{}`, ""))
	wantReason(t, "nil service", err, capability.ReasonApprovalRequired)
	if err := s.Finish(t.Context(), approval.Ticket{ApprovalID: "x"}); err == nil {
		t.Error("Finish on a nil service succeeded")
	}
}

func TestAuthorizeGrantOnce(t *testing.T) {
	for name, b := range backends(t) {
		t.Run(name, func(t *testing.T) {
			c := newClock()
			s, sink := newService(t, b, approval.Auto{Grant: true}, c)
			ctx := t.Context()
			req := request(t, "run-1", `{"body":"hi"}`, approval.ScopeOnce)
			tk, err := s.Authorize(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			if want := approval.IdempotencyKey(tk.ApprovalID, req.ActionHash, 1); tk.IdempotencyKey != want {
				t.Errorf("key = %s, want %s", tk.IdempotencyKey, want)
			}
			rec, err := s.Get(ctx, tk.ApprovalID)
			if err != nil || rec.State != approval.StateConsumed || rec.Uses != 1 || rec.ToolUseID != req.ToolUseID {
				t.Errorf("Get = %+v, %v; want consumed once, asked by %s", rec, err, req.ToolUseID)
			}
			// Once never reuses: a second identical action asks again.
			tk2, err := s.Authorize(ctx, req)
			if err != nil || tk2.ApprovalID == tk.ApprovalID {
				t.Errorf("second Authorize = %+v, %v; want a new approval", tk2, err)
			}
			_, err = s.Redeem(ctx, tk.ApprovalID, req.RunID, req.ActionHash)
			wantReason(t, "redeem consumed", err, capability.ReasonApprovalConsumed)

			var types []string
			all, _ := sink.Query(ctx, audit.Filter{})
			for _, r := range all {
				if r.Event.ApprovalID == tk.ApprovalID {
					types = append(types, r.Event.Type)
					if r.Event.TargetHash != audit.HashTarget(req.Target) {
						t.Errorf("event %s target hash = %q", r.Event.Type, r.Event.TargetHash)
					}
				}
			}
			want := []string{audit.TypeApprovalRequested, audit.TypeApprovalGranted, audit.TypeApprovalConsumed}
			if len(types) != len(want) {
				t.Fatalf("events = %v, want %v", types, want)
			}
			for i := range want {
				if types[i] != want[i] {
					t.Errorf("events = %v, want %v", types, want)
				}
			}
		})
	}
}
