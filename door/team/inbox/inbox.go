package inbox

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/norma-run/norma/approval"
	"github.com/norma-run/norma/audit"
	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/door/team"
	"github.com/norma-run/norma/internal/termtext"
)

// Prefix is the path under which the inbox is served.
const Prefix = "/inbox"

// Tokens authenticates the token a person signs in with: *team.Tokens. An
// unknown or revoked token is an error wrapping team.ErrUnknownToken; any
// other error (the token file cannot be read) refuses too.
type Tokens interface {
	Lookup(token string) (team.Principal, error)
}

// Options configure an [Inbox].
type Options struct {
	// Approvals lists, shows and decides the requests; required.
	Approvals *approval.Service
	// Audit is read for a run's trail; required.
	Audit audit.Backend
	// Tokens checks the tokens people sign in with; required. What a
	// principal may do is team.Can's answer for its role.
	Tokens Tokens
	// Changed, when set, is told of each approval the inbox decided (the
	// team server's [team.Server.Changed]: its long polls wake at once).
	Changed func(id string)
	// SessionTTL is how long a sign-in lasts; zero means 8 hours.
	SessionTTL time.Duration
	// Log receives one line per refused request (why, never a token,
	// a cookie or a form value); nil: none.
	Log func(line string)
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Inbox is the http.Handler of the inbox pages. Mount it at Prefix+"/".
type Inbox struct {
	opts Options
	mux  *http.ServeMux
	s    *sessions
	cop  *http.CrossOriginProtection
	h    http.Handler // mux behind cop
}

// maxForm bounds a form body: a token, a reason and a CSRF token.
const maxForm = 8 << 10

// maxTrail bounds the events shown on a run's page.
const maxTrail = 1000

// csp forbids every script, inline style, frame and plugin; styles come
// only from the inbox's own style sheet and forms post only to it.
const csp = "default-src 'none'; style-src 'self'; img-src 'none'; form-action 'self'; " +
	"frame-ancestors 'none'; base-uri 'none'"

//go:embed templates
var files embed.FS

// pages are the parsed templates, built at the first page served: every
// norma process links the inbox, and a command hook should not pay for
// parsing them (issue 30).
var pages = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("").Funcs(template.FuncMap{
		// t shows a one-line field a model or plugin may have written,
		// with its control and bidi characters made visible.
		"t": termtext.Escape,
		// text shows multi-line text (a preview, a reason) the same way,
		// keeping its lines.
		"text": termtext.EscapeText,
		// seg makes a value one path segment of a link (a run id may hold
		// any character).
		"seg": url.PathEscape,
		"utc": func(t time.Time) string {
			if t.IsZero() {
				return ""
			}
			return t.UTC().Format(time.RFC3339)
		},
	}).ParseFS(files, "templates/*.html"))
})

// styleCSS is the style sheet, read at its first request.
var styleCSS = sync.OnceValue(func() []byte {
	b, err := files.ReadFile("templates/style.css")
	if err != nil {
		panic(err)
	}
	return b
})

// New returns the inbox.
func New(opts Options) (*Inbox, error) {
	if opts.Approvals == nil || opts.Audit == nil || opts.Tokens == nil {
		return nil, errors.New("inbox: Approvals, Audit and Tokens are required")
	}
	if opts.SessionTTL <= 0 {
		opts.SessionTTL = 8 * time.Hour
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	in := &Inbox{
		opts: opts,
		mux:  http.NewServeMux(),
		s:    &sessions{m: map[string]*session{}, ttl: opts.SessionTTL, now: opts.Now},
		cop:  http.NewCrossOriginProtection(),
	}
	in.cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		in.refuse(w, r, http.StatusForbidden, capability.ReasonInboxCrossOrigin, "a cross-origin request is refused")
	}))
	in.mux.HandleFunc("GET "+Prefix+"/{$}", in.signedIn(team.ActionReadApprovals, in.list))
	in.mux.HandleFunc("GET "+Prefix+"/approvals/{id}", in.signedIn(team.ActionReadApprovals, in.show))
	in.mux.HandleFunc("POST "+Prefix+"/approvals/{id}", in.posted(team.ActionDecide, in.decide))
	in.mux.HandleFunc("GET "+Prefix+"/runs/{id}", in.signedIn(team.ActionReadAudit, in.run))
	in.mux.HandleFunc("GET "+Prefix+"/signin", in.signinForm)
	in.mux.HandleFunc("POST "+Prefix+"/signin", in.signin)
	in.mux.HandleFunc("POST "+Prefix+"/signout", in.posted("", in.signout))
	in.mux.HandleFunc("GET "+Prefix+"/style.css", func(w http.ResponseWriter, r *http.Request) {
		in.headers(w)
		w.Header().Set("Content-Type", "text/css; charset=utf-8")
		w.Write(styleCSS())
	})
	in.mux.HandleFunc(Prefix+"/", func(w http.ResponseWriter, r *http.Request) {
		in.fail(w, r, nil, http.StatusNotFound, "No such page.")
	})
	in.h = in.cop.Handler(in.mux)
	return in, nil
}

