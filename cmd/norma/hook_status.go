package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/norma-run/norma/audit"
	"github.com/norma-run/norma/door/agenthook"
	"github.com/norma-run/norma/internal/termtext"
)

// statusAgents are the agents `norma hook status` reports, in order.
var statusAgents = []agenthook.Agent{agenthook.ClaudeCode, agenthook.Codex, agenthook.Gemini}

// heardTypes are the audit event types an agent's hook writes (Principal
// names the agent): a decision, a tool's result, a session's start or end.
var heardTypes = []string{audit.TypeCapabilityDecision, agenthook.TypeToolResult, agenthook.TypeSession}

// heardScan is how many of the newest events of each of heardTypes are
// read for an agent's last one.
const heardScan = 2000

func newHookStatusCmd() *cobra.Command {
	var project, codex string
	var check bool
	c := &cobra.Command{
		Use:   "status [--project DIR] [--check] [--codex PATH]",
		Short: "Show, for Claude Code, Codex and Gemini CLI, whether Norma's hook is installed, trusted by the agent, and when Norma last heard from it",
		Long: `For each agent (claude-code, codex, gemini): the settings files of the user
and of the project (--project, default the current directory) that hold
Norma's hook entries, for which events and with which command (and whether
it is this norma binary's); whether the agent runs them where it has a
notion of hook trust (Codex: asked of Codex itself, "codex app-server"
hooks/list; Codex skips an untrusted hook without a word); and when Norma
last heard from the agent: the newest event of its hook in this state
directory's audit log.

--check also drives one decision through each installed hook: it runs the
hook's command as the agent would (sh -c), with a synthetic PreToolUse
(Gemini: BeforeTool) asking to run "echo norma-hook-check >>
.claude/settings.local.json" in the project (nothing runs it; Norma refuses
it in every project and mode), checks that the answer is a deny in the
agent's format, and that the decision is in the audit log. Exit status 1 when a check fails or Codex would not run an
installed hook of Norma's.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, err := filepath.Abs(project)
			if err != nil {
				return exitWith(exitUsage, err)
			}
			return hookStatus(cmd, dir, codex, check)
		},
	}
	c.Flags().StringVar(&project, "project", ".", "the project directory whose settings are read (and where --check decides)")
	c.Flags().BoolVar(&check, "check", false, "drive one decision (a synthetic write to .claude/settings.local.json) through each installed hook")
	c.Flags().StringVar(&codex, "codex", "", "the Codex binary asked about its hook trust (default: codex on PATH)")
	return c
}

// hookFile is one settings file of an agent and what it holds of Norma's
// hook.
type hookFile struct {
	scope agenthook.Scope
	path  string
	in    agenthook.Installed
	err   error
}

func hookStatus(cmd *cobra.Command, project, codexFlag string, check bool) error {
	ctx, w := cmd.Context(), cmd.OutOrStdout()
	home, _ := os.UserHomeDir()
	failed := false
	heard, heardErr := lastHeard(cmd)
	for i, a := range statusAgents {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintln(w, a)
		files := agentHookFiles(a, home, project)
		self, _ := hookCommand(cmd, a)
		var installed []hookFile
		for _, f := range files {
			fmt.Fprintf(w, "  %-7s  %s: %s\n", f.scope, termtext.Escape(f.path), describeInstalled(f, self))
			if f.err == nil && len(f.in.Events) > 0 {
				installed = append(installed, f)
			}
		}
		switch a {
		case agenthook.Codex:
			runs, msg := codexTrustStatus(ctx, codexFlag, project, installed)
			fmt.Fprintf(w, "  trust:   %s\n", msg)
			if len(installed) > 0 && !runs {
				failed = true
			}
		case agenthook.ClaudeCode:
			fmt.Fprintln(w, "  trust:   n/a (Claude Code runs the hooks of its settings files without a review of its own)")
		case agenthook.Gemini:
			fmt.Fprintln(w, "  trust:   not checked (Norma does not read Gemini CLI's trust of folders or hooks)")
		}
		switch ev, ok := heard[string(a)]; {
		case heardErr != nil:
			fmt.Fprintf(w, "  heard:   unknown: %s\n", termtext.Escape(heardErr.Error()))
		case !ok:
			fmt.Fprintf(w, "  heard:   never (no event of its hook among the newest %d of each kind in the audit log)\n", heardScan)
		default:
			fmt.Fprintf(w, "  heard:   %s\n", describeHeard(ev, time.Now()))
		}
		if !check {
			continue
		}
		if len(installed) == 0 {
			fmt.Fprintln(w, "  check:   skipped (not installed)")
			continue
		}
		for _, f := range installed {
			ok, msg := probeHook(cmd, a, f, project)
			fmt.Fprintf(w, "  check:   %s: %s\n", f.scope, msg)
			if !ok {
				failed = true
			}
		}
	}
	if failed {
		return exitWith(exitFailed, nil)
	}
	return nil
}

// agentHookFiles reads agent a's settings files: the user's and the
// project's (one, when they are the same file).
func agentHookFiles(a agenthook.Agent, home, project string) []hookFile {
	in, ok := installerFor(string(a))
	if !ok {
		return nil
	}
	var out []hookFile
	for _, scope := range []agenthook.Scope{agenthook.ScopeUser, agenthook.ScopeProject} {
		path, err := in.Path(scope, home, project)
		if err != nil {
			out = append(out, hookFile{scope: scope, path: "?", err: err})
			continue
		}
		if len(out) > 0 && out[0].path == path {
			continue
		}
		f := hookFile{scope: scope, path: path}
		b, err := os.ReadFile(path)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			f.err = err
		} else {
			f.in, f.err = agenthook.InstalledIn(a, b)
		}
		out = append(out, f)
	}
	return out
}

// describeInstalled says what f holds of Norma's hook: its events, its
// command, and whether that is self (this binary's).
func describeInstalled(f hookFile, self string) string {
	switch {
	case f.err != nil:
		return "unreadable: " + termtext.Escape(f.err.Error())
	case len(f.in.Events) == 0:
		return "not installed"
	}
	s := "installed (" + strings.Join(f.in.Events, ", ") + ")"
	if len(f.in.Missing) > 0 {
		s = "partly installed (" + strings.Join(f.in.Events, ", ") + "; missing " + strings.Join(f.in.Missing, ", ") + ")"
	}
	switch {
	case len(f.in.Commands) > 1:
		s += ", by several norma commands"
	case f.in.Commands[0] != self:
		s += ", running another norma: " + termtext.Escape(f.in.Commands[0])
	}
	return s
}

// codexTrustStatus asks Codex whether it runs Norma's hooks of the
// installed files: runs is true when it runs every one.
func codexTrustStatus(ctx context.Context, codexFlag, project string, installed []hookFile) (runs bool, msg string) {
	if len(installed) == 0 {
		return false, "n/a (not installed)"
	}
	bin, err := codexBin(codexFlag)
	if err != nil {
		return false, "unknown: " + termtext.Escape(err.Error())
	}
	s, err := startCodex(ctx, bin, project)
	if err != nil {
		return false, "unknown: " + termtext.Escape(err.Error())
	}
	defer s.Close()
	hs, err := s.Hooks(ctx, project)
	if err != nil {
		return false, "unknown: " + termtext.Escape(err.Error())
	}
	var mine []agenthook.CodexHook
	for _, f := range installed {
		m := agenthook.NormaCodexHooks(hs, f.path)
		if len(m) == 0 {
			why := "Codex loads none of Norma's hooks of " + f.path
			if err := codexLoadsProject(ctx, s, project, f.path); err != nil {
				why = err.Error()
			}
			return false, "NOT RUN: " + termtext.Escape(why)
		}
		mine = append(mine, m...)
	}
	counts := map[string]int{}
	n := 0
	for _, h := range mine {
		switch {
		case h.Runs():
			n++
		case !h.Enabled:
			counts["disabled"]++
		default:
			counts[h.TrustStatus]++
		}
	}
	config := filepath.Join(s.CodexHome(), "config.toml")
	if n == len(mine) {
		return true, fmt.Sprintf("trusted: Codex runs Norma's %d hooks (%s)", n, termtext.Escape(config))
	}
	var parts []string
	for _, k := range []string{"untrusted", "modified", "disabled"} {
		if counts[k] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[k], k))
		}
	}
	return false, fmt.Sprintf("NOT RUN: Codex skips %d of Norma's %d hooks (%s); run \"norma hook install codex\" to record their trust",
		len(mine)-n, len(mine), strings.Join(parts, ", "))
}

// lastHeard is the newest audit event of each agent's hook, by agent
// name, among the newest heardScan events of each of heardTypes.
func lastHeard(cmd *cobra.Command) (map[string]audit.Record, error) {
	db, err := openStoreOf(cmd)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	out := map[string]audit.Record{}
	for _, t := range heardTypes {
		recs, err := audit.QueryBackend(cmd.Context(), db, audit.Filter{Type: t, Newest: true, Limit: heardScan})
		if err != nil {
			return nil, err
		}
		for _, r := range recs {
			if r.Event.Detail["agent"] != r.Event.Principal {
				continue // not a hook's event
			}
			if prev, ok := out[r.Event.Principal]; !ok || r.Seq > prev.Seq {
				out[r.Event.Principal] = r
			}
		}
	}
	return out, nil
}

// describeHeard is one line about r, the last event of an agent's hook.
func describeHeard(r audit.Record, now time.Time) string {
	e := r.Event
	fields := []string{e.Time.UTC().Format(time.RFC3339), "(" + ago(now.Sub(e.Time)) + "):", e.Type}
	for _, f := range []string{e.Detail["event"], e.Tool, e.Decision, e.Reason} {
		if f != "" {
			fields = append(fields, termtext.Escape(f))
		}
	}
	if s := e.Detail["session"]; s != "" {
		fields = append(fields, "session "+termtext.Escape(s))
	}
	return strings.Join(fields, " ")
}

// ago is d, rounded for a person.
func ago(d time.Duration) string {
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh ago", int(d/time.Hour))
	}
	return fmt.Sprintf("%dd ago", int(d/(24*time.Hour)))
}

// probeTimeout bounds one probe of a hook (Norma's own deadline answers
// far sooner).
const probeTimeout = 60 * time.Second

// probeHook runs the command of f's hook of agent a as the agent runs it
// (sh -c, in project) with a synthetic call of agenthook.ProbeCommand, and checks the
// answer and the audit log.
func probeHook(cmd *cobra.Command, a agenthook.Agent, f hookFile, project string) (bool, string) {
	if len(f.in.Commands) != 1 {
		return false, "FAILED: the file holds several norma commands; install again"
	}
	var rnd [6]byte
	rand.Read(rnd[:])
	session := "norma-hook-check-" + hex.EncodeToString(rnd[:])
	in, err := agenthook.ProbeInput(a, session, project)
	if err != nil {
		return false, "FAILED: " + termtext.Escape(err.Error())
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), probeTimeout)
	defer cancel()
	c := exec.CommandContext(ctx, "/bin/sh", "-c", f.in.Commands[0])
	c.Dir = project
	c.Env = append(os.Environ(), "CLAUDE_PROJECT_DIR="+project)
	var out, errb bytes.Buffer
	c.Stdin, c.Stdout, c.Stderr = bytes.NewReader(in), &out, &errb
	err = c.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		return false, "FAILED: the hook did not run: " + termtext.Escape(err.Error())
	}
	reason, denied := agenthook.ProbeDenied(a, out.Bytes())
	if !denied || (code != 0 && code != 2) {
		return false, fmt.Sprintf("FAILED: the hook answered %q with exit %d, not a deny %s honours (stderr: %s)",
			termtext.Escape(strings.TrimSpace(out.String())), code, a, termtext.Escape(strings.TrimSpace(errb.String())))
	}
	msg := fmt.Sprintf("ok: the hook denied %q (%s)", agenthook.ProbeCommand, termtext.Escape(firstLine(reason)))
	recorded, err := probeRecorded(cmd, session)
	switch {
	case err != nil:
		return false, msg + "; FAILED to read the audit log: " + termtext.Escape(err.Error())
	case !recorded:
		return false, msg + "; FAILED: the decision is not in this state directory's audit log (the hook records in another: --home?)"
	}
	return true, msg + ", and recorded it in the audit log"
}

// probeRecorded reports whether the audit log holds a decision of the
// probe's session.
func probeRecorded(cmd *cobra.Command, session string) (bool, error) {
	db, err := openStoreOf(cmd)
	if err != nil {
		return false, err
	}
	defer db.Close()
	recs, err := audit.QueryBackend(cmd.Context(), db, audit.Filter{Type: audit.TypeCapabilityDecision, Newest: true, Limit: 100})
	if err != nil {
		return false, err
	}
	for _, r := range recs {
		if r.Event.Detail["session"] == session {
			return true, nil
		}
	}
	return false, nil
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}
