package settings

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
)

// claudeUnconvertible is what testdata/claude/settings.json holds that
// Norma cannot take, written down by hand rather than asked of the
// converter: each must be named in a note and be absent from the output.
var claudeUnconvertible = struct {
	rules    []string // permission rules
	commands []string // hook commands that are not one program
	events   []string // hook events Norma does not have
	hooks    []string // hooks of another type, by where they are
	keys     []string // settings Norma does not have
}{
	// Every rule of the file converts: Norma reads Claude Code's rule
	// language, the wildcard form Bash(git log *), ~/ and //abs included
	// (TestImportClaudeRules has the forms it cannot read).
	rules:    nil,
	commands: []string{"jq -r '.tool_input.file_path' | xargs npx prettier --write"},
	events:   []string{"Notification"},
	hooks:    []string{"hooks.Stop[0].hooks[0]"},
	keys: []string{"apiKeyHelper", "enableAllProjectMcpServers", "model", "statusLine",
		"permissions.disableBypassPermissionsMode"},
}

// TestImportClaude converts a realistic .claude/settings.json and variants
// of it. The output must parse, hold every convertible rule and hook with
// the same text, and converted back to JSON give the input's permissions
// and hooks less what could not be converted; everything left out is
// named in a note.
func TestImportClaude(t *testing.T) {
	input, err := os.ReadFile("testdata/claude/settings.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name  string
		edit  [2]string // old, new in the input
		notes []string  // more notes the edit causes
		// expect adjusts the expected convertible subset for the edit.
		expect func(perms, hooks map[string]any)
	}{
		{name: "settings"},
		{
			name:  "bypass",
			edit:  [2]string{`"defaultMode": "acceptEdits"`, `"defaultMode": "bypassPermissions"`},
			notes: []string{`permissions.defaultMode "bypassPermissions": not converted`},
			expect: func(perms, _ map[string]any) {
				delete(perms, "defaultMode")
			},
		},
		{
			name:  "long timeout",
			edit:  [2]string{`"timeout": 20`, `"timeout": 900`},
			notes: []string{"hooks.SessionStart[0].hooks[0]: timeout 900s lowered to Norma's maximum, 600s"},
			expect: func(_, hooks map[string]any) {
				h := hooks["SessionStart"].([]any)[0].(map[string]any)["hooks"].([]any)[0].(map[string]any)
				h["timeout"] = 600.0
			},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			in := input
			if tt.edit[0] != "" {
				s := strings.Replace(string(input), tt.edit[0], tt.edit[1], 1)
				if s == string(input) {
					t.Fatalf("edit %q did not apply", tt.edit[0])
				}
				in = []byte(s)
			}
			out, notes, err := ImportClaude(in, testWorkspace)
			if err != nil {
				t.Fatalf("ImportClaude: %v", err)
			}
			base := "testdata/claude/" + strings.ReplaceAll(tt.name, " ", "-")
			golden(t, base+".yaml.golden", out)
			golden(t, base+".notes.golden", []byte(strings.Join(notes, "\n")+"\n"))

			f, err := Parse("imported.yaml", out, ScopeWorkspace, testWorkspace)
			if err != nil {
				t.Fatalf("Parse(ImportClaude output): %v\n%s", err, out)
			}

			// What should have been converted, from the input itself.
			perms, hooks := claudeConvertible(t, in)
			if tt.expect != nil {
				tt.expect(perms, hooks)
			}

			// The round trip: the output as JSON is that subset.
			var back map[string]any
			j, err := yaml.YAMLToJSON(out)
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(j, &back); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(back["permissions"], any(perms)) {
				t.Errorf("permissions round trip:\n got  %s\n want %s", dump(back["permissions"]), dump(perms))
			}
			if !reflect.DeepEqual(back["hooks"], any(hooks)) {
				t.Errorf("hooks round trip:\n got  %s\n want %s", dump(back["hooks"]), dump(hooks))
			}
			var raw map[string]any
			json.Unmarshal(in, &raw)
			if !reflect.DeepEqual(back["env"], raw["env"]) {
				t.Errorf("env = %v, want %v", back["env"], raw["env"])
			}

			// Parsed, every rule and hook is there with the same text.
			var gotRules, wantRules []string
			for _, r := range f.Rules {
				gotRules = append(gotRules, r.List+" "+r.Text)
			}
			for _, list := range []string{"allow", "ask", "deny"} {
				for _, r := range perms[list].([]any) {
					wantRules = append(wantRules, list+" "+r.(string))
				}
			}
			if !reflect.DeepEqual(gotRules, wantRules) {
				t.Errorf("parsed rules = %q\nwant %q", gotRules, wantRules)
			}
			var gotHooks, wantHooks []string
			for _, h := range f.Hooks {
				gotHooks = append(gotHooks, fmt.Sprintf("%s %q %q %v", h.Event, h.Matcher, h.Command, h.Timeout.Seconds()))
			}
			for e, ms := range hooks {
				for _, m := range ms.([]any) {
					m := m.(map[string]any)
					matcher, _ := m["matcher"].(string)
					for _, h := range m["hooks"].([]any) {
						h := h.(map[string]any)
						timeout, _ := h["timeout"].(float64)
						wantHooks = append(wantHooks, fmt.Sprintf("%s %q %q %v", e, matcher, h["command"], timeout))
					}
				}
			}
			slices.Sort(gotHooks)
			slices.Sort(wantHooks)
			if !reflect.DeepEqual(gotHooks, wantHooks) {
				t.Errorf("parsed hooks = %q\nwant %q", gotHooks, wantHooks)
			}

			// Everything left out is named, and absent from the output.
			named := func(what, s string) {
				t.Helper()
				if !slices.ContainsFunc(notes, func(n string) bool { return strings.Contains(n, s) }) {
					t.Errorf("no note names %s %s; notes:\n%s", what, s, strings.Join(notes, "\n"))
				}
			}
			u := claudeUnconvertible
			for _, r := range u.rules {
				named("rule", fmt.Sprintf("%q", r))
				if strings.Contains(string(out), r) {
					t.Errorf("output holds unconvertible rule %q", r)
				}
			}
			for _, c := range u.commands {
				named("hook", fmt.Sprintf("%q", c))
				if strings.Contains(string(out), "prettier") {
					t.Errorf("output holds unconvertible hook %q", c)
				}
			}
			for _, e := range u.events {
				named("event", "hooks."+e+":")
				if strings.Contains(string(out), e) {
					t.Errorf("output holds event %s", e)
				}
			}
			for _, h := range u.hooks {
				named("hook", h+":")
			}
			for _, k := range u.keys {
				named("setting", k+":")
				if strings.Contains(string(out), k[strings.LastIndexByte(k, '.')+1:]) {
					t.Errorf("output holds setting %s", k)
				}
			}
			for _, n := range tt.notes {
				named("edit", n)
			}
		})
	}
}