// ServeHTTP serves the inbox. Every POST passes the cross-origin check
// before any handler runs.
func (in *Inbox) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	in.headers(w)
	in.h.ServeHTTP(w, r)
}

// headers sets the headers every answer carries.
func (in *Inbox) headers(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Security-Policy", csp)
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
}

// page is what every template gets.
type page struct {
	Title     string
	Prefix    string
	Who       string
	Role      string
	MayDecide bool
	CSRF      string
	Error     string
	Requests  []item
	Request   *item
	RunID     string
	Events    []event
	More      bool
}

// item is one approval record as a page shows it.
type item struct {
	P     *page
	R     approval.Record
	State string
	// Open is true while the request can still be answered.
	Open bool
}

// event is one audit event of a run's trail.
type event struct {
	Seq int64
	audit.Event
	// By is who decided, for a decision event.
	By string
}

// viewer is the signed-in person of one request.
type viewer struct {
	p   team.Principal
	ss  *session
	sid string
}

type handler func(w http.ResponseWriter, r *http.Request, v viewer)

// signedIn runs h for a signed-in browser whose role may do act, sends
// a browser that is not signed in to the sign-in page, and refuses
// another role.
func (in *Inbox) signedIn(act team.Action, h handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		v, ok := in.viewer(r)
		if !ok {
			http.Redirect(w, r, Prefix+"/signin", http.StatusSeeOther)
			return
		}
		if err := team.Authorize(v.p, act); err != nil {
			in.refuse(w, r, http.StatusForbidden, capability.ReasonTeamForbidden, "the "+string(v.p.Role)+" role may not see this page")
			return
		}
		h(w, r, v)
	}
}

// posted runs h for a state-changing POST of a signed-in browser whose
// form carries the session's CSRF token and whose role may do act (""
// for any role); anything else is refused before h runs.
func (in *Inbox) posted(act team.Action, h handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		v, ok := in.viewer(r)
		if !ok {
			in.refuse(w, r, http.StatusForbidden, capability.ReasonTeamUnauthenticated, "not signed in")
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxForm)
		if err := r.ParseForm(); err != nil {
			in.refuse(w, r, http.StatusBadRequest, capability.ReasonInboxBadForm, "unreadable form")
			return
		}
		if !equal(v.ss.csrf, r.PostForm.Get("csrf")) {
			in.refuse(w, r, http.StatusForbidden, capability.ReasonInboxCSRF, "the form's CSRF token does not match the session")
			return
		}
		if act != "" {
			if err := team.Authorize(v.p, act); err != nil {
				in.refuse(w, r, http.StatusForbidden, capability.ReasonTeamForbidden, "the "+string(v.p.Role)+" role may not do this")
				return
			}
		}
		h(w, r, v)
	}
}

// viewer returns the session of r and authenticates its token again, so
// that a revoked token or a changed role applies at once; a token that no
// longer authenticates ends the session.
func (in *Inbox) viewer(r *http.Request) (viewer, bool) {
	sid := cookie(r, sessionCookieName(r))
	ss := in.s.get(sid)
	if ss == nil {
		return viewer{}, false
	}
	p, err := in.opts.Tokens.Lookup(ss.token)
	if err != nil {
		if errors.Is(err, team.ErrUnknownToken) {
			in.s.end(sid)
		}
		return viewer{}, false
	}
	return viewer{p: p, ss: ss, sid: sid}, true
}

