package agenthook

import (
	"encoding/json"
	"strings"

	"github.com/norma-run/norma/settings"
)

// Confining Claude Code's Bash. A hook can only decide what a command
// names, not what the programs it runs open (`x=.env; cat $x`, `cat .e*`,
// `grep -r TOKEN .`), and Claude Code runs the command in its own shell,
// outside Norma's sandbox. So an allowed or asked Bash call is answered
// with hookSpecificOutput.updatedInput (Claude Code's hooks reference,
// "PreToolUse decision control": updatedInput replaces the tool's input
// before it runs, with allow or ask) whose command is
//
//	'NORMA' ['--home' 'H'] hook exec --workspace 'WS' -- 'COMMAND'
//
// which runs COMMAND in the sandbox a run's Bash gets in WS (norma hook
// exec, workspace.Runtime.RunShell). COMMAND is what the gate decided (the
// wrapper is Norma's own), with the analysis of an unconfined command as
// well: what it refuses stays refused. settings agentHooks.confineBash: false (user,
// --settings or managed settings) turns it off.

// confines reports whether the Bash call of ev is to run inside Norma's
// sandbox: Claude Code's, with the engine told its own command line, the
// sandbox available, and not turned off in the settings.
func (e *Engine) confines(ev Event, en *rtEntry) bool {
	if ev.Agent != ClaudeCode || ev.Call == nil || ev.Call.Tool != "Bash" || len(e.o.Exec) == 0 || !en.rt.Sandbox() {
		return false
	}
	return confineOn(en.rt.Settings())
}

func confineOn(s *settings.Settings) bool {
	return s == nil || s.ConfineBash == nil || *s.ConfineBash
}

// wrapPrefix is the wrapped command up to its last word.
func wrapPrefix(exec []string, ws string) string {
	var b strings.Builder
	for _, w := range exec {
		b.WriteString(shellQuote(w))
		b.WriteByte(' ')
	}
	b.WriteString("hook exec --workspace ")
	b.WriteString(shellQuote(ws))
	b.WriteString(" -- ")
	return b.String()
}

// Wrap is the command that runs command inside the sandbox of workspace
// ws, by the norma binary whose command line (path, and --home when
// chosen) is exec: what Claude Code's shell runs instead of command.
func Wrap(exec []string, ws, command string) string {
	return wrapPrefix(exec, ws) + shellQuote(command)
}

// unwrap returns the command a wrapped command runs, when s is exactly
// what Wrap makes of it for exec and ws: Claude Code sends the wrapped
// command to the hooks after PreToolUse (PermissionRequest, PostToolUse),
// and it is decided as the command it runs, confined.
func unwrap(exec []string, ws, s string) (string, bool) {
	rest, ok := strings.CutPrefix(s, wrapPrefix(exec, ws))
	if !ok || len(rest) < 2 || rest[0] != '\'' || rest[len(rest)-1] != '\'' {
		return "", false
	}
	inner := strings.ReplaceAll(rest[1:len(rest)-1], `'\''`, "'")
	if shellQuote(inner) != rest {
		return "", false
	}
	return inner, true
}

// bashCommand returns the command of a Bash input.
func bashCommand(in json.RawMessage) (string, bool) {
	var b struct {
		Command *string `json:"command"`
	}
	if json.Unmarshal(in, &b) != nil || b.Command == nil {
		return "", false
	}
	return *b.Command, true
}

// withCommand returns in with its command replaced, every other field
// (timeout, description, run_in_background, ...) kept as the agent sent
// it.
func withCommand(in json.RawMessage, command string) (json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(in, &m); err != nil {
		return nil, err
	}
	c, err := json.Marshal(command)
	if err != nil {
		return nil, err
	}
	m["command"] = c
	return json.Marshal(m)
}