// claudeConvertible returns the input's permissions and hooks as JSON
// values, less what claudeUnconvertible names: what the output must hold.
func claudeConvertible(t *testing.T, in []byte) (perms, hooks map[string]any) {
	t.Helper()
	var raw struct {
		Permissions map[string]any `json:"permissions"`
		Hooks       map[string]any `json:"hooks"`
	}
	if err := json.Unmarshal(in, &raw); err != nil {
		t.Fatal(err)
	}
	u := claudeUnconvertible
	perms = raw.Permissions
	for _, list := range []string{"allow", "ask", "deny"} {
		var keep []any
		for _, r := range perms[list].([]any) {
			if !slices.Contains(u.rules, r.(string)) {
				keep = append(keep, r)
			}
		}
		perms[list] = keep
	}
	for _, k := range u.keys {
		if name, ok := strings.CutPrefix(k, "permissions."); ok {
			delete(perms, name)
		}
	}
	hooks = map[string]any{}
	for e, ms := range raw.Hooks {
		if slices.Contains(u.events, e) {
			continue
		}
		var keepMs []any
		for i, m := range ms.([]any) {
			m := m.(map[string]any)
			var keepHs []any
			for j, h := range m["hooks"].([]any) {
				h := h.(map[string]any)
				if slices.Contains(u.hooks, fmt.Sprintf("hooks.%s[%d].hooks[%d]", e, i, j)) ||
					slices.Contains(u.commands, h["command"].(string)) {
					continue
				}
				keepHs = append(keepHs, h)
			}
			if len(keepHs) > 0 {
				m["hooks"] = keepHs
				if m["matcher"] == "" {
					delete(m, "matcher")
				}
				keepMs = append(keepMs, m)
			}
		}
		if len(keepMs) > 0 {
			hooks[e] = keepMs
		}
	}
	return perms, hooks
}

// TestImportClaudeSmall: inputs at the edges.
func TestImportClaudeSmall(t *testing.T) {
	for _, tt := range []struct {
		name, in string
		ok       bool
		note     string // a note that must be given
	}{
		{name: "empty object", in: `{}`, ok: true},
		{name: "schema only", in: `{"$schema": "https://json.schemastore.org/claude-code-settings.json"}`, ok: true},
		{name: "not an object", in: `["Read"]`},
		{name: "not JSON", in: `permissions: {}`},
		{name: "wrong type", in: `{"permissions": {"allow": "Read"}}`},
		{name: "every mode", in: `{"permissions": {"defaultMode": "plan"}}`, ok: true},
		{name: "negative timeout", in: `{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "/bin/true", "timeout": -1}]}]}}`,
			ok: true, note: "hooks.Stop[0].hooks[0]: timeout -1s not converted"},
		{name: "bare program", in: `{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "notify"}]}]}}`,
			ok: true, note: `hooks.Stop[0].hooks[0] "notify": not converted`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, notes, err := ImportClaude([]byte(tt.in), testWorkspace)
			if !tt.ok {
				if err == nil {
					t.Fatalf("ImportClaude(%s) = %s, want an error", tt.in, out)
				}
				return
			}
			if err != nil {
				t.Fatalf("ImportClaude(%s): %v", tt.in, err)
			}
			if _, err := Parse("out.yaml", out, ScopeWorkspace, testWorkspace); err != nil {
				t.Errorf("Parse(ImportClaude(%s)): %v\n%s", tt.in, err, out)
			}
			if tt.note != "" && !slices.ContainsFunc(notes, func(n string) bool { return strings.HasPrefix(n, tt.note) }) {
				t.Errorf("ImportClaude(%s) notes = %q, want %q", tt.in, notes, tt.note)
			}
		})
	}
}
