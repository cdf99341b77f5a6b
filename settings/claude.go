package settings

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/goccy/go-yaml"

	"github.com/norma-run/norma/hook"
	"github.com/norma-run/norma/internal/codeenv"
	"github.com/norma-run/norma/policy"
)

// claudeFile is what ImportClaude reads of Claude Code's settings.json.
type claudeFile struct {
	Permissions *struct {
		Allow                 []string `json:"allow"`
		Ask                   []string `json:"ask"`
		Deny                  []string `json:"deny"`
		DefaultMode           string   `json:"defaultMode"`
		AdditionalDirectories []string `json:"additionalDirectories"`
	} `json:"permissions"`
	Hooks map[string][]struct {
		Matcher string `json:"matcher"`
		Hooks   []struct {
			Type    string  `json:"type"`
			Command string  `json:"command"`
			Timeout float64 `json:"timeout"`
		} `json:"hooks"`
	} `json:"hooks"`
	Env map[string]string `json:"env"`
}

// out is the settings file ImportClaude writes, in a fixed field order.
type outFile struct {
	Permissions *outPermissions   `yaml:"permissions,omitempty"`
	Hooks       yaml.MapSlice     `yaml:"hooks,omitempty"`
	Env         map[string]string `yaml:"env,omitempty"`
}

type outPermissions struct {
	Allow                 []string `yaml:"allow,omitempty"`
	Ask                   []string `yaml:"ask,omitempty"`
	Deny                  []string `yaml:"deny,omitempty"`
	DefaultMode           string   `yaml:"defaultMode,omitempty"`
	AdditionalDirectories []string `yaml:"additionalDirectories,omitempty"`
}

type outMatcher struct {
	Matcher string    `yaml:"matcher,omitempty"`
	Hooks   []outHook `yaml:"hooks"`
}

type outHook struct {
	Type    string  `yaml:"type"`
	Command string  `yaml:"command"`
	Timeout float64 `yaml:"timeout,omitempty"`
}

// ImportClaude converts Claude Code's settings.json (its permissions,
// hooks and env) into a Norma settings file, and says what it could not
// convert: other keys, hooks that are not one program with literal
// arguments, modes Norma does not have. Permission rules are kept as
// written (Norma reads Claude Code's rule language); one Norma cannot
// read is never dropped silently and never widens what runs (see
// importRule): an allow is left out and noted, a deny or ask becomes a
// stricter rule that is noted, or the import fails. The result parses
// with [Parse]; workspace resolves $CLAUDE_PROJECT_DIR for that check
// and places rules written with an absolute path.
func ImportClaude(data []byte, workspace string) (out []byte, notes []string, err error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, nil, fmt.Errorf("settings: import: not a JSON object: %w", err)
	}
	var cf claudeFile
	if err := json.Unmarshal(data, &cf); err != nil {
		return nil, nil, fmt.Errorf("settings: import: %w", err)
	}
	for _, k := range sortedKeys(raw) {
		if k != "permissions" && k != "hooks" && k != "env" && k != "$schema" {
			notes = append(notes, fmt.Sprintf("%s: not converted (Norma has no such setting)", k))
		}
	}
	var perms map[string]json.RawMessage
	if json.Unmarshal(raw["permissions"], &perms) == nil {
		for _, k := range sortedKeys(perms) {
			switch k {
			case "allow", "ask", "deny", "defaultMode", "additionalDirectories":
			default:
				notes = append(notes, fmt.Sprintf("permissions.%s: not converted (Norma has no such setting)", k))
			}
		}
	}
	var o outFile
	o.Permissions, notes, err = importPermissions(&cf, workspace, notes)
	if err != nil {
		return nil, notes, err
	}
	o.Hooks, notes = importHooks(&cf, workspace, notes)
	for _, k := range sortedKeys(cf.Env) {
		if codeenv.Of(k) != codeenv.None {
			notes = append(notes, fmt.Sprintf("env.%s: not converted (it changes which code runs)", k))
			continue
		}
		if o.Env == nil {
			o.Env = map[string]string{}
		}
		o.Env[k] = cf.Env[k]
	}
	var b bytes.Buffer
	b.WriteString("# Converted from Claude Code's settings by `norma settings import claude`.\n")
	enc, err := yaml.MarshalWithOptions(o, yaml.Indent(2), yaml.IndentSequence(true))
	if err != nil {
		return nil, nil, err
	}
	if string(enc) != "{}\n" {
		b.Write(enc)
	}
	if _, err := Parse("imported settings", b.Bytes(), ScopeWorkspace, workspace); err != nil {
		return nil, nil, fmt.Errorf("settings: import: the converted file does not parse: %w", err)
	}
	return b.Bytes(), notes, nil
}

