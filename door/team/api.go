package team

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/norma-run/norma/approval"
	"github.com/norma-run/norma/audit"
	"github.com/norma-run/norma/capability"
)

// Plugin is one installed plugin as GET /api/v1/plugins lists it.
type Plugin struct {
	ID      string `json:"id"`
	Version string `json:"version"`
	// Held is the version of an update held for consent (it widens the
	// grant), "" when none is.
	Held      string `json:"held,omitempty"`
	Publisher string `json:"publisher,omitempty"`
	Signer    string `json:"signer,omitempty"`
	Untrusted bool   `json:"untrusted,omitempty"`
	Manifest  string `json:"manifest_digest,omitempty"`
	// Grant is what the user granted, by group (fs.read, net.request,
	// …); GrantError says why it could not be read.
	Grant      map[string][]string `json:"grant,omitempty"`
	GrantError string              `json:"grant_error,omitempty"`
}

// Run is one run as GET /api/v1/runs lists it, from its audit events.
type Run struct {
	ID        string    `json:"id"`
	First     time.Time `json:"first"`
	Last      time.Time `json:"last"`
	Events    int       `json:"events"`
	LastEvent string    `json:"last_event"`
}

// maxRuns bounds GET /api/v1/runs: the runs with the newest events.
const maxRuns = 1000

func (s *Server) routes() {
	h := func(pattern string, act Action, f http.HandlerFunc) { s.HandleFor(pattern, act, f) }
	h("GET /api/v1/whoami", ActionReadApprovals, s.whoami)
	h("GET /api/v1/approvals", ActionReadApprovals, s.listApprovals)
	h("POST /api/v1/approvals", ActionFile, s.fileApproval)
	h("GET /api/v1/approvals/{id}", ActionReadApprovals, s.showApproval)
	h("POST /api/v1/approvals/{id}/approve", ActionDecide, s.decide(true))
	h("POST /api/v1/approvals/{id}/deny", ActionDecide, s.decide(false))
	h("POST /api/v1/approvals/{id}/finish", ActionFile, s.finish)
	h("GET /api/v1/audit", ActionReadAudit, s.queryAudit)
	h("GET /api/v1/audit/verify", ActionReadAudit, s.verifyAudit)
	h("GET /api/v1/audit/checkpoints", ActionReadAudit, s.checkpoints)
	h("GET /api/v1/runs", ActionReadAudit, s.listRuns)
	h("GET /api/v1/runs/{id}", ActionReadAudit, s.showRun)
	h("GET /api/v1/plugins", ActionReadAudit, s.listPlugins)
	s.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]bool{"ok": true})
	})
	// Anything else under the API (another path, another method) is a
	// JSON 404 once the token is valid, a 401 before.
	s.mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		p, err := s.opts.Tokens.Authenticate(r)
		if err == nil {
			err = refusal(capability.ReasonTeamNotFound, "no such route")
		}
		s.fail(w, r, p, err)
	})
}

func principal(r *http.Request) Principal { p, _ := PrincipalFrom(r.Context()); return p }

func (s *Server) whoami(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, principal(r))
}

func badRequest(msg string) error { return refusal(capability.ReasonInvalidRequest, msg) }

// intParam reads a non-negative integer query parameter (0 when absent).
func intParam(r *http.Request, name string, max int) (int, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n > max {
		return 0, badRequest(name + " must be an integer from 0 to " + strconv.Itoa(max))
	}
	return n, nil
}

// GET /api/v1/approvals?state=pending|granted|…|all&run=ID&limit=N:
// newest first; pending by default.
func (s *Server) listApprovals(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := approval.ListFilter{State: approval.StatePending, RunID: q.Get("run")}
	switch st := q.Get("state"); st {
	case "", "pending":
	case "all":
		f.State = ""
	case string(approval.StateGranted), string(approval.StateDenied), string(approval.StateExpired), string(approval.StateConsumed):
		f.State = approval.State(st)
	default:
		s.fail(w, r, principal(r), badRequest("state must be pending, granted, denied, expired, consumed or all"))
		return
	}
	var err error
	if f.Limit, err = intParam(r, "limit", 1000); err != nil {
		s.fail(w, r, principal(r), err)
		return
	}
	recs, err := s.opts.Approvals.List(r.Context(), f)
	if err != nil {
		s.fail(w, r, principal(r), err)
		return
	}
	if recs == nil {
		recs = []approval.Record{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"approvals": recs})
}

// getApproval reads one approval; an unknown id is TEAM_NOT_FOUND.
func (s *Server) getApproval(r *http.Request, id string) (approval.Record, error) {
	rec, err := s.opts.Approvals.Get(r.Context(), id)
	if errors.Is(err, approval.ErrNotFound) {
		return rec, refusal(capability.ReasonTeamNotFound, "no such approval")
	}
	return rec, err
}

