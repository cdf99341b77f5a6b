package agenthook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
)

// ClaudeInstaller installs `norma hook claude-code` as a command hook of
// Claude Code, in the settings.json of the user or the project (the
// hooks reference, https://code.claude.com/docs/en/hooks, "Configuration":
// hooks.EVENT is a list of {matcher, hooks: [{type, command, timeout}]}).
type ClaudeInstaller struct{}

// hookEvent is one event of an agent's hooks file that Norma answers,
// with the matcher of its entry.
type hookEvent struct{ name, matcher string }

// hooksFile is an agent's JSON hooks file of the shape Claude Code, Codex
// and Gemini CLI share: hooks.EVENT is a list of {matcher, hooks: [{type:
// "command", command, ...}]}.
type hooksFile struct {
	agent Agent
	// what names the file in errors ("the Claude Code settings").
	what string
	// events are the events Norma answers, in the order entries are added.
	events []hookEvent
	// hook is Norma's hook entry running command.
	hook func(command string) any
}

// claudeEvents are the events Norma answers, each with the matcher of its
// entry: every tool for the tool events; the session events take none.
var claudeEvents = []hookEvent{
	{"PreToolUse", "*"}, {"PermissionRequest", "*"}, {"PostToolUse", "*"}, {"SessionStart", ""}, {"SessionEnd", ""},
}

var claudeFile = hooksFile{agent: ClaudeCode, what: "the Claude Code settings", events: claudeEvents,
	hook: func(command string) any {
		return claudeHook{Type: "command", Command: command, Timeout: claudeHookTimeout}
	}}

// claudeHookTimeout is the timeout, in seconds, written with each entry:
// Claude Code kills the hook after it (and goes on), so it is well above
// Norma's own deadline, which answers with a deny first.
const claudeHookTimeout = 30

// Agent returns ClaudeCode.
func (ClaudeInstaller) Agent() Agent { return ClaudeCode }

// Path is ~/.claude/settings.json or PROJECT/.claude/settings.json.
func (ClaudeInstaller) Path(scope Scope, home, project string) (string, error) {
	switch scope {
	case ScopeUser:
		if home == "" {
			return "", errors.New("no home directory for --scope user")
		}
		return filepath.Join(home, ".claude", "settings.json"), nil
	case ScopeProject:
		if project == "" {
			return "", errors.New("no project directory for --scope project")
		}
		return filepath.Join(project, ".claude", "settings.json"), nil
	}
	return "", fmt.Errorf("unknown scope %q (user or project)", scope)
}

type claudeHook struct {
	Type    string `json:"type"`
	Command string `json:"command"`
	Timeout int    `json:"timeout,omitempty"`
}

type claudeGroup struct {
	Matcher string       `json:"matcher,omitempty"`
	Hooks   []claudeHook `json:"hooks"`
}

// Install adds Norma's entry to each event Norma answers.
func (ClaudeInstaller) Install(old []byte, command string) ([]byte, error) {
	return claudeFile.install(old, command)
}

// Uninstall removes Norma's entries, and the lists and the hooks key they
// leave empty.
func (ClaudeInstaller) Uninstall(old []byte) ([]byte, error) {
	return claudeFile.uninstall(old)
}

// install adds Norma's entry running command to each event of f.
func (f hooksFile) install(old []byte, command string) ([]byte, error) {
	return f.edit(old, func(event string, groups []json.RawMessage) ([]json.RawMessage, error) {
		spec := ""
		for _, e := range f.events {
			if e.name == event {
				spec = e.matcher
			}
		}
		if hasCommand(groups, command, f.agent) {
			return groups, nil
		}
		groups, err := withoutNorma(groups, f.agent)
		if err != nil {
			return nil, err
		}
		g, _ := json.Marshal(struct {
			Matcher string `json:"matcher,omitempty"`
			Hooks   []any  `json:"hooks"`
		}{spec, []any{f.hook(command)}})
		return append(groups, g), nil
	}, true)
}

