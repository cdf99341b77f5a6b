package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/door/agenthook"
	"github.com/norma-run/norma/gate"
	"github.com/norma-run/norma/internal/atomicfile"
	"github.com/norma-run/norma/internal/termtext"
	"github.com/norma-run/norma/internal/textdiff"
	"github.com/norma-run/norma/runtime"
)

// maxHookInput bounds one hook input: a Write of Norma's largest file
// (32 MiB) with room for the JSON around it.
const maxHookInput = 40 << 20

func newHookCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "hook",
		Short: "Decide another agent's tool calls with Norma: the hook of Claude Code, and its installer",
		Long: `"norma hook claude-code" is a Claude Code command hook (PreToolUse,
PermissionRequest, PostToolUse, SessionStart, SessionEnd): it reads the
hook's JSON on stdin, decides the call with Norma's gate in the workspace of
the hook's cwd (the settings, workspace policy and installed plugins a run
there would use), records the decision in the audit log, and answers in
Claude Code's format. It fails closed: input it cannot parse or a decision
it cannot make is a deny, with exit 2. An allowed or asked Bash call is
answered with an updated input that runs the command inside Norma's sandbox
("norma hook exec"); agentHooks.confineBash: false in your user settings
turns that off.

"norma hook install claude-code" writes the hook entries into Claude Code's
settings.json; "norma hook uninstall claude-code" removes them.

"norma hook codex" answers Codex CLI's hooks (PreToolUse over Bash,
apply_patch and MCP tools; PostToolUse, SessionStart) and "norma hook gemini"
Gemini CLI's (BeforeTool, AfterTool, SessionStart, SessionEnd), each in its
own format. Their hooks honour only a deny, so a call Norma would ask about
is denied with a message saying to approve it in Norma. "norma hook install
codex|gemini" writes ~/.codex/hooks.json or ~/.gemini/settings.json (or the
project's, with --scope project); for Codex it also records the hooks' trust
in Codex's config.toml, without which Codex skips them.

"norma hook status" shows, for each agent, whether Norma's hook is
installed, whether the agent runs it (Codex: trusted), and when Norma last
heard from it; --check drives one decision through each installed hook.`,
	}
	c.AddCommand(newHookAnswerCmd(agenthook.ClaudeCode), newHookAnswerCmd(agenthook.Codex), newHookAnswerCmd(agenthook.Gemini),
		newHookInstallCmd(), newHookUninstallCmd(), newHookStatusCmd(), newHookExecCmd())
	return c
}

// newHookAnswerCmd is `norma hook AGENT`: one hook input on stdin, the
// answer on stdout, its exit code, and for a refusal by exit code the
// reason on stderr.
func newHookAnswerCmd(a agenthook.Agent) *cobra.Command {
	return &cobra.Command{
		Use:   string(a),
		Short: "Answer one " + string(a) + " hook (JSON on stdin) with Norma's decision",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// Claude Code tells a command hook its project directory.
			c, ok := hookCodec(a, os.Getenv("CLAUDE_PROJECT_DIR"))
			if !ok {
				return exitWith(exitUsage, fmt.Errorf("no hook codec for %s", a))
			}
			r, done := answerHook(cmd, c)
			cmd.OutOrStdout().Write(r.Out)
			if r.Stderr != "" {
				fmt.Fprintln(cmd.ErrOrStderr(), termtext.EscapeText(r.Stderr))
			}
			// The answer is out and its decision recorded: closing the
			// engine (a checkpoint of the audit log) may not hold the
			// exit code back past the agent's own hook timeout.
			within(done, hookCloseTimeout)
			if r.Exit != 0 {
				return exitWith(r.Exit, nil)
			}
			return nil
		},
	}
}

// hookCodec is agent a's codec, given the project directory the hook was
// told (Claude Code's $CLAUDE_PROJECT_DIR; "" for none): the one choice of
// the command hook and of the daemon answering a forwarded input.
func hookCodec(a agenthook.Agent, projectDir string) (agenthook.Codec, bool) {
	if a == agenthook.ClaudeCode {
		return agenthook.Claude{ProjectDir: projectDir}, true
	}
	return agenthook.CodecFor(a)
}

// projectDirOf is the project directory c was given, if any.
func projectDirOf(c agenthook.Codec) string {
	if cl, ok := c.(agenthook.Claude); ok {
		return cl.ProjectDir
	}
	return ""
}

