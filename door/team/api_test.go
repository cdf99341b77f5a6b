package team

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/norma-run/norma/approval"
	"github.com/norma-run/norma/audit"
	"github.com/norma-run/norma/capability"
)

type env struct {
	srv    *Server
	ts     *httptest.Server
	svc    *approval.Service
	store  *approval.MemoryBackend
	log    *audit.Log
	events *audit.MemoryBackend
	tok    map[Role]string
	logged strings.Builder
}

func newEnv(t *testing.T, mod func(*Options)) *env {
	t.Helper()
	e := &env{store: approval.NewMemoryBackend(), events: audit.NewMemoryBackend(), tok: map[Role]string{}}
	var err error
	if e.log, err = audit.Open(e.events, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.log.Close() })
	if e.svc, err = approval.NewService(e.store, &approval.Options{Sink: e.log}); err != nil {
		t.Fatal(err)
	}
	tk := OpenTokens(filepath.Join(t.TempDir(), TokenFile))
	for _, r := range Roles {
		sec, _, err := tk.Add(string(r)+"-1", r, now)
		if err != nil {
			t.Fatal(err)
		}
		e.tok[r] = sec.Reveal()
	}
	opts := Options{Tokens: tk, Approvals: e.svc, Audit: e.events, Poll: 20 * time.Millisecond,
		Log: func(l string) { e.logged.WriteString(l + "\n") },
		Plugins: func(context.Context) ([]Plugin, error) {
			return []Plugin{{ID: "acme.notes", Version: "1.2.0", Grant: map[string][]string{"filesystem_read": {"docs/**"}}}}, nil
		}}
	if mod != nil {
		mod(&opts)
	}
	if e.srv, err = New(opts); err != nil {
		t.Fatal(err)
	}
	e.ts = httptest.NewServer(e.srv)
	t.Cleanup(e.ts.Close)
	return e
}

// pending files a request the way a headless run does (Authorize with
// no approver) and returns its id.
func (e *env) pending(t *testing.T, run string) string {
	t.Helper()
	_, err := e.svc.Authorize(t.Context(), approval.Request{RunID: run, Tool: "Bash", Effect: "process.spawn",
		Target: "rm -rf build", Preview: "$ rm -rf build\n<script>alert(1)</script>", ActionHash: "sha256:" + strings.Repeat("ab", 32)})
	if capability.ReasonOf(err) != capability.ReasonApprovalRequired {
		t.Fatalf("Authorize: %v, want APPROVAL_REQUIRED", err)
	}
	recs, err := e.svc.List(t.Context(), approval.ListFilter{RunID: run, State: approval.StatePending})
	if err != nil || len(recs) != 1 {
		t.Fatalf("pending of %s: %v, %v", run, recs, err)
	}
	return recs[0].ID
}

func (e *env) do(t *testing.T, method, path, tok, body string) (int, map[string]any) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, e.ts.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	res, err := e.ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if ct := res.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("%s %s: Content-Type %q, body %s", method, path, ct, b)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s %s: not JSON: %s", method, path, b)
	}
	if bad := notSnake(m, ""); len(bad) > 0 {
		t.Errorf("%s %s: keys not in snake_case: %v", method, path, bad)
	}
	if res.StatusCode >= 400 {
		ee, _ := m["error"].(map[string]any)
		if ee == nil || ee["code"] == "" || ee["message"] == "" {
			t.Errorf("%s %s: error body %s", method, path, b)
		}
	}
	for _, tk := range e.tok {
		if strings.Contains(string(b), tk) {
			t.Errorf("%s %s: the answer holds a token", method, path)
		}
	}
	return res.StatusCode, m
}

var snakeKey = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// notSnake lists the keys of v that are not snake_case, as every JSON
// output of Norma's is.
func notSnake(v any, path string) []string {
	var bad []string
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if !snakeKey.MatchString(k) {
				bad = append(bad, path+"."+k)
			}
			bad = append(bad, notSnake(e, path+"."+k)...)
		}
	case []any:
		for _, e := range x {
			bad = append(bad, notSnake(e, path+"[]")...)
		}
	}
	return bad
}

func errCode(m map[string]any) string {
	ee, _ := m["error"].(map[string]any)
	s, _ := ee["code"].(string)
	return s
}

