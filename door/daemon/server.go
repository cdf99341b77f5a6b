package daemon

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/norma-run/norma/door/agenthook"
	"github.com/norma-run/norma/internal/httpserve"
)

// Answer is one answer to an agent's hook: what a command hook writes to
// stdout (an http hook's body), its exit code, and the reason it writes to
// stderr for a refusal carried by exit 2.
type Answer struct {
	Out    []byte `json:"out"`
	Exit   int    `json:"exit"`
	Stderr string `json:"stderr,omitempty"`
}

// HookFunc answers one hook invocation of agent: body is the JSON the
// agent sends (on a command hook's stdin, or as an http hook's body). It
// must be safe for concurrent use and must fail closed on its own (render
// a deny), as agenthook.Respond does.
type HookFunc func(ctx context.Context, agent agenthook.Agent, body []byte) Answer

// ExitHeader carries a hook answer's exit code beside the agent's output.
const ExitHeader = "Norma-Hook-Exit"

// EnvelopeHeader, sent with any value by [Client.Forward], asks for the
// whole [Answer] as JSON instead of the agent's output alone: a command
// hook needs the exit code and stderr, an http hook reads only the body.
const EnvelopeHeader = "Norma-Hook-Envelope"

// ProjectDirHeader carries the project directory a command hook was given
// (Claude Code's $CLAUDE_PROJECT_DIR) with the input it forwards
// ([Client.ProjectDir]): the daemon decides in it, as the command hook
// would have. Read it with [ProjectDir].
const ProjectDirHeader = "Norma-Project-Dir"

type projectDirKey struct{}

// ProjectDir is the project directory the request being answered carried
// (ProjectDirHeader), or "" when it carried none.
func ProjectDir(ctx context.Context) string {
	p, _ := ctx.Value(projectDirKey{}).(string)
	return p
}

// MaxBody is the largest hook request read. A Write or Edit carries the
// file's content in its input, so it is generous; a larger request is
// answered with the agent's refusal, not an error status.
const MaxBody = 16 << 20

// Options configure a [Server].
type Options struct {
	// Hook answers the hooks; required.
	Hook HookFunc
	// Agents are the agents served at /hooks/{agent}; others are 404.
	Agents []agenthook.Agent
	// Fail renders the refusal of agent for a request the server could not
	// hand to Hook (too large, unreadable): the agent's deny, as
	// agenthook's Codec.Fail renders it. Nil answers exit 2 with no body,
	// which a command hook honours.
	Fail func(agent agenthook.Agent, err error) Answer
	// Log receives one line per request (nil: none). Lines hold no
	// request content, only its digest.
	Log func(line string)
	// Timeout bounds one hook decision (0: 10s).
	Timeout time.Duration
}

// Server is the daemon's router. Its methods are safe for concurrent use.
type Server struct {
	opts   Options
	mux    *http.ServeMux
	agents map[agenthook.Agent]bool

	servers httpserve.Group
}

// New returns a server with the hook and health routes.
func New(opts Options) *Server {
	if opts.Timeout <= 0 {
		opts.Timeout = 10 * time.Second
	}
	s := &Server{opts: opts, mux: http.NewServeMux(), agents: map[agenthook.Agent]bool{}}
	for _, a := range opts.Agents {
		s.agents[a] = true
	}
	s.mux.HandleFunc("POST /hooks/{agent}", s.hook)
	s.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"ok":true}`+"\n")
	})
	return s
}

// Handle adds a route, with the patterns of [http.ServeMux]; the guard of
// each listener applies to it as to the built-in routes.
func (s *Server) Handle(pattern string, h http.Handler) { s.mux.Handle(pattern, h) }

// ServeHTTP routes r, without a listener's guard: [Server.Serve] adds it.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// Serve answers the connections of ln with h in front of the router (the
// listener's guard, or nil for none, as on a [ListenUnix] socket whose
// listener checks the peer itself). It returns when ln fails or after
// [Server.Shutdown], then with nil.
func (s *Server) Serve(ln net.Listener, guard func(http.Handler) http.Handler) error {
	var h http.Handler = s.mux
	if guard != nil {
		h = guard(h)
	}
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      s.opts.Timeout + 10*time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          nil,
	}
	return s.servers.Serve(ln, srv)
}

// Shutdown stops accepting, lets the requests in flight finish until ctx
// ends, then closes what is left.
func (s *Server) Shutdown(ctx context.Context) error {
	return s.servers.Shutdown(ctx)
}

// hook answers POST /hooks/{agent}. Every answer to a served agent is a
// 200 carrying the agent's output: an http hook that gets an error status
// goes on as if allowed.
func (s *Server) hook(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	agent := agenthook.Agent(r.PathValue("agent"))
	if !s.agents[agent] {
		http.Error(w, "no such agent", http.StatusNotFound)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBody))
	var a Answer
	digest := "-"
	if err != nil {
		a = s.fail(agent, fmt.Errorf("reading the hook request: %w", err))
	} else {
		sum := sha256.Sum256(body)
		digest = hex.EncodeToString(sum[:8])
		ctx := r.Context()
		if p := r.Header.Get(ProjectDirHeader); p != "" {
			ctx = context.WithValue(ctx, projectDirKey{}, p)
		}
		a = s.decide(ctx, agent, body)
	}
	out := a.Out
	if r.Header.Get(EnvelopeHeader) != "" {
		out, _ = json.Marshal(a) // plain types: cannot fail
	}
	// Logged before the answer is sent, so the log has every decision a
	// client got.
	if s.opts.Log != nil {
		s.opts.Log(fmt.Sprintf("hook %s via %s: request sha256:%s, exit %d, %d bytes, %s",
			agent, via(r), digest, a.Exit, len(a.Out), time.Since(start).Round(time.Microsecond)))
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set(ExitHeader, strconv.Itoa(a.Exit))
	w.Header().Set("Content-Length", strconv.Itoa(len(out)))
	w.WriteHeader(http.StatusOK)
	w.Write(out)
}

// decide calls the hook with the server's timeout; a panic of the hook is
// the agent's refusal, not a dropped connection (which an http hook would
// take as "go on").
func (s *Server) decide(ctx context.Context, agent agenthook.Agent, body []byte) (a Answer) {
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	defer func() {
		if p := recover(); p != nil {
			a = s.fail(agent, errors.New("the hook handler failed"))
		}
	}()
	return s.opts.Hook(ctx, agent, body)
}

func (s *Server) fail(agent agenthook.Agent, err error) Answer {
	if s.opts.Fail == nil {
		return Answer{Exit: 2, Stderr: "NORMA: " + err.Error()}
	}
	return s.opts.Fail(agent, err)
}

// via names the kind of listener r came through.
func via(r *http.Request) string {
	if a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok && a.Network() == "unix" {
		return "unix"
	}
	return "http"
}