// GET /api/v1/approvals/{id}[?wait=30s]: with wait, a pending approval is
// answered when it leaves the pending state or when wait (bounded by
// MaxWait) has passed, whichever is first; the answer is the record
// either way.
func (s *Server) showApproval(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var wait time.Duration
	if v := r.URL.Query().Get("wait"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			s.fail(w, r, principal(r), badRequest("wait must be a duration such as 30s"))
			return
		}
		wait = min(d, s.opts.MaxWait)
	}
	rec, err := s.waitApproval(r, id, wait)
	if err != nil {
		s.fail(w, r, principal(r), err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"approval": rec})
}

// waitApproval returns approval id once it is not pending, or after wait.
// It wakes on every change of id the server hears of (a decision made
// through it, the store's notification when there is one) and rereads
// the record; it also polls, every Poll, or every 10 Poll while the
// store's watch is live. It listens before it reads, so a change between
// the read and the wait is never missed.
func (s *Server) waitApproval(r *http.Request, id string, wait time.Duration) (approval.Record, error) {
	if wait <= 0 {
		return s.getApproval(r, id)
	}
	s.startWatch()
	ctx := r.Context()
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	for {
		changed, release := s.changed.wait(id)
		rec, err := s.getApproval(r, id)
		if err != nil || rec.State != approval.StatePending {
			release()
			return rec, err
		}
		poll := s.opts.Poll
		if s.watching.Load() {
			poll *= 10
		}
		tick := time.NewTimer(poll)
		select {
		case <-ctx.Done():
			tick.Stop()
			release()
			return rec, nil
		case <-deadline.C:
			tick.Stop()
			release()
			return rec, nil
		case <-changed:
		case <-tick.C:
		}
		tick.Stop()
		release()
		if s.changed.isClosed() {
			return s.getApproval(r, id)
		}
	}
}

// decision is the body of approve and deny.
type decision struct {
	Reason string `json:"reason"`
}

// readJSON decodes r's body, at most MaxBody bytes, into v; unknown
// fields are refused.
func readJSON(w http.ResponseWriter, r *http.Request, v any) error {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBody))
	if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
		return refusal(capability.ReasonTeamBodyTooLarge, "the request body is over "+strconv.Itoa(MaxBody)+" bytes")
	}
	if err != nil {
		return badRequest("the request body could not be read")
	}
	if len(strings.TrimSpace(string(body))) == 0 {
		body = []byte("{}")
	}
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return badRequest("the request body is not the JSON object this route takes")
	}
	if dec.More() {
		return badRequest("the request body holds more than one JSON value")
	}
	return nil
}

// POST /api/v1/approvals/{id}/approve|deny {"reason": "…"}: records the
// decision with approval.Service.Decide, the one function that answers a
// request (the CLI's and the inbox's too); DecidedBy is "team:NAME".
func (s *Server) decide(approve bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		p := principal(r)
		var d decision
		if err := readJSON(w, r, &d); err != nil {
			s.fail(w, r, p, err)
			return
		}
		id := r.PathValue("id")
		if _, err := s.getApproval(r, id); err != nil {
			s.fail(w, r, p, err)
			return
		}
		rec, err := s.opts.Approvals.Decide(r.Context(), id, approve, p.ID(), d.Reason)
		if err != nil {
			if capability.ReasonOf(err) == "" && !errors.Is(err, approval.ErrNotFound) {
				// Decide's plain error: the approval was decided already.
				err = refusal(capability.ReasonTeamAlreadyDecided, "the approval is already "+string(rec.State))
			}
			s.Changed(id)
			s.fail(w, r, p, err)
			return
		}
		s.Changed(id)
		writeJSON(w, http.StatusOK, map[string]any{"approval": rec})
	}
}

// filed is the body of POST /api/v1/approvals: the request a runner asks
// a person to decide. Id, created and the state are the server's.
type filed struct {
	RunID          string         `json:"run_id"`
	Workspace      string         `json:"workspace,omitempty"`
	Principals     []string       `json:"principals,omitempty"`
	ToolUseID      string         `json:"tool_use_id,omitempty"`
	Plugin         string         `json:"plugin,omitempty"`
	PluginVersion  string         `json:"plugin_version,omitempty"`
	ManifestDigest string         `json:"manifest_digest,omitempty"`
	Tool           string         `json:"tool"`
	Effect         string         `json:"effect,omitempty"`
	Target         string         `json:"target,omitempty"`
	Preview        string         `json:"preview,omitempty"`
	Credential     string         `json:"credential,omitempty"`
	ActionHash     string         `json:"action_hash"`
	Expires        time.Time      `json:"expires,omitzero"`
	Scope          approval.Scope `json:"scope,omitempty"`
}

