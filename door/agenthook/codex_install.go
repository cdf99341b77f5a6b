package agenthook

import (
	"errors"
	"fmt"
	"path/filepath"
)

// CodexInstaller installs `norma hook codex` as a command hook of Codex
// CLI, in the hooks.json of its configuration folder: ~/.codex for the
// user, PROJECT/.codex for the project (openai/codex,
// codex-rs/hooks/src/engine/discovery.rs, load_hooks_json; the file's
// shape is Claude Code's). No timeout is written: Codex's default (600
// seconds) is far above Norma's own deadline, which answers with a deny
// first.
//
// Codex runs a hook only once its trust is recorded (see codex_trust.go):
// writing the file is half of an install, and the caller records the
// trust through Codex itself ([CodexAppServer]).
type CodexInstaller struct {
	// Home is Codex's home directory ($CODEX_HOME, where Codex reads the
	// user's hooks.json); empty means HOME/.codex.
	Home string
}

var codexFile = hooksFile{agent: Codex, what: "the Codex hooks file",
	events: []hookEvent{{"PreToolUse", "*"}, {"PostToolUse", "*"}, {"SessionStart", ""}},
	hook:   func(command string) any { return claudeHook{Type: "command", Command: command} }}

// Agent returns Codex.
func (CodexInstaller) Agent() Agent { return Codex }

// Path is CODEX_HOME/hooks.json (~/.codex/hooks.json) or
// PROJECT/.codex/hooks.json.
func (c CodexInstaller) Path(scope Scope, home, project string) (string, error) {
	if scope == ScopeUser && c.Home != "" {
		if !filepath.IsAbs(c.Home) {
			return "", fmt.Errorf("CODEX_HOME %q is not an absolute path", c.Home)
		}
		return filepath.Join(c.Home, "hooks.json"), nil
	}
	return scopedPath(scope, home, project, ".codex", "hooks.json")
}

// Install adds Norma's entry to PreToolUse, PostToolUse and SessionStart.
func (CodexInstaller) Install(old []byte, command string) ([]byte, error) {
	return codexFile.install(old, command)
}

// Uninstall removes Norma's entries.
func (CodexInstaller) Uninstall(old []byte) ([]byte, error) { return codexFile.uninstall(old) }

// GeminiInstaller installs `norma hook gemini` as a command hook of Gemini
// CLI, in its settings.json: ~/.gemini for the user, PROJECT/.gemini for
// the project (https://geminicli.com/docs/hooks, "Configuration"). The
// entry is named "norma" (for /hooks enable|disable) and has a timeout in
// milliseconds, well above Norma's own deadline.
type GeminiInstaller struct{}

// geminiHook is one entry of Gemini CLI's hooks.EVENT lists.
type geminiHook struct {
	Name    string `json:"name"`
	Type    string `json:"type"`
	Command string `json:"command"`
	Timeout int    `json:"timeout"`
}

var geminiFile = hooksFile{agent: Gemini, what: "the Gemini CLI settings",
	events: []hookEvent{{"BeforeTool", "*"}, {"AfterTool", "*"}, {"SessionStart", ""}, {"SessionEnd", ""}},
	hook: func(command string) any {
		return geminiHook{Name: "norma", Type: "command", Command: command, Timeout: 30000}
	}}

// Agent returns Gemini.
func (GeminiInstaller) Agent() Agent { return Gemini }

// Path is ~/.gemini/settings.json or PROJECT/.gemini/settings.json.
func (GeminiInstaller) Path(scope Scope, home, project string) (string, error) {
	return scopedPath(scope, home, project, ".gemini", "settings.json")
}

// Install adds Norma's entry to BeforeTool, AfterTool, SessionStart and
// SessionEnd.
func (GeminiInstaller) Install(old []byte, command string) ([]byte, error) {
	return geminiFile.install(old, command)
}

// Uninstall removes Norma's entries.
func (GeminiInstaller) Uninstall(old []byte) ([]byte, error) { return geminiFile.uninstall(old) }

// scopedPath is DIR/FILE under the user's home or the project.
func scopedPath(scope Scope, home, project, dir, file string) (string, error) {
	switch scope {
	case ScopeUser:
		if home == "" {
			return "", errors.New("no home directory for --scope user")
		}
		return filepath.Join(home, dir, file), nil
	case ScopeProject:
		if project == "" {
			return "", errors.New("no project directory for --scope project")
		}
		return filepath.Join(project, dir, file), nil
	}
	return "", fmt.Errorf("unknown scope %q (user or project)", scope)
}
