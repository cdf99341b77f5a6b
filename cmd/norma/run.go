package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/norma-run/norma/agent"
	"github.com/norma-run/norma/approval"
	"github.com/norma-run/norma/approval/prompt"
	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/gate"
	"github.com/norma-run/norma/internal/termtext"
	"github.com/norma-run/norma/plugin/host"
	"github.com/norma-run/norma/provider"
	"github.com/norma-run/norma/provider/anthropic"
	"github.com/norma-run/norma/provider/openai"
	"github.com/norma-run/norma/provider/scripted"
	"github.com/norma-run/norma/runtime"
	"github.com/norma-run/norma/sandbox"
	"github.com/norma-run/norma/sandbox/sandboxpolicy"
	"github.com/norma-run/norma/secret"
)

type runFlags struct {
	provider, model, baseURL, script, workspace, mode, resume string
	settings, sandboxMemory                                   string
	asJSON, yes, unsafeNoSandbox, allowMissingPlugins         bool
	maxTurns                                                  int
	approvalWait                                              time.Duration
}

func newRunCmd() *cobra.Command {
	var f runFlags
	c := &cobra.Command{
		Use:   "run [flags] PROMPT",
		Short: "Run an agent session: every tool call goes through the gate",
		Long: `Run an agent session with the built-in tools and the installed plugins.

Assistant text is streamed, with one status line per tool call (tool, target,
decision, duration). --json prints one JSON object per line instead, whose
"event" field is plugin_load_failed, session_started, assistant_text, tool_call,
approval_requested or session_finished.

Approvals: on a terminal they are asked inline; --yes approves every request;
otherwise the request is stored and the run waits --approval-wait for
"norma approvals approve ID", then stops (status awaiting_approval) so that
"norma run --resume RUN" executes the call once it is approved.

Keys: ANTHROPIC_API_KEY / OPENAI_API_KEY, else the vault secrets
anthropic_api_key / openai_api_key ("norma secret set"). Keys are never logged.

A run is continued by one process at a time: a second "norma run --resume
RUN" while another process runs RUN fails with RUN_LOCKED (exit 5). Each
tool call of a run runs at most once: a resume never runs again a call that
an earlier process started (TOOL_INTERRUPTED) or finished (TOOL_ALREADY_RAN).
Approvals are bound to the workspace: resuming a run with another
--workspace asks again.

An installed plugin that does not load (its manifest on disk is invalid, it
fails to start, it serves a tool its manifest does not declare, it is held)
is reported with its reason code — on stderr, and as a plugin_load_failed
event with --json — and the run stops before the model is called: exit 3
when every such plugin waits for consent (PLUGIN_HELD), else 1.
--allow-missing-plugins runs without them instead.

Exit status: 0 completed or awaiting approval, 1 stopped by a limit, a hook,
an error of the model provider or a plugin that did not load, 2 usage,
3 a plugin is held until "norma plugin consent", 4 state directory or
store, 5 the run is in use by another process.

` + scriptFormatHelp,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p := ""
			if len(args) == 1 {
				p = args[0]
			}
			if p == "" && f.resume == "" {
				return exitWith(exitUsage, errors.New("run: a PROMPT is required (or --resume RUN)"))
			}
			return runSession(cmd, f, p)
		},
	}
	fl := c.Flags()
	fl.StringVar(&f.provider, "provider", "", "anthropic | openai | scripted (default: scripted with --script, else anthropic)")
	fl.StringVar(&f.model, "model", "", "model name (default per provider)")
	fl.StringVar(&f.baseURL, "base-url", "", "API base URL (OpenAI-compatible servers: Ollama, vLLM, llama.cpp)")
	fl.StringVar(&f.script, "script", "", "scripted provider: YAML file of model turns")
	fl.StringVar(&f.workspace, "workspace", ".", "workspace directory the tools work in")
	fl.StringVar(&f.mode, "mode", "default", "permission mode: default | acceptEdits | plan | dontAsk (default: the settings' defaultMode)")
	fl.StringVar(&f.settings, "settings", "", "one more settings file, above the user's and the workspace's (below managed settings)")
	fl.BoolVar(&f.asJSON, "json", false, "print one JSON event per line")
	fl.StringVar(&f.resume, "resume", "", "continue run RUN from its saved state (with its provider, model and base URL unless given)")
	fl.BoolVar(&f.yes, "yes", false, "approve every approval request of this run")
	fl.IntVar(&f.maxTurns, "max-turns", agent.DefaultMaxTurns, "maximum model turns")
	fl.DurationVar(&f.approvalWait, "approval-wait", 2*time.Minute, "headless runs: how long to wait for \"norma approvals approve\"")
	fl.BoolVar(&f.unsafeNoSandbox, "unsafe-no-sandbox", false, "run plugins without the OS sandbox (audited)")
	fl.BoolVar(&f.allowMissingPlugins, "allow-missing-plugins", false, "run without the installed plugins that do not load, instead of stopping")
	fl.StringVar(&f.sandboxMemory, "sandbox-memory", sandbox.FormatSize(sandboxpolicy.DefaultMemory),
		"memory limit of every sandboxed process tree (Bash, tasks, PTYs, plugins), such as 512M or 8G")
	return c
}