// POST /api/v1/approvals: a runner files a request with
// approval.Service.Authorize (which stores it and audits
// approval_requested). The answer is 202 with the pending record, or, when
// an approval for the same action and run was granted and could be
// consumed, 200 with its ticket: file, wait (GET …?wait=), then file again
// to redeem the grant for exactly one execution, and report it done
// (POST …/finish).
func (s *Server) fileApproval(w http.ResponseWriter, r *http.Request) {
	p := principal(r)
	var f filed
	if err := readJSON(w, r, &f); err != nil {
		s.fail(w, r, p, err)
		return
	}
	req := approval.Request{RunID: f.RunID, Workspace: f.Workspace, Principals: append(slices.Clip(f.Principals), p.ID()),
		ToolUseID: f.ToolUseID, Plugin: f.Plugin, PluginVersion: f.PluginVersion, ManifestDigest: f.ManifestDigest,
		Tool: f.Tool, Effect: f.Effect, Target: f.Target, Preview: f.Preview, Credential: f.Credential,
		ActionHash: f.ActionHash, Expires: f.Expires, Scope: f.Scope}
	t, err := s.opts.Approvals.Authorize(r.Context(), req)
	if err == nil {
		writeJSON(w, http.StatusOK, map[string]any{"ticket": t})
		return
	}
	if capability.ReasonOf(err) != capability.ReasonApprovalRequired {
		s.fail(w, r, p, err)
		return
	}
	recs, lerr := s.opts.Approvals.List(r.Context(), approval.ListFilter{State: approval.StatePending, RunID: f.RunID, ActionHash: f.ActionHash, Limit: 1})
	if lerr != nil || len(recs) == 0 {
		s.fail(w, r, p, err)
		return
	}
	s.Changed(recs[0].ID)
	writeJSON(w, http.StatusAccepted, map[string]any{"approval": recs[0]})
}

// finished is the body of POST /api/v1/approvals/{id}/finish.
type finished struct {
	IdempotencyKey string `json:"idempotency_key"`
}

// POST /api/v1/approvals/{id}/finish {"idempotency_key": "nik_…"}: the
// runner that redeemed a ticket (POST /api/v1/approvals) reports its
// execution done, as the gate does in process (approval.Service.Finish),
// so crash recovery does not offer it again. The key must be one of the
// approval's uses, and the approval must have been filed by this token.
func (s *Server) finish(w http.ResponseWriter, r *http.Request) {
	p := principal(r)
	var f finished
	if err := readJSON(w, r, &f); err != nil {
		s.fail(w, r, p, err)
		return
	}
	rec, err := s.getApproval(r, r.PathValue("id"))
	if err != nil {
		s.fail(w, r, p, err)
		return
	}
	if len(rec.Principals) == 0 || rec.Principals[len(rec.Principals)-1] != p.ID() {
		// Only the runner that filed a request (its chain ends in the
		// token) reports its uses: another could close a use that a crash
		// interrupted before it ran, so recovery would skip it.
		s.fail(w, r, p, refusal(capability.ReasonTeamForbidden, "the approval was filed by another principal"))
		return
	}
	use := 0
	for n := 1; n <= rec.Uses; n++ {
		if approval.IdempotencyKey(rec.ID, rec.ActionHash, n) == f.IdempotencyKey {
			use = n
		}
	}
	if use == 0 {
		s.fail(w, r, p, badRequest("the idempotency key is not one of this approval's uses"))
		return
	}
	t := approval.Ticket{ApprovalID: rec.ID, IdempotencyKey: f.IdempotencyKey, ActionHash: rec.ActionHash, Use: use}
	if err := s.opts.Approvals.Finish(r.Context(), t); err != nil {
		s.fail(w, r, p, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"finished": t})
}

// auditFilter reads GET /api/v1/audit's filters: type, run, plugin, tool,
// decision, since (RFC 3339 or a duration back from now), after (a
// sequence number), limit (at most 10000), newest (1: the newest matches).
func auditFilter(r *http.Request) (audit.Filter, error) {
	q := r.URL.Query()
	f := audit.Filter{Type: q.Get("type"), RunID: q.Get("run"), Plugin: q.Get("plugin"), Tool: q.Get("tool"), Decision: q.Get("decision")}
	if v := q.Get("since"); v != "" {
		if d, err := time.ParseDuration(v); err == nil && d >= 0 {
			f.Since = time.Now().Add(-d)
		} else if t, err := time.Parse(time.RFC3339, v); err == nil {
			f.Since = t
		} else {
			return f, badRequest("since must be an RFC 3339 time or a duration such as 1h")
		}
	}
	if v := q.Get("after"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return f, badRequest("after must be a sequence number")
		}
		f.AfterSeq = n
	}
	var err error
	if f.Limit, err = intParam(r, "limit", 10000); err != nil {
		return f, err
	}
	f.Newest = q.Get("newest") == "1" || q.Get("newest") == "true"
	return f, nil
}