func importPermissions(cf *claudeFile, workspace string, notes []string) (*outPermissions, []string, error) {
	p := cf.Permissions
	if p == nil {
		return nil, notes, nil
	}
	var errs []error
	keep := func(list string, rules []string) []string {
		var out []string
		for _, r := range rules {
			conv, note, err := importRule(list, r, workspace)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if note != "" {
				notes = append(notes, note)
			}
			if conv != "" && !slices.Contains(out, conv) {
				out = append(out, conv)
			}
		}
		return out
	}
	op := &outPermissions{Allow: keep("allow", p.Allow), Ask: keep("ask", p.Ask), Deny: keep("deny", p.Deny),
		AdditionalDirectories: p.AdditionalDirectories}
	if len(errs) > 0 {
		return nil, notes, errors.Join(errs...)
	}
	switch p.DefaultMode {
	case "", "default", "acceptEdits", "plan", "dontAsk":
		op.DefaultMode = p.DefaultMode
	default:
		notes = append(notes, fmt.Sprintf("permissions.defaultMode %q: not converted (Norma's modes are default, acceptEdits, plan and dontAsk)", p.DefaultMode))
	}
	if len(op.AdditionalDirectories) > 0 {
		notes = append(notes, "permissions.additionalDirectories: converted, but the built-in tools still see the workspace only")
	}
	return op, notes, nil
}

// importRule converts one of Claude Code's permission rules. Norma reads
// Claude Code's rule language itself (package policy), so a rule is
// normally kept as written. One it cannot read is never dropped
// silently, and never in a way that widens what runs:
//
//   - an allow rule is left out, with a note: Norma asks where Claude
//     Code would have allowed;
//   - a deny or ask rule on a tool whose argument Norma does not read
//     (Glob(x), WebSearch(x), NotebookEdit(x), ...) becomes the rule on
//     the whole tool, with a note: stricter;
//   - a deny or ask rule naming a misspelt tool, which matches no call in
//     Claude Code either, is left out with a note;
//   - a deny or ask rule whose argument Norma cannot read (a file, command
//     or domain rule) fails the import: it must be fixed, not guessed at.
//
// A rule that names a path outside the workspace is kept, with a note of
// what it reaches there.
func importRule(list, r, workspace string) (conv, note string, err error) {
	where := fmt.Sprintf("permissions.%s %q", list, r)
	if nerr := checkToolName(r); nerr != nil {
		return "", fmt.Sprintf("%s: not converted (%v); it matches no call of Claude Code either", where, nerr), nil
	}
	cerr := policy.CheckRule(r)
	if cerr == nil {
		return r, outsideNote(where, list, r, workspace), nil
	}
	name, _, hasArg := strings.Cut(r, "(")
	name = strings.TrimSpace(name)
	if list == "allow" {
		return "", fmt.Sprintf("%s: not converted (%v); Norma asks where Claude Code would allow", where, cerr), nil
	}
	switch name {
	case "Read", "Write", "Edit", "Bash", "WebFetch":
		return "", "", fmt.Errorf("settings: import: %s: Norma cannot read this rule (%v), and leaving it out would let through what it stops; fix or remove it", where, cerr)
	}
	if hasArg && policy.CheckRule(name) == nil && checkToolName(name) == nil {
		verb := map[string]string{"deny": "denies", "ask": "asks for"}[list]
		return name, fmt.Sprintf("%s: converted as %q, stricter (Norma reads no argument pattern for %s: the rule %s every call of the tool)", where, name, name, verb), nil
	}
	return "", "", fmt.Errorf("settings: import: %s: Norma cannot read this rule (%v); fix or remove it", where, cerr)
}