// defaultModels are used when --model is not given.
var defaultModels = map[string]string{
	anthropic.Name: "claude-sonnet-4-5",
	openai.Name:    "gpt-4o",
	scripted.Name:  "scripted",
}

func runSession(cmd *cobra.Command, f runFlags, userPrompt string) error {
	ctx := cmd.Context()
	mode, err := gate.ParseMode(f.mode)
	if err != nil || mode == gate.ModeBypass {
		return exitWith(exitUsage, fmt.Errorf("run: --mode must be default, acceptEdits, plan or dontAsk"))
	}
	limits := sandboxpolicy.DefaultLimits
	if limits.Memory, err = sandbox.ParseSize(f.sandboxMemory); err != nil {
		return exitWith(exitUsage, fmt.Errorf("--sandbox-memory: %w", err))
	}
	if f.resume != "" && !agent.ValidRunID(f.resume) {
		return exitWith(exitUsage, fmt.Errorf("run: --resume: %q is not a run id", f.resume))
	}
	home, err := stateDir(cmd)
	if err != nil {
		return exitWith(exitInternal, err)
	}
	ws, err := workspaceDir("run", f.workspace)
	if err != nil {
		return err
	}
	runID := f.resume
	if runID == "" {
		runID = agent.NewRunID()
	}
	db, err := openStore(ctx, cmd, home)
	if err != nil {
		return err
	}
	// The approver is chosen below, once the printer exists; the services
	// are needed before. They hold the run from before its state is read
	// to the end: a second norma on the same run stops here, having
	// started nothing.
	var late lateApprover
	svcs, err := runtime.OpenServices(ctx, home, db, runtime.ServicesOptions{
		Vault:    func(context.Context) (secret.Vault, error) { return openVault(cmd) },
		Approver: &late, Run: runID})
	if err != nil {
		if capability.ReasonOf(err) == capability.ReasonRunLocked {
			return exitWith(exitBusy, err)
		}
		return exitWith(exitInternal, fmt.Errorf("run: %w", err))
	}
	// Closing the services releases the lock, then signs a checkpoint of
	// the log's head: the run's end.
	defer closeServices(cmd, svcs)
	log, red := svcs.Audit, svcs.Redactor
	var resumed *agent.State
	if f.resume != "" {
		if resumed, err = agent.LoadState(home, runID); err != nil {
			return exitWith(exitFailed, err)
		}
	}
	prov, model, baseURL, err := buildProvider(cmd, f, home, resumed, red)
	if err != nil {
		return err
	}

	terminal := cmd.OutOrStdout() == os.Stdout && isTerminal(os.Stdout)
	out := &runPrinter{w: cmd.OutOrStdout(), json: f.asJSON, provider: prov.Name(), last: time.Now(),
		color: useColor(terminal, f.asJSON)}
	out.startSpinner(terminal)
	defer out.stopSpinner()
	var ask approval.Approver
	// elicit asks the person for what a plugin's server requests; nil
	// (no terminal, --json, a queued run) declines, audited as headless.
	var elicit func(context.Context, host.Elicitation) (host.ElicitAnswer, error)
	// promptMu makes approvals and elicitations take the terminal one at a
	// time (parallel tool calls may ask at once).
	var promptMu sync.Mutex
	wait := f.approvalWait
	switch {
	case f.yes:
		ask, wait = approval.Auto{Grant: true, By: "cli:--yes"}, time.Minute
		if stdinIsTerminal(cmd.InOrStdin()) && !f.asJSON {
			pa, err := prompt.New(cmd.InOrStdin(), cmd.OutOrStdout(), &prompt.Options{Who: whoami(), Accessible: true})
			if err != nil {
				return exitWith(exitInternal, err)
			}
			elicit = terminalElicit(pa, out, &promptMu)
		}
	case stdinIsTerminal(cmd.InOrStdin()) && !f.asJSON:
		// The full screen form needs a terminal to draw on; ACCESSIBLE (huh's
		// convention) or an output that is not one gets the line prompt.
		outTTY, _ := cmd.OutOrStdout().(*os.File)
		pa, err := prompt.New(cmd.InOrStdin(), cmd.OutOrStdout(), &prompt.Options{Who: whoami(),
			Accessible: os.Getenv("ACCESSIBLE") != "" || outTTY == nil || !isTerminal(outTTY)})
		if err != nil {
			return exitWith(exitInternal, err)
		}
		ask, wait = pausingApprover{pa, out, &promptMu}, approval.DefaultTTL
		elicit = terminalElicit(pa, out, &promptMu)
	default:
		ask = approval.Waiter{Store: db}
		out.previews = true
		if wait > 0 {
			out.note(fmt.Sprintf("approvals: waiting up to %s for `norma approvals approve`", wait))
		}
	}
	if err := recordRunStarted(ctx, log, runID, f.resume != "", stdinIsTerminal(cmd.InOrStdin()) && !f.asJSON); err != nil {
		return exitWith(exitInternal, err)
	}
	late.set(agent.PendingApprover(ask, wait))

	rt, err := runtime.Open(ctx, runtime.Options{
		Dir: ws, RunID: runID, Resume: f.resume != "", Mode: mode, Services: svcs,
		ModeGiven: cmd.Flags().Changed("mode"), Settings: settingsFiles(f.settings),
		Vault:           func(context.Context) (secret.Vault, error) { return openVault(cmd) },
		UnsafeNoSandbox: f.unsafeNoSandbox,
		// The credentials of this environment, which the sandbox withholds
		// from every tool, are known values: masked in output, refused at
		// the exits (issue 29).
		Environ: os.Environ(),
		Limits:  limits,
		Warn: func(err error) {
			if _, ok := errors.AsType[*runtime.PluginFailure](err); !ok { // reported below
				fmt.Fprintf(cmd.ErrOrStderr(), "norma: %s\n", termtext.EscapeText(err.Error()))
			}
		},
		Accept: acceptOnTerminal(cmd, out, !f.asJSON && stdinIsTerminal(cmd.InOrStdin())),
		Elicit: elicit, Sampler: samplerOf(prov), SamplerModel: model,
		Notify: func(n host.Notice) { out.notice(cmd.ErrOrStderr(), n) },
	})
	if err != nil {
		return exitWith(exitFailed, err)
	}
	defer rt.Close()
	out.policyChanges(rt.Changes())
	if err := pluginFailures(cmd, out, rt.RunID(), rt.PluginFailures(), f.allowMissingPlugins); err != nil {
		return err
	}
	opts := []agent.Option{
		agent.WithProvider(prov, model), agent.WithProviderBaseURL(baseURL),
		agent.WithUser("user:" + whoami()), agent.WithObserver(out.event),
		agent.WithLimits(agent.Limits{MaxTurns: f.maxTurns}),
	}
	if tr := startTracing(cmd); tr != nil {
		defer stopTracing(cmd, tr)
		opts = append(opts, agent.WithTracer(tr.Tracer()))
	}
	sess, err := rt.Session(ctx, opts...)
	if err != nil {
		return exitWith(exitFailed, err)
	}
	defer sess.Close()
	res, runErr := sess.Run(ctx, userPrompt)
	out.finish(res, runErr)
	switch {
	case capability.ReasonOf(runErr) == capability.ReasonStateUnavailable:
		return exitWith(exitInternal, runErr)
	case runErr != nil:
		return exitWith(exitFailed, runErr)
	case res.Status == agent.StatusCompleted, res.Status == agent.StatusAwaitingApproval:
		return nil
	}
	return exitWith(exitFailed, nil)
}