func (s *Server) queryAudit(w http.ResponseWriter, r *http.Request) {
	f, err := auditFilter(r)
	if err != nil {
		s.fail(w, r, principal(r), err)
		return
	}
	recs, err := audit.QueryBackend(r.Context(), s.opts.Audit, f)
	if err != nil {
		s.fail(w, r, principal(r), err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"events": recs})
}

func (s *Server) verifyAudit(w http.ResponseWriter, r *http.Request) {
	verify := s.opts.Verify
	if verify == nil {
		verify = func(ctx context.Context) (audit.VerifyResult, error) { return audit.VerifyBackend(ctx, s.opts.Audit) }
	}
	res, err := verify(r.Context())
	if err != nil {
		s.fail(w, r, principal(r), err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"ok": res.OK(), "result": res})
}

// checkpoint is a stored checkpoint as the API shows it: the signed note
// as text (it is text: c2sp.org/signed-note).
type checkpoint struct {
	Size int64     `json:"size"`
	Time time.Time `json:"time"`
	Note string    `json:"note"`
}

func (s *Server) checkpoints(w http.ResponseWriter, r *http.Request) {
	cps, err := s.opts.Audit.AuditCheckpoints(r.Context())
	if err != nil {
		s.fail(w, r, principal(r), err)
		return
	}
	out := make([]checkpoint, 0, len(cps))
	for _, c := range cps {
		out = append(out, checkpoint{Size: c.Size, Time: time.Unix(0, c.TimeNS).UTC(), Note: string(c.Note)})
	}
	writeJSON(w, http.StatusOK, map[string]any{"checkpoints": out})
}

// GET /api/v1/runs: the runs in the audit log, newest activity first (at
// most maxRuns).
func (s *Server) listRuns(w http.ResponseWriter, r *http.Request) {
	runs := map[string]*Run{}
	err := s.opts.Audit.ScanAudit(r.Context(), 0, 0, func(row audit.Row) error {
		// A scan fills only Seq, Body and Hash (audit.Backend): the run,
		// the time and the type come from the hashed body.
		var e audit.Event
		if err := json.Unmarshal(row.Body, &e); err != nil {
			return fmt.Errorf("audit: decode event %d: %w", row.Seq, err)
		}
		if e.RunID == "" {
			return nil
		}
		t := e.Time.UTC()
		run := runs[e.RunID]
		if run == nil {
			run = &Run{ID: e.RunID, First: t}
			runs[e.RunID] = run
		}
		run.Last, run.LastEvent = t, e.Type
		run.Events++
		return nil
	})
	if err != nil {
		s.fail(w, r, principal(r), err)
		return
	}
	out := make([]Run, 0, len(runs))
	for _, run := range runs {
		out = append(out, *run)
	}
	slices.SortFunc(out, func(a, b Run) int {
		if c := b.Last.Compare(a.Last); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	if len(out) > maxRuns {
		out = out[:maxRuns]
	}
	writeJSON(w, http.StatusOK, map[string]any{"runs": out})
}

// GET /api/v1/runs/{id}: the run's events, oldest first (limit: at most
// 10000, 1000 by default).
func (s *Server) showRun(w http.ResponseWriter, r *http.Request) {
	limit, err := intParam(r, "limit", 10000)
	if err != nil {
		s.fail(w, r, principal(r), err)
		return
	}
	recs, err := audit.QueryBackend(r.Context(), s.opts.Audit, audit.Filter{RunID: r.PathValue("id"), Limit: limit})
	if err != nil {
		s.fail(w, r, principal(r), err)
		return
	}
	if len(recs) == 0 {
		s.fail(w, r, principal(r), refusal(capability.ReasonTeamNotFound, "no such run"))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"run": r.PathValue("id"), "events": recs})
}

func (s *Server) listPlugins(w http.ResponseWriter, r *http.Request) {
	out := []Plugin{}
	if s.opts.Plugins != nil {
		ps, err := s.opts.Plugins(r.Context())
		if err != nil {
			s.fail(w, r, principal(r), err)
			return
		}
		out = append(out, ps...)
	}
	writeJSON(w, http.StatusOK, map[string]any{"plugins": out})
}