// uninstall removes Norma's entries from f, and the lists and the hooks
// key they leave empty.
func (f hooksFile) uninstall(old []byte) ([]byte, error) {
	return f.edit(old, func(_ string, groups []json.RawMessage) ([]json.RawMessage, error) {
		return withoutNorma(groups, f.agent)
	}, false)
}

// edit applies edit to the entry list of each event Norma answers (all
// events with add, else those present), keeping every other key and value
// of the file in its order; old comes back as it is when nothing changed.
func (f hooksFile) edit(old []byte, edit func(string, []json.RawMessage) ([]json.RawMessage, error), add bool) ([]byte, error) {
	top, err := parseObject(old)
	if err != nil {
		return nil, fmt.Errorf("%s are not a JSON object: %w", f.what, err)
	}
	hooks := &object{vals: map[string]json.RawMessage{}}
	if raw, ok := top.get("hooks"); ok {
		if hooks, err = parseObject(raw); err != nil {
			return nil, fmt.Errorf("%s' hooks are not a JSON object: %w", f.what, err)
		}
	}
	changed := false
	for _, e := range f.events {
		var groups []json.RawMessage
		raw, ok := hooks.get(e.name)
		if !ok && !add {
			continue
		}
		if ok {
			if err := json.Unmarshal(raw, &groups); err != nil {
				return nil, fmt.Errorf("%s' hooks.%s is not a list: %w", f.what, e.name, err)
			}
		}
		out, err := edit(e.name, groups)
		if err != nil {
			return nil, fmt.Errorf("hooks.%s: %w", e.name, err)
		}
		if ok && sameGroups(groups, out) {
			continue
		}
		changed = true
		if len(out) == 0 {
			hooks.del(e.name)
			continue
		}
		b, _ := json.Marshal(out)
		hooks.set(e.name, b)
	}
	if !changed {
		return old, nil
	}
	if len(hooks.keys) == 0 {
		top.del("hooks")
	} else {
		b, _ := hooks.MarshalJSON()
		top.set("hooks", b)
	}
	return render(top)
}

// hasCommand reports whether one of groups runs exactly command, with no
// other Norma entry (of agent a) beside it.
func hasCommand(groups []json.RawMessage, command string, a Agent) bool {
	found, others := false, false
	for _, g := range groups {
		var cg claudeGroup
		if json.Unmarshal(g, &cg) != nil {
			continue
		}
		for _, h := range cg.Hooks {
			switch {
			case h.Command == command:
				found = true
			case IsNormaCommand(h.Command, a):
				others = true
			}
		}
	}
	return found && !others
}

// withoutNorma removes Norma's hooks (of agent a) from groups, and the
// groups left with no hook; a group Norma's hook shared with others keeps
// its other keys.
func withoutNorma(groups []json.RawMessage, a Agent) ([]json.RawMessage, error) {
	var out []json.RawMessage
	for _, g := range groups {
		o, err := parseObject(g)
		if err != nil {
			out = append(out, g) // not Norma's: kept as it is
			continue
		}
		raw, ok := o.get("hooks")
		var hs []json.RawMessage
		if !ok || json.Unmarshal(raw, &hs) != nil {
			out = append(out, g)
			continue
		}
		var keep []json.RawMessage
		for _, h := range hs {
			var ch claudeHook
			if json.Unmarshal(h, &ch) == nil && IsNormaCommand(ch.Command, a) {
				continue
			}
			keep = append(keep, h)
		}
		switch {
		case len(keep) == len(hs):
			out = append(out, g)
		case len(keep) > 0:
			b, _ := json.Marshal(keep)
			o.set("hooks", b)
			nb, _ := o.MarshalJSON()
			out = append(out, nb)
		}
	}
	return out, nil
}

func sameGroups(a, b []json.RawMessage) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}
