package agenthook

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestCodexGeminiInstall: Norma's entries land on the events each codec
// answers, in the agent's own entry shape; the user's other hooks and keys
// stay as they were; installing twice changes nothing; uninstalling gives
// the file back.
func TestCodexGeminiInstall(t *testing.T) {
	for _, tt := range []struct {
		in     Installer
		old    string
		events []string
		entry  string
	}{
		{CodexInstaller{}, `{"hooks":{"Stop":[{"hooks":[{"type":"command","command":"notify"}]}],"PreToolUse":[{"matcher":"Bash","hooks":[{"type":"command","command":"lint"}]}]}}`,
			[]string{"PreToolUse", "PostToolUse", "SessionStart"}, `{"type":"command","command":"/usr/bin/norma hook codex"}`},
		{GeminiInstaller{}, `{"general":{"vimMode":true},"hooks":{"BeforeTool":[{"matcher":"write_file","hooks":[{"type":"command","command":"scan"}]}]}}`,
			[]string{"BeforeTool", "AfterTool", "SessionStart", "SessionEnd"}, `{"name":"norma","type":"command","command":"/usr/bin/norma hook gemini","timeout":30000}`},
	} {
		a := tt.in.Agent()
		cmd := "/usr/bin/norma hook " + string(a)
		got, err := tt.in.Install([]byte(tt.old), cmd)
		if err != nil {
			t.Fatalf("%s: Install: %v", a, err)
		}
		var f struct {
			Hooks map[string][]struct {
				Matcher string            `json:"matcher"`
				Hooks   []json.RawMessage `json:"hooks"`
			} `json:"hooks"`
		}
		if err := json.Unmarshal(got, &f); err != nil {
			t.Fatalf("%s: Install wrote %s: %v", a, got, err)
		}
		for _, ev := range tt.events {
			groups := f.Hooks[ev]
			last := groups[len(groups)-1]
			if len(last.Hooks) != 1 || !sameJSON(t, last.Hooks[0], []byte(tt.entry)) {
				t.Errorf("%s: hooks.%s ends with %+v, want Norma's entry %s", a, ev, last, tt.entry)
			}
		}
		for _, keep := range []string{"notify", "lint", "scan", "vimMode"} {
			if strings.Contains(tt.old, keep) && !strings.Contains(string(got), keep) {
				t.Errorf("%s: Install dropped %q: %s", a, keep, got)
			}
		}
		if again, _ := tt.in.Install(got, cmd); string(again) != string(got) {
			t.Errorf("%s: a second Install changed the file:\n%s\n%s", a, got, again)
		}
		back, err := tt.in.Uninstall(got)
		if err != nil || !sameJSON(t, back, []byte(tt.old)) {
			t.Errorf("%s: Uninstall = %s, %v; want %s", a, back, err, tt.old)
		}
	}
	for _, tt := range []struct {
		in   Installer
		want string
	}{{CodexInstaller{}, "/home/u/.codex/hooks.json"}, {GeminiInstaller{}, "/home/u/.gemini/settings.json"}} {
		if p, err := tt.in.Path(ScopeUser, "/home/u", "/p"); err != nil || p != tt.want {
			t.Errorf("%s: Path(user) = %q, %v; want %q", tt.in.Agent(), p, err, tt.want)
		}
	}
}