func (in *Inbox) newPage(title string, v viewer) *page {
	return &page{Title: title, Prefix: Prefix, Who: v.p.ID(), Role: string(v.p.Role),
		MayDecide: team.Can(v.p.Role, team.ActionDecide), CSRF: v.ss.csrf}
}

func (in *Inbox) item(p *page, r approval.Record) item {
	state := string(r.State)
	open := r.State == approval.StatePending && in.opts.Now().Before(r.Expires)
	if (r.State == approval.StatePending || r.State == approval.StateGranted) && !in.opts.Now().Before(r.Expires) {
		state = "expired" // not yet marked; it can no longer be decided or used
	}
	return item{P: p, R: r, State: state, Open: open}
}

func (in *Inbox) list(w http.ResponseWriter, r *http.Request, v viewer) {
	recs, err := in.opts.Approvals.List(r.Context(), approval.ListFilter{State: approval.StatePending})
	if err != nil {
		in.fail(w, r, &v, http.StatusServiceUnavailable, "The approval store cannot be read.")
		return
	}
	p := in.newPage("Pending requests", v)
	for _, rec := range recs {
		if it := in.item(p, rec); it.Open {
			p.Requests = append(p.Requests, it)
		}
	}
	in.render(w, http.StatusOK, "list.html", p)
}

func (in *Inbox) show(w http.ResponseWriter, r *http.Request, v viewer) {
	rec, err := in.opts.Approvals.Get(r.Context(), r.PathValue("id"))
	if errors.Is(err, approval.ErrNotFound) {
		in.fail(w, r, &v, http.StatusNotFound, "No such request.")
		return
	}
	if err != nil {
		in.fail(w, r, &v, http.StatusServiceUnavailable, "The approval store cannot be read.")
		return
	}
	p := in.newPage("Request "+rec.ID, v)
	it := in.item(p, rec)
	p.Request = &it
	in.render(w, http.StatusOK, "approval.html", p)
}

// decide answers one request through approval.Service.Decide, the one
// function that answers a request (it audits the decision).
func (in *Inbox) decide(w http.ResponseWriter, r *http.Request, v viewer) {
	var approve bool
	switch r.PostForm.Get("decision") {
	case "approve":
		approve = true
	case "deny":
	default:
		in.refuse(w, r, http.StatusBadRequest, capability.ReasonInboxBadForm, "the decision must be approve or deny")
		return
	}
	id := r.PathValue("id")
	why := strings.TrimSpace(r.PostForm.Get("why"))
	_, err := in.opts.Approvals.Decide(r.Context(), id, approve, v.p.ID(), why)
	if err == nil && in.opts.Changed != nil {
		in.opts.Changed(id)
	}
	switch {
	case err == nil:
		http.Redirect(w, r, Prefix+"/approvals/"+url.PathEscape(id), http.StatusSeeOther)
	case errors.Is(err, approval.ErrNotFound):
		in.fail(w, r, &v, http.StatusNotFound, "No such request.")
	case capability.ReasonOf(err) == capability.ReasonApprovalExpired:
		in.fail(w, r, &v, http.StatusConflict, "The request has expired; it can no longer be answered.")
	case capability.ReasonOf(err) == capability.ReasonApprovalStoreUnavailable:
		in.fail(w, r, &v, http.StatusServiceUnavailable, "The decision could not be stored or audited; nothing was decided.")
	default:
		// Decided by someone else first: the message names the state.
		in.fail(w, r, &v, http.StatusConflict, err.Error())
	}
}

func (in *Inbox) run(w http.ResponseWriter, r *http.Request, v viewer) {
	runID := r.PathValue("id")
	recs, err := audit.QueryBackend(r.Context(), in.opts.Audit, audit.Filter{RunID: runID, Limit: maxTrail + 1, Newest: true})
	if err != nil {
		in.fail(w, r, &v, http.StatusServiceUnavailable, "The audit log cannot be read.")
		return
	}
	p := in.newPage("Run "+runID, v)
	p.RunID = runID
	if len(recs) > maxTrail {
		recs, p.More = recs[len(recs)-maxTrail:], true
	}
	for _, rec := range recs {
		p.Events = append(p.Events, event{Seq: rec.Seq, Event: rec.Event, By: rec.Event.Detail["by"]})
	}
	in.render(w, http.StatusOK, "run.html", p)
}