// TestRoutesByRole: every route, every role (and no token, and a revoked
// one) → the status. A refused state-changing call changes nothing.
func TestRoutesByRole(t *testing.T) {
	const file = `{"run_id":"run_f","tool":"Write","effect":"fs.write","target":"notes.md","preview":"+ n","action_hash":"sha256:` +
		"cdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcd" + `"}`
	type want struct{ approver, viewer, runner int }
	routes := []struct {
		method, path, body string
		want               want
		// mutates: the call changes the approval {id}; a refusal must not.
		mutates bool
	}{
		{"GET", "/api/v1/whoami", "", want{200, 200, 200}, false},
		{"GET", "/api/v1/approvals", "", want{200, 200, 200}, false},
		{"GET", "/api/v1/approvals?state=all&limit=5", "", want{200, 200, 200}, false},
		{"GET", "/api/v1/approvals/{id}", "", want{200, 200, 200}, false},
		{"POST", "/api/v1/approvals/{id}/approve", `{"reason":"ok"}`, want{200, 403, 403}, true},
		{"POST", "/api/v1/approvals/{id}/deny", `{"reason":"no"}`, want{200, 403, 403}, true},
		{"POST", "/api/v1/approvals", file, want{403, 403, 202}, false},
		// {id} was filed by a local run, not the runner: 403.
		{"POST", "/api/v1/approvals/{id}/finish", `{"idempotency_key":"nik_x"}`, want{403, 403, 403}, false},
		{"GET", "/api/v1/audit?type=approval_requested", "", want{200, 200, 403}, false},
		{"GET", "/api/v1/audit/verify", "", want{200, 200, 403}, false},
		{"GET", "/api/v1/audit/checkpoints", "", want{200, 200, 403}, false},
		{"GET", "/api/v1/runs", "", want{200, 200, 403}, false},
		{"GET", "/api/v1/runs/{run}", "", want{200, 200, 403}, false},
		{"GET", "/api/v1/plugins", "", want{200, 200, 403}, false},
		{"GET", "/api/v1/nothing", "", want{404, 404, 404}, false},
		{"DELETE", "/api/v1/approvals/{id}", "", want{404, 404, 404}, true},
	}
	e := newEnv(t, nil)
	revoked := e.tok[RoleApprover]
	if err := e.srv.Tokens().Revoke("approver-1"); err != nil {
		t.Fatal(err)
	}
	sec, _, err := e.srv.Tokens().Add("approver-2", RoleApprover, now)
	if err != nil {
		t.Fatal(err)
	}
	e.tok[RoleApprover] = sec.Reveal()
	n := 0
	for _, rt := range routes {
		for _, c := range []struct {
			who  string
			tok  string
			want int
		}{
			{"approver", e.tok[RoleApprover], rt.want.approver},
			{"viewer", e.tok[RoleViewer], rt.want.viewer},
			{"runner", e.tok[RoleRunner], rt.want.runner},
			{"no token", "", 401},
			{"revoked", revoked, 401},
			{"not a token", "norma_team_guess", 401},
		} {
			n++
			run := "run_" + string(rune('a'+n%26)) + strings.Repeat("x", n)
			id := e.pending(t, run)
			path := strings.NewReplacer("{id}", id, "{run}", run).Replace(rt.path)
			before, _ := e.svc.Get(t.Context(), id)
			evBefore := len(e.eventsOf(t, run))
			got, body := e.do(t, rt.method, path, c.tok, rt.body)
			if got != c.want {
				t.Errorf("%s %s as %s: %d %v, want %d", rt.method, rt.path, c.who, got, body, c.want)
			}
			switch got {
			case 401:
				if errCode(body) != string(capability.ReasonTeamUnauthenticated) {
					t.Errorf("%s %s as %s: code %q", rt.method, rt.path, c.who, errCode(body))
				}
			case 403:
				if errCode(body) != string(capability.ReasonTeamForbidden) {
					t.Errorf("%s %s as %s: code %q", rt.method, rt.path, c.who, errCode(body))
				}
			}
			after, _ := e.svc.Get(t.Context(), id)
			if rt.mutates && got >= 400 {
				if after.State != approval.StatePending || after.DecidedBy != "" || !after.Decided.IsZero() {
					t.Errorf("%s %s as %s refused, but the record changed: %+v", rt.method, rt.path, c.who, after)
				}
				if evs := e.eventsOf(t, run); len(evs) != evBefore {
					t.Errorf("%s %s as %s refused, but %d events were audited", rt.method, rt.path, c.who, len(evs)-evBefore)
				}
			}
			if !rt.mutates && after.State != before.State {
				t.Errorf("%s %s as %s changed the record: %s → %s", rt.method, rt.path, c.who, before.State, after.State)
			}
		}
	}
	if strings.Contains(e.logged.String(), revoked) || strings.Contains(e.logged.String(), e.tok[RoleViewer]) {
		t.Error("the server's log holds a token")
	}
}