// answerHook reads the hook input and answers it: through the state
// directory's `norma serve` when one runs (forwardHook), else with the
// state directory's engine (hookDecider). Every failure on the way is c's
// refusal. done closes what answering opened.
func answerHook(cmd *cobra.Command, c agenthook.Codec) (r agenthook.Result, done func()) {
	in, err := io.ReadAll(io.LimitReader(cmd.InOrStdin(), maxHookInput+1))
	if err == nil && len(in) > maxHookInput {
		err = hookFailure("the hook input is larger than %d bytes", maxHookInput)
	}
	if err != nil {
		return agenthook.Refuse(c, err), func() {}
	}
	if r, ok := forwardHook(cmd, c, in); ok {
		return r, func() {}
	}
	d := &hookDecider{cmd: cmd}
	return agenthook.Respond(cmd.Context(), c, d, in), d.close
}

// hookCloseTimeout bounds closing the command hook's engine after the
// answer is written.
const hookCloseTimeout = 5 * time.Second

// hookDecider is the command hook's decider. It opens the state
// directory's engine in its first Decide, so that opening it (the audit
// key's lock, the store) runs under Respond's deadline as the decision
// does: a lock another process holds is a deny in time, not a hook that
// hangs until the agent gives up on it, which Claude Code, Codex and
// Gemini CLI all treat as a failed hook, and run the call.
type hookDecider struct {
	cmd         *cobra.Command
	mu          sync.Mutex
	eng         *agenthook.Engine
	closeEngine func()
}

func (d *hookDecider) Decide(ctx context.Context, e agenthook.Event) agenthook.Verdict {
	d.mu.Lock()
	if d.eng == nil {
		eng, closeEngine, err := openHookEngine(d.cmd)
		if err != nil {
			d.mu.Unlock()
			return agenthook.FailVerdict(err)
		}
		d.eng, d.closeEngine = eng, closeEngine
	}
	eng := d.eng
	d.mu.Unlock()
	return eng.Decide(ctx, e)
}

// close closes the engine, if one was opened. An open still under way
// (its Decide ran out of time) has nothing to close yet; it is left to
// the process's exit.
func (d *hookDecider) close() {
	if !d.mu.TryLock() {
		return
	}
	defer d.mu.Unlock()
	if d.closeEngine != nil {
		d.closeEngine()
		d.eng, d.closeEngine = nil, nil
	}
}

// within runs f and waits for it at most d: a process about to exit
// leaves it behind.
func within(f func(), d time.Duration) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}

// openHookEngine opens the engine of the state directory, recording in
// its audit log: the sink `norma run` writes. Secrets are masked in what
// the log holds by the token formats (an event carries names, hashes and
// codes, never a call's content), so no vault is opened.
func openHookEngine(cmd *cobra.Command) (*agenthook.Engine, func(), error) {
	home, err := stateDir(cmd)
	if err != nil {
		return nil, nil, err
	}
	svcs, err := openServices(cmd, home, runtime.ServicesOptions{})
	if err != nil {
		return nil, nil, err
	}
	// Claude Code's Bash commands run inside the sandbox, by this binary
	// (norma hook exec); without its path they could not.
	self, err := selfArgv(cmd)
	if err != nil {
		closeServices(cmd, svcs)
		return nil, nil, err
	}
	eng, err := agenthook.NewEngine(agenthook.EngineOptions{Home: home, Settings: settingsFiles(""), Audit: svcs.Audit, Exec: self, Shell: agentShell(),
		Environ: os.Environ(), // the agent's: its credentials are known values at the exits
		Warn:    func(err error) { fmt.Fprintf(cmd.ErrOrStderr(), "norma: %s\n", termtext.EscapeText(err.Error())) }})
	if err != nil {
		closeServices(cmd, svcs)
		return nil, nil, err
	}
	return eng, func() {
		eng.Close()
		closeServices(cmd, svcs)
	}, nil
}

func hookFailure(format string, a ...any) error {
	return &capability.Error{Decision: capability.Decision{Mode: capability.Deny, Reason: capability.ReasonHookInputInvalid, Layer: capability.LayerAgent},
		Detail: fmt.Sprintf(format, a...)}
}

