package agenthook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Scope is which configuration file of an agent an [Installer] edits.
type Scope string

const (
	// ScopeUser is the user's own configuration (~/.claude/settings.json).
	ScopeUser Scope = "user"
	// ScopeProject is the project's (PROJECT/.claude/settings.json).
	ScopeProject Scope = "project"
)

// Installer writes Norma's hook entries into one agent's configuration
// file and removes them, editing the file's JSON: every other key and hook
// is kept as it was, in its order.
type Installer interface {
	Agent() Agent
	// Path is the configuration file of scope, for the user's home
	// directory home and the project directory project.
	Path(scope Scope, home, project string) (string, error)
	// Install returns old (the file's content; empty when there is none)
	// with Norma's hook entries running command. It is idempotent: when
	// the entries are there with that command, old is returned as it is;
	// Norma's entries with another command (an older binary) are replaced.
	Install(old []byte, command string) ([]byte, error)
	// Uninstall returns old without Norma's entries, and old as it is
	// when it has none.
	Uninstall(old []byte) ([]byte, error)
}

// InstallerFor returns the installer of agent a.
func InstallerFor(a Agent) (Installer, bool) {
	switch a {
	case ClaudeCode:
		return ClaudeInstaller{}, true
	case Codex:
		return CodexInstaller{}, true
	case Gemini:
		return GeminiInstaller{}, true
	}
	return nil, false
}

// Installed is what an agent's configuration file holds of Norma's hook.
type Installed struct {
	// Events are the events Norma answers that have an entry of Norma's,
	// and Missing those that have none, each in the installer's order.
	Events, Missing []string
	// Commands are the distinct commands of Norma's entries, in the order
	// they first appear.
	Commands []string
}

// Complete reports whether every event Norma answers has Norma's entry,
// all running one command.
func (i Installed) Complete() bool { return len(i.Missing) == 0 && len(i.Commands) == 1 }

// InstalledIn reads content (agent a's configuration file, as its
// [Installer] edits it; empty when there is none) for Norma's entries.
func InstalledIn(a Agent, content []byte) (Installed, error) {
	f, ok := hooksFileOf(a)
	if !ok {
		return Installed{}, fmt.Errorf("agenthook: no hook installer for %q", a)
	}
	var in Installed
	top, err := parseObject(content)
	if err != nil {
		return in, fmt.Errorf("%s are not a JSON object: %w", f.what, err)
	}
	hooks := &object{vals: map[string]json.RawMessage{}}
	if raw, ok := top.get("hooks"); ok {
		if hooks, err = parseObject(raw); err != nil {
			return in, fmt.Errorf("%s' hooks are not a JSON object: %w", f.what, err)
		}
	}
	seen := map[string]bool{}
	for _, e := range f.events {
		var groups []claudeGroup
		if raw, ok := hooks.get(e.name); ok {
			json.Unmarshal(raw, &groups) // a list Norma cannot read holds no entry of its
		}
		found := false
		for _, g := range groups {
			for _, h := range g.Hooks {
				if !IsNormaCommand(h.Command, a) {
					continue
				}
				found = true
				if !seen[h.Command] {
					seen[h.Command] = true
					in.Commands = append(in.Commands, h.Command)
				}
			}
		}
		if found {
			in.Events = append(in.Events, e.name)
		} else {
			in.Missing = append(in.Missing, e.name)
		}
	}
	return in, nil
}

// hooksFileOf is the hooks file shape of agent a.
func hooksFileOf(a Agent) (hooksFile, bool) {
	switch a {
	case ClaudeCode:
		return claudeFile, true
	case Codex:
		return codexFile, true
	case Gemini:
		return geminiFile, true
	}
	return hooksFile{}, false
}

// IsNormaCommand reports whether a hook's command line is Norma's hook for
// agent a: `.../norma [--home DIR] hook AGENT`, however the binary is named
// or where it lies.
func IsNormaCommand(command string, a Agent) bool {
	c := strings.TrimSpace(command)
	rest, ok := strings.CutSuffix(c, " hook "+string(a))
	return ok && strings.Contains(rest, "norma")
}

// object is a JSON object that keeps its keys' order and its values' bytes.
type object struct {
	keys []string
	vals map[string]json.RawMessage
}

func parseObject(b []byte) (*object, error) {
	o := &object{vals: map[string]json.RawMessage{}}
	if len(bytes.TrimSpace(b)) == 0 {
		return o, nil
	}
	d := json.NewDecoder(bytes.NewReader(b))
	t, err := d.Token()
	if err != nil {
		return nil, err
	}
	if t != json.Delim('{') {
		return nil, errors.New("not a JSON object")
	}
	for d.More() {
		t, err := d.Token()
		if err != nil {
			return nil, err
		}
		k := t.(string)
		var v json.RawMessage
		if err := d.Decode(&v); err != nil {
			return nil, err
		}
		if _, dup := o.vals[k]; !dup {
			o.keys = append(o.keys, k)
		}
		o.vals[k] = v
	}
	if _, err := d.Token(); err != nil {
		return nil, err
	}
	if _, err := d.Token(); err == nil {
		return nil, errors.New("data after the JSON object")
	}
	return o, nil
}

func (o *object) get(k string) (json.RawMessage, bool) {
	v, ok := o.vals[k]
	return v, ok
}

func (o *object) set(k string, v json.RawMessage) {
	if _, ok := o.vals[k]; !ok {
		o.keys = append(o.keys, k)
	}
	o.vals[k] = v
}

func (o *object) del(k string) {
	if _, ok := o.vals[k]; !ok {
		return
	}
	delete(o.vals, k)
	for i, x := range o.keys {
		if x == k {
			o.keys = append(o.keys[:i], o.keys[i+1:]...)
			break
		}
	}
}

func (o *object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range o.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		b.Write(kb)
		b.WriteByte(':')
		b.Write(o.vals[k])
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// render is o as a settings file: indented by two spaces, one newline at
// the end.
func render(o *object) ([]byte, error) {
	raw, err := o.MarshalJSON()
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		return nil, fmt.Errorf("agenthook: %w", err)
	}
	b.WriteByte('\n')
	return b.Bytes(), nil
}