// pluginFailures reports the installed plugins that did not load, each
// with its reason code and detail (escaped: it may hold what the plugin
// printed), on stderr and as plugin_load_failed events. Unless allow
// (--allow-missing-plugins) it returns the error that stops the run
// before the model is called: exit 3 when every failure is a hold that
// consent releases, else 1.
func pluginFailures(cmd *cobra.Command, out *runPrinter, runID string, fs []*runtime.PluginFailure, allow bool) error {
	if len(fs) == 0 {
		return nil
	}
	code := exitConsent
	for _, f := range fs {
		out.pluginFailed(runID, f, allow)
		fmt.Fprintf(cmd.ErrOrStderr(), "norma: plugin %s not loaded: %s: %s\n", termtext.Escape(f.Plugin), f.Reason, termtext.Escape(f.Detail))
		if allow {
			out.note(fmt.Sprintf("continuing without plugin %s (--allow-missing-plugins)", termtext.Escape(f.Plugin)))
		}
		if f.Reason != host.ReasonPluginHeld && f.Reason != capability.ReasonPluginConsentRequired {
			code = exitFailed
		}
	}
	if allow {
		return nil
	}
	return exitWith(code, fmt.Errorf("run: %d installed plugin(s) did not load; the model was not called (fix or remove them, or run with --allow-missing-plugins)", len(fs)))
}