func (e *env) eventsOf(t *testing.T, run string) []audit.Record {
	t.Helper()
	recs, err := audit.QueryBackend(t.Context(), e.events, audit.Filter{RunID: run})
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// TestApproveRecordsWho: the approver's decision goes through
// Service.Decide, names the token and is audited with its reason (the
// chain, not only the mutable record, says why); a second decision is a
// 409 and changes nothing.
func TestApproveRecordsWho(t *testing.T) {
	e := newEnv(t, nil)
	id := e.pending(t, "run_1")
	code, body := e.do(t, "POST", "/api/v1/approvals/"+id+"/approve", e.tok[RoleApprover], `{"reason":"looks fine"}`)
	if code != 200 {
		t.Fatalf("approve: %d %v", code, body)
	}
	rec, _ := e.svc.Get(t.Context(), id)
	if rec.State != approval.StateGranted || rec.DecidedBy != "team:approver-1" || rec.Why != "looks fine" {
		t.Errorf("record = %+v", rec)
	}
	evs := e.eventsOf(t, "run_1")
	last := evs[len(evs)-1].Event
	if last.Type != audit.TypeApprovalGranted || last.Detail["by"] != "team:approver-1" || last.Detail["why"] != "looks fine" || last.ApprovalID != id {
		t.Errorf("audit event = %+v", last)
	}
	code, body = e.do(t, "POST", "/api/v1/approvals/"+id+"/deny", e.tok[RoleApprover], `{"reason":"changed my mind"}`)
	if code != 409 || errCode(body) != string(capability.ReasonTeamAlreadyDecided) {
		t.Errorf("second decision: %d %v", code, body)
	}
	if rec2, _ := e.svc.Get(t.Context(), id); rec2.State != approval.StateGranted || rec2.Why != "looks fine" {
		t.Errorf("record after the second decision = %+v", rec2)
	}
	if code, body := e.do(t, "POST", "/api/v1/approvals/apr_nope/approve", e.tok[RoleApprover], ""); code != 404 || errCode(body) != string(capability.ReasonTeamNotFound) {
		t.Errorf("unknown id: %d %v", code, body)
	}
}

// TestBadBodies: bounded, strict JSON; a refused body decides nothing.
func TestBadBodies(t *testing.T) {
	e := newEnv(t, nil)
	id := e.pending(t, "run_b")
	for _, c := range []struct {
		body string
		code int
		rc   capability.Reason
	}{
		{`{"reason":`, 400, capability.ReasonInvalidRequest},
		{`{"reason":"x","approve":true}`, 400, capability.ReasonInvalidRequest},
		{`{"reason":"x"} {"reason":"y"}`, 400, capability.ReasonInvalidRequest},
		{`["x"]`, 400, capability.ReasonInvalidRequest},
		{`{"reason":"` + strings.Repeat("a", MaxBody) + `"}`, 413, capability.ReasonTeamBodyTooLarge},
	} {
		code, body := e.do(t, "POST", "/api/v1/approvals/"+id+"/approve", e.tok[RoleApprover], c.body)
		if code != c.code || errCode(body) != string(c.rc) {
			t.Errorf("body %.40q: %d %v, want %d %s", c.body, code, body, c.code, c.rc)
		}
	}
	if rec, _ := e.svc.Get(t.Context(), id); rec.State != approval.StatePending {
		t.Errorf("a refused body decided: %+v", rec)
	}
	for _, q := range []string{"?state=bogus", "?limit=-1", "?limit=x", "?limit=100000"} {
		if code, _ := e.do(t, "GET", "/api/v1/approvals"+q, e.tok[RoleViewer], ""); code != 400 {
			t.Errorf("GET approvals%s: %d, want 400", q, code)
		}
	}
	for _, q := range []string{"?since=yesterday", "?after=-3", "?limit=10001"} {
		if code, _ := e.do(t, "GET", "/api/v1/audit"+q, e.tok[RoleViewer], ""); code != 400 {
			t.Errorf("GET audit%s: %d, want 400", q, code)
		}
	}
	if code, _ := e.do(t, "GET", "/api/v1/approvals/"+id+"?wait=forever", e.tok[RoleViewer], ""); code != 400 {
		t.Errorf("wait=forever: %d, want 400", code)
	}
}

// TestFileThenRedeem: a runner files, waits, an approver approves, the
// runner files again and gets a ticket for exactly one execution; a third
// filing is a new pending request, not a second use.
func TestFileThenRedeem(t *testing.T) {
	e := newEnv(t, nil)
	const body = `{"run_id":"run_r","tool":"Write","target":"notes.md","preview":"+ hello","action_hash":"sha256:` +
		"efefefefefefefefefefefefefefefefefefefefefefefefefefefefefefefef" + `"}`
	code, m := e.do(t, "POST", "/api/v1/approvals", e.tok[RoleRunner], body)
	if code != 202 {
		t.Fatalf("file: %d %v", code, m)
	}
	rec := m["approval"].(map[string]any)
	id := rec["id"].(string)
	if rec["state"] != "pending" || !strings.Contains(strings.Join(toStrings(rec["principals"]), ","), "team:runner-1") {
		t.Errorf("filed = %v", rec)
	}
	// Filing again while pending is the same request, not a second one.
	if code, m := e.do(t, "POST", "/api/v1/approvals", e.tok[RoleRunner], body); code != 202 || m["approval"].(map[string]any)["id"] != id {
		t.Errorf("second filing: %d %v", code, m)
	}
	if code, m := e.do(t, "POST", "/api/v1/approvals/"+id+"/approve", e.tok[RoleRunner], `{}`); code != 403 {
		t.Errorf("runner approves: %d %v", code, m)
	}
	if code, _ := e.do(t, "POST", "/api/v1/approvals/"+id+"/approve", e.tok[RoleApprover], `{}`); code != 200 {
		t.Fatalf("approve: %d", code)
	}
	code, m = e.do(t, "POST", "/api/v1/approvals", e.tok[RoleRunner], body)
	if code != 200 || m["ticket"].(map[string]any)["approval_id"] != id {
		t.Fatalf("redeem: %d %v", code, m)
	}
	key := m["ticket"].(map[string]any)["idempotency_key"].(string)
	if u, _ := e.svc.Unfinished(t.Context(), "run_r"); len(u) != 1 {
		t.Errorf("unfinished after the redeem = %v, want the one use", u)
	}
	if code, m := e.do(t, "POST", "/api/v1/approvals/"+id+"/finish", e.tok[RoleViewer], `{"idempotency_key":"`+key+`"}`); code != 403 {
		t.Errorf("viewer finishes: %d %v", code, m)
	}
	if code, m := e.do(t, "POST", "/api/v1/approvals/"+id+"/finish", e.tok[RoleRunner], `{"idempotency_key":"nik_0000"}`); code != 400 {
		t.Errorf("finish with another key: %d %v", code, m)
	}
	if code, m := e.do(t, "POST", "/api/v1/approvals/"+id+"/finish", e.tok[RoleRunner], `{"idempotency_key":"`+key+`"}`); code != 200 {
		t.Errorf("finish: %d %v", code, m)
	}
	if u, _ := e.svc.Unfinished(t.Context(), "run_r"); len(u) != 0 {
		t.Errorf("unfinished after finish = %v", u)
	}
	code, m = e.do(t, "POST", "/api/v1/approvals", e.tok[RoleRunner], body)
	if code != 202 || m["approval"].(map[string]any)["id"] == id {
		t.Errorf("filing after the one use: %d %v, want a new pending request", code, m)
	}
}

func toStrings(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

// TestLongPollWakes: a wait returns as soon as the approval is decided
// (through the API: at once, no poll), and at the deadline otherwise.
func TestLongPollWakes(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.Poll = time.Hour })
	id := e.pending(t, "run_w")
	start := time.Now()
	code, m := e.do(t, "GET", "/api/v1/approvals/"+id+"?wait=200ms", e.tok[RoleRunner], "")
	if d := time.Since(start); code != 200 || d < 200*time.Millisecond || d > 5*time.Second {
		t.Errorf("undecided wait: %d after %v", code, d)
	}
	if m["approval"].(map[string]any)["state"] != "pending" {
		t.Errorf("undecided wait: %v", m)
	}
	done := make(chan time.Duration, 1)
	go func() {
		start := time.Now()
		_, m := e.do(t, "GET", "/api/v1/approvals/"+id+"?wait=30s", e.tok[RoleRunner], "")
		if m["approval"].(map[string]any)["state"] != "denied" {
			t.Errorf("woken wait: %v", m)
		}
		done <- time.Since(start)
	}()
	time.Sleep(100 * time.Millisecond)
	if code, _ := e.do(t, "POST", "/api/v1/approvals/"+id+"/deny", e.tok[RoleApprover], `{"reason":"no"}`); code != 200 {
		t.Fatal(code)
	}
	select {
	case d := <-done:
		if d > 5*time.Second {
			t.Errorf("the wait woke after %v", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the wait did not wake")
	}
}

// fakeWatcher is a store's change notification.
type fakeWatcher struct {
	ch      chan string
	watches atomic.Int32
}

func (f *fakeWatcher) WatchApprovals(ctx context.Context) (<-chan string, error) {
	f.watches.Add(1)
	return f.ch, nil
}

// TestLongPollWatcher: a decision made by another process (straight in
// the store) wakes the waits through the store's notification, with the
// poll an hour away; the server holds one watch for all of them.
func TestLongPollWatcher(t *testing.T) {
	w := &fakeWatcher{ch: make(chan string, 4)}
	e := newEnv(t, func(o *Options) { o.Poll = time.Hour; o.Watch = w })
	id := e.pending(t, "run_n")
	other, err := approval.NewService(e.store, &approval.Options{Sink: e.log}) // "another process"
	if err != nil {
		t.Fatal(err)
	}
	const waiters = 3
	done := make(chan map[string]any, waiters)
	for range waiters {
		go func() {
			_, m := e.do(t, "GET", "/api/v1/approvals/"+id+"?wait=30s", e.tok[RoleViewer], "")
			done <- m
		}()
	}
	for w.watches.Load() == 0 || !e.srv.watching.Load() {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // the waiters are waiting
	w.ch <- "apr_other"                // another approval: they keep waiting
	select {
	case m := <-done:
		t.Fatalf("a wait ended on another approval's change: %v", m)
	case <-time.After(100 * time.Millisecond):
	}
	if _, err := other.Decide(t.Context(), id, true, "cli:bob", ""); err != nil {
		t.Fatal(err)
	}
	w.ch <- id
	for range waiters {
		select {
		case m := <-done:
			if m["approval"].(map[string]any)["state"] != "granted" {
				t.Errorf("woken wait: %v", m)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the notification did not wake the wait")
		}
	}
	if n := w.watches.Load(); n != 1 {
		t.Errorf("WatchApprovals called %d times, want once for all the waits", n)
	}
}

// TestRunsAndAudit: runs are listed from the audit log, one run's events
// shown; previews come back as JSON strings, byte for byte.
func TestRunsAndAudit(t *testing.T) {
	e := newEnv(t, nil)
	e.pending(t, "run_a")
	e.pending(t, "run_b")
	_, m := e.do(t, "GET", "/api/v1/runs", e.tok[RoleViewer], "")
	runs := m["runs"].([]any)
	if len(runs) != 2 {
		t.Fatalf("runs = %v", runs)
	}
	_, m = e.do(t, "GET", "/api/v1/runs/run_a", e.tok[RoleViewer], "")
	evs := m["events"].([]any)
	ev := evs[0].(map[string]any)["event"].(map[string]any)
	if ev["type"] != "approval_requested" || ev["detail"].(map[string]any)["preview"] != "$ rm -rf build\n<script>alert(1)</script>" {
		t.Errorf("run_a's event = %v", ev)
	}
	if code, m := e.do(t, "GET", "/api/v1/runs/run_zz", e.tok[RoleViewer], ""); code != 404 || errCode(m) != string(capability.ReasonTeamNotFound) {
		t.Errorf("unknown run: %d %v", code, m)
	}
	_, m = e.do(t, "GET", "/api/v1/audit/verify", e.tok[RoleViewer], "")
	if m["ok"] != true {
		t.Errorf("verify = %v", m)
	}
	_, m = e.do(t, "GET", "/api/v1/plugins", e.tok[RoleViewer], "")
	if p := m["plugins"].([]any)[0].(map[string]any); p["id"] != "acme.notes" || p["version"] != "1.2.0" {
		t.Errorf("plugins = %v", m)
	}
}

// TestRunnerCannotRedeemAnothersGrant: a second runner token (another CI
// job) reads a request the first runner filed and the approver granted,
// and files it again field for field to take the grant, then reports the
// first runner's use finished with its (computable) idempotency key. The
// copy gets a new pending request of its own, no ticket; the grant stays
// unused for the runner it was given to, which redeems it once; the
// finish is 403 TEAM_FORBIDDEN and the use stays open for recovery.
func TestRunnerCannotRedeemAnothersGrant(t *testing.T) {
	e := newEnv(t, nil)
	sec, _, err := e.srv.Tokens().Add("runner-2", RoleRunner, now)
	if err != nil {
		t.Fatal(err)
	}
	thief := sec.Reveal()
	const body = `{"run_id":"run_s","tool":"Bash","target":"make deploy","preview":"$ make deploy","action_hash":"sha256:` +
		"a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1" + `"}`
	code, m := e.do(t, "POST", "/api/v1/approvals", e.tok[RoleRunner], body)
	if code != 202 {
		t.Fatalf("file: %d %v", code, m)
	}
	id := m["approval"].(map[string]any)["id"].(string)
	if code, m := e.do(t, "POST", "/api/v1/approvals/"+id+"/approve", e.tok[RoleApprover], `{}`); code != 200 {
		t.Fatalf("approve: %d %v", code, m)
	}
	code, m = e.do(t, "POST", "/api/v1/approvals", thief, body)
	if code != 202 || m["ticket"] != nil || m["approval"].(map[string]any)["id"] == id {
		t.Errorf("another runner files the granted request again: %d %v, want 202 with a request of its own", code, m)
	}
	if rec, _ := e.svc.Get(t.Context(), id); rec.State != approval.StateGranted || rec.Uses != 0 {
		t.Errorf("the grant after the copy: %s, %d uses; want it granted and unused", rec.State, rec.Uses)
	}
	if got := e.eventsOf(t, "run_s"); slices.ContainsFunc(got, func(r audit.Record) bool { return r.Event.Type == audit.TypeApprovalConsumed }) {
		t.Error("the copy consumed the grant")
	}

	code, m = e.do(t, "POST", "/api/v1/approvals", e.tok[RoleRunner], body)
	if code != 200 || m["ticket"].(map[string]any)["approval_id"] != id {
		t.Fatalf("the filer redeems: %d %v", code, m)
	}
	key := m["ticket"].(map[string]any)["idempotency_key"].(string)
	if code, m := e.do(t, "POST", "/api/v1/approvals/"+id+"/finish", thief, `{"idempotency_key":"`+key+`"}`); code != 403 || errCode(m) != "TEAM_FORBIDDEN" {
		t.Errorf("another runner finishes the use: %d %v, want 403 TEAM_FORBIDDEN", code, m)
	}
	if u, _ := e.svc.Unfinished(t.Context(), "run_s"); len(u) != 1 {
		t.Errorf("unfinished after the other runner's finish = %v, want the one use still open", u)
	}
}

// TestLongPollsLeaveNothingBehind: a runner long-polls ids that do not
// exist and a request nobody decides, over and over (each poll would
// otherwise leave a waiter behind for good: memory without bound). The
// answers are 404 and the pending record, and once they are all answered
// the server holds no waiter.
func TestLongPollsLeaveNothingBehind(t *testing.T) {
	e := newEnv(t, nil)
	id := e.pending(t, "run_lp")
	for i := range 200 {
		if code, m := e.do(t, "GET", "/api/v1/approvals/apr_none"+strconv.Itoa(i)+"?wait=1s", e.tok[RoleRunner], ""); code != 404 {
			t.Fatalf("unknown id: %d %v", code, m)
		}
	}
	for range 5 {
		if code, m := e.do(t, "GET", "/api/v1/approvals/"+id+"?wait=30ms", e.tok[RoleRunner], ""); code != 200 || m["approval"].(map[string]any)["state"] != "pending" {
			t.Fatalf("pending: %d %v", code, m)
		}
	}
	if n := e.srv.changed.size(); n != 0 {
		t.Errorf("%d approvals still waited on after every poll was answered", n)
	}
}
