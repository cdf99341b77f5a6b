package demo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/norma-run/norma/agent"
	"github.com/norma-run/norma/approval"
	"github.com/norma-run/norma/approval/prompt"
	"github.com/norma-run/norma/internal/termtext"
	"github.com/norma-run/norma/manifest"
	"github.com/norma-run/norma/plugin"
	"github.com/norma-run/norma/plugin/host"
	"github.com/norma-run/norma/provider/scripted"
	"github.com/norma-run/norma/runtime"
	"github.com/norma-run/norma/sandbox"
	"github.com/norma-run/norma/secret"
	"github.com/norma-run/norma/store"
	"github.com/norma-run/norma/tool"
)

// Options configure Run.
type Options struct {
	// Root is the repository root (where examples/ is); default the
	// working directory.
	Root string
	// Yes approves the demo's external write without asking.
	Yes bool
	// In and Interactive: when Interactive, the approval is asked on In.
	In          io.Reader
	Interactive bool
	// Out receives the showcase; Color adds ANSI colour.
	Out   io.Writer
	Color bool
	// Keep leaves the temporary directories in place (they are always
	// kept when the demo fails, for inspection).
	Keep bool
}

// Summary is what the demo proved, for the caller and the tests. Its JSON
// (`norma demo --json`) has snake_case keys, as every --json output.
type Summary struct {
	Allowed  int `json:"allowed"`
	Denied   int `json:"denied"`
	Approved int `json:"approved"`
	// Reasons counts refusals by reason code (in JSON, a list of
	// {"reason", "count"} sorted by reason: codes are values, never keys).
	Reasons ReasonCounts `json:"reasons"`
	// MalloryAttempts and MallorySucceeded count the hostile plugin's tries.
	MalloryAttempts  int `json:"mallory_attempts"`
	MallorySucceeded int `json:"mallory_succeeded"`
	// Comments is what reached the issue API.
	Comments int `json:"comments"`
	// UpdateHeld and Widened describe the 1.4.0 → 1.5.0 update.
	UpdateHeld bool     `json:"update_held"`
	Widened    []string `json:"widened"`
	// ChainVerified and Events describe the audit log.
	ChainVerified bool   `json:"chain_verified"`
	Events        int64  `json:"events"`
	AuditDB       string `json:"audit_db"`
	Home          string `json:"home"`
	Workspace     string `json:"workspace"`
	Canary        bool   `json:"canary"` // true when the secret token appeared in any output (must be false)

	token string // the demo's secret, for the tests' byte scans
}

// ReasonCounts counts refusals by reason code.
type ReasonCounts map[string]int

// MarshalJSON writes the counts as [{"reason": CODE, "count": N}, ...],
// sorted by code.
func (r ReasonCounts) MarshalJSON() ([]byte, error) {
	type entry struct {
		Reason string `json:"reason"`
		Count  int    `json:"count"`
	}
	out := make([]entry, 0, len(r))
	for _, k := range slices.Sorted(maps.Keys(r)) {
		out = append(out, entry{k, r[k]})
	}
	return json.Marshal(out)
}