type hookInstallFlags struct {
	scope, project string
	yes            bool
	// codex is the Codex binary that records its hook trust (install
	// codex); empty means codex on PATH.
	codex string
}

func newHookInstallCmd() *cobra.Command {
	var f hookInstallFlags
	c := &cobra.Command{
		Use:   "install AGENT [--scope user|project] [--yes]",
		Short: "Write Norma's hook entries into the agent's settings (Claude Code: ~/.claude/settings.json or PROJECT/.claude/settings.json), showing the diff first",
		Long: `Add "norma hook AGENT" to the agent's settings for every event Norma
answers, keeping every other key and hook of the file as it was. The command
written is the absolute path of this norma binary (with --home when a state
directory other than the default is in use). Installing twice changes
nothing; an entry of an older binary is replaced. The diff is shown first;
on a terminal you are asked, otherwise --yes is needed.

Codex runs a hook only once its trust is recorded (what its /hooks review
does), and skips any other without a word. "norma hook install codex"
writes $CODEX_HOME/hooks.json (~/.codex/hooks.json) or the project's
.codex/hooks.json, and, under the same consent, records the trust of
Norma's hooks in Codex's config.toml: it asks Codex itself ("codex
app-server": the hooks it loads, with their keys and hashes), shows the
hooks.state entries first, has Codex write them, and checks that Codex
now runs every Norma hook. When it cannot, the install fails and says
what to run. --codex names the Codex binary (default: codex on PATH).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			a := agenthook.Agent(args[0])
			command, err := hookCommand(cmd, a)
			if err != nil {
				return exitWith(exitInternal, err)
			}
			edit := func(in agenthook.Installer, old []byte) ([]byte, error) { return in.Install(old, command) }
			if a == agenthook.Codex {
				return installCodexHook(cmd, f, edit)
			}
			return editAgentSettings(cmd, args[0], f, edit)
		},
	}
	hookScopeFlags(c, &f)
	c.Flags().StringVar(&f.codex, "codex", "", "the Codex binary that records the trust of Norma's hooks (install codex; default: codex on PATH)")
	return c
}

func newHookUninstallCmd() *cobra.Command {
	var f hookInstallFlags
	c := &cobra.Command{
		Use:   "uninstall AGENT [--scope user|project] [--yes]",
		Short: "Remove Norma's hook entries from the agent's settings, showing the diff first",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return editAgentSettings(cmd, args[0], f, agenthook.Installer.Uninstall)
		},
	}
	hookScopeFlags(c, &f)
	return c
}

func hookScopeFlags(c *cobra.Command, f *hookInstallFlags) {
	c.Flags().StringVar(&f.scope, "scope", "user", "user (the agent's settings in your home) or project (the project's)")
	c.Flags().StringVar(&f.project, "project", ".", "the project directory, with --scope project")
	c.Flags().BoolVar(&f.yes, "yes", false, "write without asking")
}

// installerFor is agent's installer, with Codex's home from $CODEX_HOME
// (where Codex reads the user's hooks.json).
func installerFor(agent string) (agenthook.Installer, bool) {
	if agenthook.Agent(agent) == agenthook.Codex {
		return agenthook.CodexInstaller{Home: os.Getenv("CODEX_HOME")}, true
	}
	return agenthook.InstallerFor(agenthook.Agent(agent))
}

// agentSettingsEdit is one planned change of an agent's settings file.
type agentSettingsEdit struct {
	path         string
	old, updated []byte
	perm         os.FileMode
}

func (e *agentSettingsEdit) changed() bool { return string(e.updated) != string(e.old) }

// planAgentSettings reads the agent's settings file of f.scope and
// applies edit to it, writing nothing.
func planAgentSettings(agent string, f hookInstallFlags, edit func(agenthook.Installer, []byte) ([]byte, error)) (*agentSettingsEdit, error) {
	in, ok := installerFor(agent)
	if !ok {
		return nil, exitWith(exitUsage, fmt.Errorf("no hook installer for %q (claude-code, codex, gemini)", agent))
	}
	home, _ := os.UserHomeDir()
	project, err := filepath.Abs(f.project)
	if err != nil {
		return nil, exitWith(exitUsage, err)
	}
	path, err := in.Path(agenthook.Scope(f.scope), home, project)
	if err != nil {
		return nil, exitWith(exitUsage, err)
	}
	e := &agentSettingsEdit{path: path, perm: 0o600}
	e.old, err = os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, exitWith(exitFailed, err)
	}
	if fi, err := os.Stat(path); err == nil {
		e.perm = fi.Mode().Perm()
	}
	if e.updated, err = edit(in, e.old); err != nil {
		return nil, exitWith(exitFailed, fmt.Errorf("%s: %w", path, err))
	}
	return e, nil
}

// show prints the change as a unified diff.
func (e *agentSettingsEdit) show(w io.Writer) {
	fmt.Fprint(w, termtext.EscapeText(textdiff.Unified(e.path, e.path, string(e.old), string(e.updated))))
}

// write writes the change atomically.
func (e *agentSettingsEdit) write() error {
	if err := os.MkdirAll(filepath.Dir(e.path), 0o755); err != nil {
		return exitWith(exitFailed, err)
	}
	if err := atomicfile.Write(e.path, e.updated, e.perm); err != nil {
		return exitWith(exitFailed, err)
	}
	return nil
}

// confirmWrite asks question on a terminal, or takes --yes.
func confirmWrite(cmd *cobra.Command, f hookInstallFlags, question string) error {
	if f.yes {
		return nil
	}
	if !stdinIsTerminal(cmd.InOrStdin()) {
		return exitWith(exitConsent, errors.New("not written: pass --yes to write it without a terminal"))
	}
	fmt.Fprintf(cmd.OutOrStdout(), "%s [y/N] ", question)
	var answer string
	fmt.Fscanln(cmd.InOrStdin(), &answer)
	if answer != "y" && answer != "Y" && answer != "yes" {
		return exitWith(exitConsent, errors.New("not written"))
	}
	return nil
}

// editAgentSettings shows the change edit makes to the agent's settings
// file of f.scope, asks (or takes --yes), and writes it atomically.
func editAgentSettings(cmd *cobra.Command, agent string, f hookInstallFlags, edit func(agenthook.Installer, []byte) ([]byte, error)) error {
	e, err := planAgentSettings(agent, f, edit)
	if err != nil {
		return err
	}
	w := cmd.OutOrStdout()
	if !e.changed() {
		fmt.Fprintf(w, "%s: nothing to change\n", termtext.Escape(e.path))
		return nil
	}
	e.show(w)
	if err := confirmWrite(cmd, f, "Write "+termtext.Escape(e.path)+"?"); err != nil {
		return err
	}
	if err := e.write(); err != nil {
		return err
	}
	fmt.Fprintf(w, "wrote %s\n", termtext.Escape(e.path))
	return nil
}

// hookCommand is the command line an agent runs for Norma's hook: this
// binary's absolute path, --home when the state directory was chosen
// (flag or NORMA_HOME), and `hook AGENT`.
func hookCommand(cmd *cobra.Command, a agenthook.Agent) (string, error) {
	argv, err := selfArgv(cmd)
	if err != nil {
		return "", err
	}
	parts := make([]string, 0, len(argv)+2)
	for _, w := range argv {
		parts = append(parts, shellQuote(w))
	}
	return strings.Join(append(parts, "hook", string(a)), " "), nil
}

// selfArgv is the command line of this norma binary as another process
// runs it: its absolute path (symbolic links resolved), and --home when
// the state directory was chosen (flag or NORMA_HOME).
func selfArgv(cmd *cobra.Command) ([]string, error) {
	exe, err := selfExe()
	if err != nil {
		return nil, err
	}
	argv := []string{exe}
	flag, _ := cmd.Flags().GetString("home")
	if flag != "" || os.Getenv("NORMA_HOME") != "" {
		home, err := stateDir(cmd)
		if err != nil {
			return nil, err
		}
		argv = append(argv, "--home", home)
	}
	return argv, nil
}

// shellQuote quotes s for a POSIX shell when it needs it (Claude Code runs
// a hook's command through one).
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+=:@%,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// agentShell is the environment of the agent's own shell as this process
// sees it: a hook command runs in the agent's environment ($HOME as bash
// expands ~, and whether CDPATH is set), and so does `norma serve`
// started by the same user.
func agentShell() gate.AgentShell {
	sh := gate.AgentShell{CDPath: os.Getenv("CDPATH") != ""}
	if h, err := os.UserHomeDir(); err == nil {
		sh.Home = h
	}
	return sh
}