// signinForm shows the sign-in form with a fresh pre-session token, set
// as a cookie and echoed in the form (double submit).
func (in *Inbox) signinForm(w http.ResponseWriter, r *http.Request) {
	if _, ok := in.viewer(r); ok {
		http.Redirect(w, r, Prefix+"/", http.StatusSeeOther)
		return
	}
	in.signinPage(w, r, http.StatusOK, "")
}

func (in *Inbox) signinPage(w http.ResponseWriter, r *http.Request, status int, msg string) {
	pre := randomToken()
	setCookie(w, r, preCookie(r), pre, 600)
	in.render(w, status, "signin.html", &page{Title: "Sign in", Prefix: Prefix, CSRF: pre, Error: msg})
}

// signin checks the token and starts a new session (a new id: a session
// id planted before sign-in is never promoted).
func (in *Inbox) signin(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	if err := r.ParseForm(); err != nil {
		in.refuse(w, r, http.StatusBadRequest, capability.ReasonInboxBadForm, "unreadable form")
		return
	}
	if !equal(cookie(r, preCookie(r)), r.PostForm.Get("csrf")) {
		in.refuse(w, r, http.StatusForbidden, capability.ReasonInboxCSRF, "the sign-in form's CSRF token does not match")
		return
	}
	token := strings.TrimSpace(r.PostForm.Get("token"))
	p, err := in.opts.Tokens.Lookup(token)
	if err != nil || token == "" {
		in.logf("refused a sign-in: %d %s, the token is unknown or revoked", http.StatusUnauthorized, capability.ReasonTeamUnauthenticated)
		w.Header().Set(ReasonHeader, string(capability.ReasonTeamUnauthenticated))
		in.signinPage(w, r, http.StatusUnauthorized, "Refused ("+string(capability.ReasonTeamUnauthenticated)+"): that token is unknown or revoked.")
		return
	}
	if old := cookie(r, sessionCookieName(r)); old != "" {
		in.s.end(old)
	}
	sid, _ := in.s.create(token)
	setCookie(w, r, preCookie(r), "", -1)
	setCookie(w, r, sessionCookieName(r), sid, int(in.opts.SessionTTL/time.Second))
	in.logf("%s (%s) signed in", termtext.Escape(p.ID()), p.Role)
	http.Redirect(w, r, Prefix+"/", http.StatusSeeOther)
}

func (in *Inbox) signout(w http.ResponseWriter, r *http.Request, v viewer) {
	in.s.end(v.sid)
	setCookie(w, r, sessionCookieName(r), "", -1)
	http.Redirect(w, r, Prefix+"/signin", http.StatusSeeOther)
}

// render executes a page into a buffer first, so that a template error is
// a clean 500 rather than half a page.
func (in *Inbox) render(w http.ResponseWriter, status int, name string, p *page) {
	var b bytes.Buffer
	if err := pages().ExecuteTemplate(&b, name, p); err != nil {
		in.logf("rendering %s: %v", name, err)
		http.Error(w, "the page could not be rendered", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	w.Write(b.Bytes())
}

// fail renders an error page; v is nil for a visitor who is not signed in.
func (in *Inbox) fail(w http.ResponseWriter, r *http.Request, v *viewer, status int, msg string) {
	p := &page{Title: http.StatusText(status), Prefix: Prefix, Error: msg}
	if v != nil {
		p = in.newPage(http.StatusText(status), *v)
		p.Error = msg
	}
	in.render(w, status, "error.html", p)
}

// ReasonHeader carries the reason code of a refused request, beside the
// page that explains it.
const ReasonHeader = "Norma-Reason"

// refuse answers a refused request with its reason code: it is logged
// (the code and why, never a value of the request) and nothing was done.
func (in *Inbox) refuse(w http.ResponseWriter, r *http.Request, status int, reason capability.Reason, why string) {
	in.logf("refused %s %s: %d %s, %s", r.Method, termtext.Escape(r.URL.Path), status, reason, why)
	w.Header().Set(ReasonHeader, string(reason))
	in.fail(w, r, nil, status, "Refused ("+string(reason)+"): "+why+". Nothing was changed.")
}

func (in *Inbox) logf(format string, a ...any) {
	if in.opts.Log != nil {
		in.opts.Log(fmt.Sprintf(format, a...))
	}
}