// Run runs the demo.
func Run(ctx context.Context, o Options) (sum *Summary, err error) {
	if o.Out == nil {
		o.Out = io.Discard
	}
	if o.Root == "" {
		o.Root, _ = os.Getwd()
	}
	if _, err := os.Stat(filepath.Join(o.Root, "examples", "plugins", "issue-helper", "manifest.yaml")); err != nil {
		return nil, errors.New("norma demo runs from the repository root (it builds examples/plugins)")
	}
	if c := sandbox.Probe(); !c.Ready {
		return nil, fmt.Errorf("norma demo needs the OS sandbox: missing %s (see norma sandbox doctor)", strings.Join(c.Missing, "; "))
	}
	p := &printer{w: o.Out, color: o.Color}
	w, err := newWorld(o.Root)
	if err != nil {
		return nil, err
	}
	sum = &Summary{Reasons: ReasonCounts{}, Home: w.home, Workspace: w.ws, AuditDB: filepath.Join(w.home, store.FileName), token: w.token}
	defer func() {
		if err == nil && !o.Keep {
			os.RemoveAll(w.ws)
		}
	}()

	// 1. Build, sign, serve.
	p.section("1. Build and sign the example plugins")
	if err := w.buildPlugins(ctx); err != nil {
		return nil, err
	}
	ihPkg, err := w.pkg(ctx, "issue-helper", filepath.Join(o.Root, "examples/plugins/issue-helper/manifest.yaml"))
	if err != nil {
		return nil, err
	}
	ih15Pkg, err := w.pkg(ctx, "issue-helper", filepath.Join(o.Root, "examples/plugins/issue-helper-1.5.0/manifest.yaml"))
	if err != nil {
		return nil, err
	}
	malPkg, err := w.pkg(ctx, "mallory", filepath.Join(o.Root, "examples/plugins/mallory/manifest.yaml"))
	if err != nil {
		return nil, err
	}
	p.line("built issue-helper 1.4.0 and 1.5.0 and mallory 0.6.6; signed with a demo key trusted for com.example.*")

	if err := w.startAPI(); err != nil {
		return nil, err
	}
	defer w.api.Close()
	if err := w.workspace(); err != nil {
		return nil, err
	}
	p.line("issue API on https://api.example.invalid (→ %s for this demo only, no privilege needed)", w.api.Addr)
	p.line("workspace %s (with a .env the policy denies)", w.ws)

	// 2. State: the services (store, audit, approvals), vault, plugin manager.
	var approver approval.Approver = approval.Auto{Grant: true, By: "norma demo --yes"}
	if !o.Yes {
		if !o.Interactive {
			return nil, errors.New("norma demo posts a comment that needs your approval: run it on a terminal, or pass --yes")
		}
		if approver, err = prompt.New(o.In, o.Out, nil); err != nil {
			return nil, err
		}
	}
	db, err := runtime.OpenStore(ctx, runtime.StoreLocation{SQLite: sum.AuditDB})
	if err != nil {
		return nil, err
	}
	svcs, err := runtime.OpenServices(ctx, w.home, db, runtime.ServicesOptions{Approver: approver, Run: "demo"})
	if err != nil {
		return nil, err
	}
	defer svcs.Close()
	log, redactor := svcs.Audit, svcs.Redactor
	if w.vault, err = secret.OpenFileVault(ctx, filepath.Join(w.home, "secrets"), nil); err != nil {
		return nil, err
	}
	if err := w.vault.Set(ctx, "issue_api_token", secret.NewValue([]byte(w.token))); err != nil {
		return nil, err
	}
	redactor.AddValue("issue_api_token", secret.NewValue([]byte(w.token)))
	mgr, err := plugin.NewManager(plugin.Options{Home: w.home, Trust: w.trust, Audit: log, Workspace: w.wsPolicy, Out: io.Discard,
		Consents: db, Who: plugin.DefaultWho(), Host: plugin.DefaultHost()})
	if err != nil {
		return nil, err
	}

	p.section("2. Install issue-helper 1.4.0 with a narrowed grant")
	grant, err := manifest.ParseLayer("demo-grant.yaml", []byte(demoGrant))
	if err != nil {
		return nil, err
	}
	m14, _ := manifest.ParseFile(filepath.Join(ihPkg, "manifest.yaml"))
	for _, line := range manifest.Summary(m14) {
		p.line("  asks to %s", line)
	}
	if _, err := mgr.Install(ctx, ihPkg, plugin.InstallOptions{Grant: grant}); err != nil {
		return nil, err
	}
	p.line("consent recorded: writes only under .agent-output/reports/ (narrowed from .agent-output/**)")
	mm, _ := manifest.ParseFile(filepath.Join(malPkg, "manifest.yaml"))
	if _, err := mgr.Install(ctx, malPkg, plugin.InstallOptions{Grant: &manifest.Layer{SchemaVersion: 2, Kind: manifest.KindGrant, Permissions: mm.Permissions}}); err != nil {
		return nil, err
	}
	p.line("installed mallory 0.6.6, which asks for almost nothing (it will try everything anyway)")

	// 3. The session.
	p.section("3. A scripted agent session through the gate")
	var malReport string
	rt, err := runtime.Open(ctx, runtime.Options{
		Dir: w.ws, RunID: "demo", Services: svcs,
		Vault:    func(context.Context) (secret.Vault, error) { return w.vault, nil },
		Resolver: w.resolver(),
		RootCAs:  w.api.Pool, CallTimeout: 30 * time.Second,
		WrapPlugin: func(p agent.Plugin) agent.Plugin {
			if hp, ok := p.(*host.Plugin); ok && p.Manifest().ID == "com.example.mallory" {
				return watched{hp, &malReport}
			}
			return p
		},
		Warn: func(err error) { p.line("  ! %s", termtext.Escape(err.Error())) },
	})
	if err != nil {
		return nil, err
	}
	defer rt.Close()
	if n := len(rt.Plugins()); n != 2 {
		return nil, fmt.Errorf("the demo's two plugins did not both load (%d did)", n)
	}
	canaries, err := newCanaries(w)
	if err != nil {
		return nil, err
	}
	defer canaries.close()
	script, err := scripted.Parse("demo-session.yaml", []byte(demoScript(canaries)))
	if err != nil {
		return nil, err
	}
	var events []agent.Event
	sess, err := rt.Session(ctx,
		agent.WithProvider(scripted.New(script), "scripted"),
		agent.WithObserver(func(e agent.Event) {
			events = append(events, e)
			if e.Kind == agent.EventToolCall && e.Call != nil {
				p.call(*e.Call)
			}
			if e.Kind == agent.EventApprovalRequested && e.Approval != nil {
				p.line("  ? approval requested for %s %s", termtext.Escape(e.Approval.Tool), termtext.Escape(e.Approval.Target))
			}
		}),
	)
	if err != nil {
		return nil, err
	}
	out, err := sess.Run(ctx, "Summarize the open issues of acme, tell #42 we are on it, and check the rest of the workspace.")
	sess.Close()
	if err != nil {
		return nil, fmt.Errorf("session: %w", err)
	}
	for _, c := range out.Calls {
		switch {
		case c.Decision == "allow" && c.ApprovalID != "":
			sum.Approved++
			sum.Allowed++
		case c.Decision == "allow" && !c.IsError:
			sum.Allowed++
		default:
			sum.Denied++
			sum.Reasons[c.Reason]++
		}
	}
	if a, won, ok := malloryCounts(malReport); ok {
		sum.MalloryAttempts, sum.MallorySucceeded = a, len(won)
		if len(won) > 0 {
			p.line("mallory SUCCEEDED at: %s", termtext.Escape(strings.Join(won, "; ")))
		}
	} else {
		sum.MallorySucceeded = -1 // no report: never claim success
	}
	sum.Comments = len(w.api.Comments())
	p.line("")
	p.line("mallory tried %d escapes; %d succeeded", sum.MalloryAttempts, sum.MallorySucceeded)
	p.line("the issue API received %d comment(s), with the real token injected by the broker", sum.Comments)

	// 4. Update.
	p.section("4. Update issue-helper to 1.5.0")
	res, err := mgr.Update(ctx, ih15Pkg, plugin.InstallOptions{})
	if err != nil {
		return nil, err
	}
	sum.UpdateHeld = res.Held
	for _, c := range append(res.Delta.Added, res.Delta.Widened...) {
		sum.Widened = append(sum.Widened, c.String())
	}
	if res.Held {
		p.line("HELD: 1.5.0 asks for more; 1.4.0 keeps running until you consent (norma plugin consent com.example.issue-helper):")
		for _, s := range sum.Widened {
			p.line("  + %s", s)
		}
	} else {
		p.line("applied (no widening)")
	}

	// 5. Audit.
	p.section("5. Verify the audit chain")
	vr, err := log.Verify(ctx)
	if err != nil {
		return nil, err
	}
	sum.ChainVerified, sum.Events = vr.FirstBroken == 0, vr.Events
	if sum.ChainVerified {
		p.line("%d events, hash chain intact", vr.Events)
	} else {
		p.line("BROKEN at event %d: %s", vr.FirstBroken, termtext.Escape(vr.Problem))
	}
	sum.Canary = canaries.leaked(w.token, events)

	p.section("Summary")
	p.line("%-28s %d", "allowed tool calls", sum.Allowed)
	p.line("%-28s %d", "of which approved by you", sum.Approved)
	p.line("%-28s %d", "denied tool calls", sum.Denied)
	for _, r := range slices.Sorted(maps.Keys(sum.Reasons)) {
		p.line("  %-26s %d", r, sum.Reasons[r])
	}
	p.line("%-28s %d of %d", "mallory escapes", sum.MallorySucceeded, sum.MalloryAttempts)
	p.line("%-28s %v", "update held for consent", sum.UpdateHeld)
	p.line("%-28s %v (%d events)", "audit chain verified", sum.ChainVerified, sum.Events)
	p.line("")
	p.line("audit database: %s", sum.AuditDB)
	p.line("inspect it:     norma --home %s audit tail", w.home)
	return sum, nil
}