// buildProvider returns the provider, the model and the base URL to
// remember. A resumed run talks to the provider, model and base URL it
// stored unless a flag says otherwise (--script alone chooses the scripted
// provider); a resumed scripted run continues with the turns after those
// already played.
func buildProvider(cmd *cobra.Command, f runFlags, home string, resumed *agent.State, red *secret.Redactor) (provider.Provider, string, string, error) {
	name := f.provider
	if name == "" && f.script == "" && resumed != nil {
		name = resumed.Provider
	}
	if name == "" {
		name = anthropic.Name
		if f.script != "" {
			name = scripted.Name
		}
	}
	// The stored model and base URL belong to the stored provider.
	same := resumed != nil && resumed.Provider == name
	model := f.model
	if model == "" && same {
		model = resumed.Model
	}
	if model == "" {
		model = defaultModels[name]
	}
	baseURL := f.baseURL
	if baseURL == "" && same {
		baseURL = resumed.BaseURL
	}
	p, err := newProvider(cmd, f, home, resumed, name, baseURL, red)
	if err != nil {
		return nil, "", "", err
	}
	// A base URL that carries credentials is used, never stored.
	if u, err := url.Parse(baseURL); name == scripted.Name || err != nil || u.User != nil {
		baseURL = ""
	}
	return p, model, baseURL, nil
}

func newProvider(cmd *cobra.Command, f runFlags, home string, resumed *agent.State, name, baseURL string, red *secret.Redactor) (provider.Provider, error) {
	retry := provider.RetryPolicy{}
	switch name {
	case scripted.Name:
		if f.script == "" {
			return nil, exitWith(exitUsage, errors.New("run: --provider scripted needs --script FILE"))
		}
		s, err := scripted.Load(f.script)
		if err != nil {
			return nil, exitWith(exitFailed, err)
		}
		if resumed != nil {
			done := min(resumed.Turns, len(s.Turns))
			s = &scripted.Script{Turns: s.Turns[done:], Sampling: s.Sampling}
		}
		return scripted.New(s), nil
	case anthropic.Name:
		key, err := apiKey(cmd, home, "ANTHROPIC_API_KEY", "anthropic_api_key", red)
		if err != nil {
			return nil, err
		}
		if key.IsZero() {
			return nil, exitWith(exitUsage, errors.New("run: no Anthropic API key: set ANTHROPIC_API_KEY or the vault secret anthropic_api_key"))
		}
		p, err := anthropic.New(anthropic.Options{APIKey: key, BaseURL: baseURL})
		if err != nil {
			return nil, exitWith(exitUsage, err)
		}
		return provider.WithRetry(p, retry), nil
	case openai.Name:
		key, err := apiKey(cmd, home, "OPENAI_API_KEY", "openai_api_key", red)
		if err != nil {
			return nil, err
		}
		p, err := openai.New(openai.Options{APIKey: key, BaseURL: baseURL})
		if err != nil {
			return nil, exitWith(exitUsage, err)
		}
		return provider.WithRetry(p, retry), nil
	}
	return nil, exitWith(exitUsage, fmt.Errorf("run: unknown --provider %q (anthropic, openai, scripted)", name))
}