// outsideNote is the note of a path rule that names a place outside the
// workspace (//abs, ~/x, ../x), or "".
func outsideNote(where, list, r, workspace string) string {
	verb, arg, ok := strings.Cut(r, "(")
	if !ok || (verb != "Read" && verb != "Write" && verb != "Edit") {
		return ""
	}
	arg = strings.TrimSuffix(arg, ")")
	var abs string
	switch {
	case strings.HasPrefix(arg, "//"):
		abs = "/" + strings.TrimLeft(arg, "/")
	case arg == "~" || strings.HasPrefix(arg, "~/"):
		if list == "allow" {
			return fmt.Sprintf("%s: converted; ~ is the home directory of the agent's shell: in the workspace the rule applies, outside it Norma's tools are refused anyway (PATH_ESCAPE)", where)
		}
		return fmt.Sprintf("%s: converted; ~ is the home directory of the agent's shell: in the workspace the rule applies, outside it Norma refuses its tools and shell commands anyway (PATH_ESCAPE), except the system files the sandbox shows every command (/usr, /bin, some of /etc)", where)
	case arg == ".." || strings.HasPrefix(arg, "../"):
		abs = path.Join(workspace, arg)
	default:
		return ""
	}
	if workspace != "" && (abs == workspace || strings.HasPrefix(abs, strings.TrimSuffix(workspace, "/")+"/")) {
		return "" // a place in this workspace, matched there
	}
	if list == "allow" {
		return fmt.Sprintf("%s: converted; it names a place outside the workspace, which Norma's tools do not reach (PATH_ESCAPE), so it allows nothing there", where)
	}
	return fmt.Sprintf("%s: converted; it names a place outside the workspace, which Norma refuses its tools and shell commands anyway (PATH_ESCAPE), except the system files the sandbox shows every command (/usr, /bin, some of /etc), which a shell command may still read", where)
}

func importHooks(cf *claudeFile, workspace string, notes []string) (yaml.MapSlice, []string) {
	var out yaml.MapSlice
	events := sortedKeys(cf.Hooks)
	sort.SliceStable(events, func(i, j int) bool { return hookOrder(events[i]) < hookOrder(events[j]) })
	for _, e := range events {
		if !hook.Event(e).Valid() {
			notes = append(notes, fmt.Sprintf("hooks.%s: not converted (Norma has no such event)", e))
			continue
		}
		var ms []outMatcher
		for i, m := range cf.Hooks[e] {
			om := outMatcher{Matcher: m.Matcher}
			for j, h := range m.Hooks {
				where := fmt.Sprintf("hooks.%s[%d].hooks[%d]", e, i, j)
				if h.Type != "command" {
					notes = append(notes, fmt.Sprintf("%s: not converted (a %q hook; Norma runs command hooks)", where, h.Type))
					continue
				}
				if _, err := hookArgv(h.Command, workspace); err != nil {
					notes = append(notes, fmt.Sprintf("%s %q: not converted (%v); put it in a script and name the script", where, h.Command, err))
					continue
				}
				timeout := h.Timeout
				if timeout < 0 {
					notes = append(notes, fmt.Sprintf("%s: timeout %gs not converted (the default applies)", where, timeout))
					timeout = 0
				}
				if timeout > maxHookTimeout {
					notes = append(notes, fmt.Sprintf("%s: timeout %gs lowered to Norma's maximum, %ds", where, timeout, maxHookTimeout))
					timeout = maxHookTimeout
				}
				om.Hooks = append(om.Hooks, outHook{Type: "command", Command: h.Command, Timeout: timeout})
			}
			if len(om.Hooks) > 0 {
				ms = append(ms, om)
			}
		}
		if len(ms) > 0 {
			out = append(out, yaml.MapItem{Key: e, Value: ms})
		}
	}
	return out, notes
}

// maxHookTimeout is the longest hook timeout, in seconds, of
// schema/v1.json.
const maxHookTimeout = 600

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