// canaries are host-side targets mallory tries to reach. The write target
// is inside a directory mallory may only read (docs/), on the host: a write
// to a path under /tmp that is not bound would only land in the sandbox's
// private /tmp and prove nothing.
type canaries struct {
	tcp     net.Listener
	hits    int
	outside string
	write   string
}

func newCanaries(w *world) (*canaries, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	c := &canaries{tcp: ln, outside: filepath.Join(w.home, "outside-secret.txt"), write: filepath.Join(w.ws, "docs", "mallory-was-here")}
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			c.hits++
			conn.Close()
		}
	}()
	return c, os.WriteFile(c.outside, []byte("host file outside every grant: "+outsideCanary), 0o600)
}

func (c *canaries) close() { c.tcp.Close() }

// outsideCanary is the content of the host file mallory tries to read.
const outsideCanary = "OUTSIDE-CANARY-5f1c"

func (c *canaries) leaked(token string, events []agent.Event) bool {
	b, _ := json.Marshal(events)
	if _, err := os.Stat(c.write); err == nil || c.hits > 0 {
		return true
	}
	return strings.Contains(string(b), token) || strings.Contains(string(b), outsideCanary)
}

func demoScript(c *canaries) string {
	mal, _ := json.Marshal(map[string]string{"canary_tcp": c.tcp.Addr().String(), "outside_file": c.outside, "write_target": c.write, "denied_file": ".env"})
	return `turns:
  - text: "Let me look at the workspace and the issues."
    tool_calls:
      - {id: t1, name: Read, input: {path: docs/intro.md}}
      - {id: t2, name: mcp__com.example.issue-helper__issues.summarize, input: {owner: acme}}
  - text: "Posting on #42."
    tool_calls:
      - {id: t3, name: mcp__com.example.issue-helper__issues.comment, input: {owner: acme, number: 42, body: "We are on it."}}
  - text: "Checking the rest."
    tool_calls:
      - {id: t4, name: Read, input: {path: .env}}
      - {id: t5, name: WebFetch, input: {url: "https://hooks.example.invalid/notify/all"}}
      - {id: t6, name: mcp__com.example.mallory__mallory.run, input: ` + string(mal) + `}
  - text: "Done: issues summarized, #42 answered, and nothing else was reachable."
`
}

// watched wraps a plugin so the demo can read the whole report its tool
// returns (session events carry only its head, at most
// agent.MaxResultBytes).
type watched struct {
	*host.Plugin
	report *string
}

func (w watched) Tools() ([]tool.CoreTool, error) {
	ts, err := w.Plugin.Tools()
	for i, t := range ts {
		ts[i] = reporting{t, w.report}
	}
	return ts, err
}

type reporting struct {
	tool.CoreTool
	report *string
}

func (r reporting) Call(ctx context.Context, env tool.Env, in tool.Input) (tool.Result, error) {
	res, err := r.CoreTool.Call(ctx, env, in)
	*r.report = res.Content
	return res, err
}

// malloryCounts parses mallory's report: attempts and successes.
func malloryCounts(report string) (attempts int, succeeded []string, ok bool) {
	if i := strings.Index(report, "\n[norma"); i > 0 {
		report = report[:i]
	}
	if i := strings.LastIndex(report, "}"); i > 0 {
		report = report[:i+1]
	}
	var r struct {
		Succeeded []string
		Attempts  []json.RawMessage
	}
	if json.Unmarshal([]byte(report), &r) != nil {
		return 0, nil, false
	}
	return len(r.Attempts), r.Succeeded, true
}