// apiKey reads a provider key from the environment, else from the vault
// when one exists (it is not created for this). The run's redactor learns
// it: no tool output shows it.
func apiKey(cmd *cobra.Command, home, env, vaultName string, red *secret.Redactor) (provider.APIKey, error) {
	if v := os.Getenv(env); v != "" {
		// A key too short to mask without mangling text is no real key;
		// the provider refuses it.
		_ = red.AddValue(secret.KindProviderKey, secret.NewValue([]byte(v)))
		return provider.NewAPIKey(v), nil
	}
	if !runtime.HasVault(home) {
		return provider.APIKey{}, nil
	}
	v, err := openVault(cmd)
	if err != nil {
		return provider.APIKey{}, err
	}
	val, err := v.Get(cmd.Context(), vaultName)
	if err != nil {
		return provider.APIKey{}, nil // not stored: no key
	}
	return provider.NewAPIKey(string(val.Reveal())), nil
}

// runPrinter renders session events as text lines or JSON lines. Every
// string a model, a tool or a plugin controls (assistant text, tool
// names, targets, results, messages) is escaped before it reaches the
// terminal (termtext); JSON lines carry them as JSON strings.
type runPrinter struct {
	mu       sync.Mutex
	w        io.Writer
	json     bool
	provider string
	midLine  bool
	// color adds ANSI colour to the text lines (a terminal, no NO_COLOR).
	color bool
	// previews prints an approval's preview under its line, for runs
	// whose approvals are decided elsewhere (the terminal prompt shows it
	// in its box).
	previews bool

	// A spinner shows that the run is waiting (for the model, a tool or an
	// approval) when the output is a terminal and nothing was printed for
	// a moment; it is erased before anything else is written.
	last     time.Time
	spinning bool
	paused   bool // an approval prompt owns the terminal
	frame    int
	stop     chan struct{}
}

// Text output of a tool call: at most resultLines lines of its result, or
// errorLines of its error message (a crashed plugin's carries the last
// lines of its stderr), each cut to resultWidth runes.
const (
	resultLines = 3
	errorLines  = 8
	resultWidth = 160
)

// useColor reports whether the text output is coloured: only on a
// terminal, never for --json, and never when NO_COLOR is set to anything
// (https://no-color.org).
func useColor(terminal, asJSON bool) bool {
	_, noColor := os.LookupEnv("NO_COLOR")
	return terminal && !asJSON && !noColor
}

// ANSI SGR codes of the text output.
const (
	sgrBold   = "1"
	sgrDim    = "2"
	sgrRed    = "31"
	sgrGreen  = "32"
	sgrYellow = "33"
	sgrCyan   = "36"
)

// paint wraps s (already escaped) in an SGR code when colour is on.
func (p *runPrinter) paint(code, s string) string {
	if !p.color || s == "" {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}

var spinFrames = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

// startSpinner runs the spinner until stopSpinner; only on a terminal.
func (p *runPrinter) startSpinner(terminal bool) {
	if p.json || !terminal {
		return
	}
	p.stop = make(chan struct{})
	go func() {
		t := time.NewTicker(120 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-t.C:
				p.mu.Lock()
				if !p.midLine && !p.paused && time.Since(p.last) > 400*time.Millisecond {
					p.frame = (p.frame + 1) % len(spinFrames)
					fmt.Fprintf(p.w, "\r%s working…", spinFrames[p.frame])
					p.spinning = true
				}
				p.mu.Unlock()
			}
		}
	}()
}

func (p *runPrinter) stopSpinner() {
	if p.stop != nil {
		close(p.stop)
		p.stop = nil
	}
	p.mu.Lock()
	p.clearSpin()
	p.mu.Unlock()
}

// clearSpin erases the spinner line; the caller holds mu and is about to write.
func (p *runPrinter) clearSpin() {
	if p.spinning {
		fmt.Fprint(p.w, "\r\x1b[K")
		p.spinning = false
	}
	p.last = time.Now()
}

func (p *runPrinter) line(v map[string]any) {
	_ = writeJSONLine(p.w, v)
}

// policyChanges reports, in --json, the workspace policy and settings
// files that differ from the versions the user accepted: a held one is
// not applied (the warning on stderr shows its delta too).
func (p *runPrinter) policyChanges(cs []runtime.FileChange) {
	if !p.json {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		p.line(map[string]any{"event": "policy_change", "file": c.File, "held": c.Held, "first_sight": c.FirstSight,
			"removed": c.Removed, "delta": c.Delta})
	}
}

// acceptOnTerminal asks, on a terminal, whether to accept a held change
// of a workspace policy or settings file, after showing its delta (as
// `norma policy trust` does); elsewhere nil: the change stays held.
func acceptOnTerminal(cmd *cobra.Command, out *runPrinter, terminal bool) func(runtime.FileChange) bool {
	if !terminal {
		return nil
	}
	return func(c runtime.FileChange) bool {
		out.pause(true)
		defer out.pause(false)
		w := cmd.OutOrStdout()
		fmt.Fprintln(w, c.String())
		fmt.Fprintf(w, "Accept this change of %s for this workspace? [y/N] ", c.File)
		var answer string
		fmt.Fscanln(cmd.InOrStdin(), &answer)
		return answer == "y" || answer == "Y" || answer == "yes"
	}
}

// note prints one status line of norma's own (not escaped: callers pass
// only text norma wrote, or escape what they include).
func (p *runPrinter) note(s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clearSpin()
	if !p.json {
		p.endLine()
		fmt.Fprintln(p.w, p.paint(sgrDim, "· "+s))
	}
}

func (p *runPrinter) endLine() {
	if p.midLine {
		fmt.Fprintln(p.w)
		p.midLine = false
	}
}

// pluginFailed prints, in --json, the plugin_load_failed event of f;
// continued says the run goes on without it.
func (p *runPrinter) pluginFailed(runID string, f *runtime.PluginFailure, continued bool) {
	if !p.json {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.line(map[string]any{"event": "plugin_load_failed", "run_id": runID, "plugin": f.Plugin, "reason": f.Reason, "detail": f.Detail, "continued": continued})
}

func (p *runPrinter) event(e agent.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clearSpin()
	sub := len(e.Principals) > 2
	switch e.Kind {
	case agent.EventSessionStarted:
		if p.json {
			p.line(map[string]any{"event": e.Kind, "run_id": e.RunID, "provider": p.provider, "model": e.Model, "mode": e.Mode, "resumed": e.Resumed})
		} else {
			verb := "run"
			if e.Resumed {
				verb = "resuming run"
			}
			fmt.Fprintln(p.w, p.paint(sgrDim, fmt.Sprintf("· %s %s (%s %s, mode %s)", verb, e.RunID,
				termtext.Escape(p.provider), termtext.Escape(e.Model), termtext.Escape(e.Mode))))
		}
	case agent.EventAssistantText:
		if p.json {
			p.line(map[string]any{"event": e.Kind, "run_id": e.RunID, "text": e.Text, "principals": e.Principals})
		} else if !sub {
			fmt.Fprint(p.w, termtext.EscapeText(e.Text))
			p.midLine = !strings.HasSuffix(e.Text, "\n")
		}
	case agent.EventToolCall:
		c := e.Call
		if p.json {
			v := map[string]any{"event": e.Kind, "run_id": e.RunID, "id": c.ID, "tool": c.Tool, "target": c.Target,
				"decision": c.Decision, "reason": c.Reason, "layer": c.Layer, "rule": c.Rule, "is_error": c.IsError,
				"output_digest": c.OutputDigest, "approval_id": c.ApprovalID, "duration_ms": c.Duration.Milliseconds(),
				"principals": e.Principals, "message": c.Message}
			if !c.IsError {
				v["result"] = c.Result
			}
			p.line(v)
			return
		}
		p.endLine()
		p.toolCall(c, sub)
	case agent.EventApprovalRequested:
		a := e.Approval
		if p.json {
			p.line(map[string]any{"event": e.Kind, "run_id": e.RunID, "id": a.ToolUseID, "tool": a.Tool, "target": a.Target, "preview": a.Preview, "principals": e.Principals})
			return
		}
		p.endLine()
		fmt.Fprintf(p.w, "%s %s%s\n", p.paint(sgrYellow, "? approval needed:"), p.paint(sgrBold, termtext.Escape(a.Tool)), targetText(a.Tool, a.Target))
		if p.previews {
			for _, l := range termtext.Lines(a.Preview) {
				fmt.Fprintf(p.w, "    %s\n", l)
			}
		}
	case agent.EventSubagentStarted, agent.EventSubagentFinished:
		if p.json {
			v := map[string]any{"event": e.Kind, "run_id": e.RunID, "principals": e.Principals}
			if e.Outcome != nil {
				v["status"] = e.Outcome.Status
			}
			p.line(v)
		}
	}
}

// targetText is " TARGET", escaped, or "" when the call has no target or
// the target only repeats the tool's name (a plugin tool's does).
func targetText(tool, target string) string {
	if target == "" || target == tool {
		return ""
	}
	return " " + termtext.Escape(target)
}

// toolCall prints the status line of one call — tool, target, decision,
// reason, duration; for a refusal the layer that refused — then the first
// lines of its result, or of its error message.
func (p *runPrinter) toolCall(c *agent.CallRecord, sub bool) {
	indent := ""
	if sub {
		indent = "  ↳ "
	}
	decision, color := c.Decision, sgrGreen
	switch {
	case c.Decision == capability.ApprovalRequired.String():
		color = sgrYellow
	case c.IsError || c.Decision != capability.Allow.String():
		color = sgrRed
	}
	if decision == "" {
		decision = "error"
	}
	where := ""
	if c.Layer != "" && (c.IsError || c.Decision != capability.Allow.String()) {
		where = ", layer " + termtext.Escape(string(c.Layer))
	}
	fmt.Fprintf(p.w, "%s%s %s%s → %s %s%s\n", indent, p.paint(color, "⏺"), p.paint(sgrBold, termtext.Escape(c.Tool)),
		targetText(c.Tool, c.Target), p.paint(color, termtext.Escape(decision)), termtext.Escape(c.Reason),
		p.paint(sgrDim, fmt.Sprintf(" (%s%s)", c.Duration.Round(time.Millisecond), where)))
	text, code, n := c.Result, sgrDim, resultLines
	if c.IsError {
		text, code, n = c.Message, sgrRed, errorLines
	}
	lines, more := termtext.Head(text, n, resultWidth)
	for i, l := range lines {
		mark := "  ⎿ "
		if i > 0 {
			mark = "    "
		}
		fmt.Fprintf(p.w, "%s%s%s\n", indent, mark, p.paint(code, l))
	}
	if more > 0 {
		fmt.Fprintf(p.w, "%s    %s\n", indent, p.paint(sgrDim, fmt.Sprintf("… %d more lines", more)))
	}
}

func (p *runPrinter) finish(o agent.Outcome, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clearSpin()
	if p.json {
		pending := make([]map[string]any, 0, len(o.Pending))
		for _, a := range o.Pending {
			pending = append(pending, map[string]any{"tool_use_id": a.ToolUseID, "tool": a.Tool, "approval_id": a.ApprovalID, "state": a.State})
		}
		v := map[string]any{"event": agent.EventSessionFinished, "run_id": o.RunID, "status": o.Status, "reason": o.Reason,
			"turns": o.Turns, "usage": o.Usage, "cost": o.Cost, "pending": pending}
		if err != nil {
			v["error"] = errText(err)
		}
		p.line(v)
		return
	}
	p.endLine()
	color := sgrGreen
	if o.Status != agent.StatusCompleted {
		color = sgrYellow
	}
	if err != nil || o.Status == agent.StatusFailed || o.Status == agent.StatusHalted {
		color = sgrRed
	}
	status := "· " + string(o.Status)
	if o.Reason != "" {
		status += " (" + termtext.Escape(o.Reason) + ")"
	}
	fmt.Fprintf(p.w, "%s%s\n", p.paint(color, status), p.paint(sgrDim, fmt.Sprintf(" after %d turns, %d in / %d out tokens", o.Turns, o.Usage.InputTokens, o.Usage.OutputTokens)))
	for _, a := range o.Pending {
		id := termtext.Escape(a.ApprovalID)
		fmt.Fprintf(p.w, "· %s waits for approval %s: %s\n", p.paint(sgrBold, termtext.Escape(a.Tool)), id,
			p.paint(sgrCyan, "norma approvals approve "+id+" && norma run --resume "+termtext.Escape(o.RunID)))
	}
}

// pause stops the spinner while an interactive prompt owns the terminal.
func (p *runPrinter) pause(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clearSpin()
	p.paused = on
}

// pausingApprover pauses the spinner around an interactive approval, one
// prompt at a time.
type pausingApprover struct {
	approval.Approver
	p  *runPrinter
	mu *sync.Mutex
}

func (a pausingApprover) Approve(ctx context.Context, r approval.Record) (approval.Verdict, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.p.pause(true)
	defer a.p.pause(false)
	return a.Approver.Approve(ctx, r)
}
