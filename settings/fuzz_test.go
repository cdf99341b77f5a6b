package settings

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/norma-run/norma/manifest"
	"github.com/norma-run/norma/policy"
)

// fuzzSeeds are the shapes the table tests cover, small enough for the
// fuzzer to mutate well. The files of testdata/valid and testdata/invalid
// are added too.
var fuzzSeeds = []string{
	// Nothing at all, and comments only.
	"",
	"# nothing\n",
	// One rule of each list.
	"permissions:\n  allow: [Read]\n  ask: [\"Bash(git push:*)\"]\n  deny: [\"Read(./.env)\"]\n",
	// Rules that do not parse: unclosed, empty, a wildcard name, the home directory.
	"permissions:\n  allow: [\"Bash(ls\", \"Read()\", \"Web*\", \"Read(~/.ssh/**)\"]\n",
	// A mode, good and bad.
	"permissions:\n  defaultMode: plan\n",
	"permissions:\n  defaultMode: bypassPermissions\n",
	// A hook with the workspace variable, quoted, and a relative program.
	"hooks:\n  PreToolUse:\n    - matcher: Bash\n      hooks:\n        - {type: command, command: '\"$CLAUDE_PROJECT_DIR\"/h.sh a', timeout: 5}\n        - {type: command, command: ./h.sh}\n",
	// Hook commands that are not one program: a pipe, $HOME, $(...), a bare name.
	"hooks:\n  Stop:\n    - hooks:\n        - {type: command, command: \"/bin/a | /bin/b\"}\n        - {type: command, command: \"/bin/a $HOME\"}\n        - {type: command, command: \"/bin/a $(/bin/b)\"}\n        - {type: command, command: a}\n",
	// Timeouts at and beyond the bounds.
	"hooks:\n  Stop:\n    - hooks:\n        - {type: command, command: /bin/true, timeout: 0}\n        - {type: command, command: /bin/true, timeout: 600}\n        - {type: command, command: /bin/true, timeout: 601}\n",
	// A network section, checked by the layer parser.
	"network:\n  requests:\n    - {origin: \"https://api.example.com\", methods: [GET], paths: [\"/repos/{owner}\"]}\n  allow_private: [10.1.2.3/8, 127.0.0.1]\n",
	// A bad origin and a bad path template.
	"network:\n  requests:\n    - {origin: \"https://u@x.example/p\", methods: [GET], paths: [\"/a/{b}c\"]}\n",
	// Environment names, good and bad.
	"env:\n  A_B: x\n  1A: y\n",
	// Managed-only keys.
	"allowManagedHooksOnly: true\n",
	// Misspelt keys at every level.
	"permisions: {}\nhooks: {PreToolUs: []}\n",
	// JSON, as Claude Code writes it.
	"{\"permissions\": {\"allow\": [\"mcp__github__*\"]}, \"env\": {\"X\": \"1\"}}",
	// Duplicate keys, merge keys, aliases, tags.
	"env:\n  A: x\n  A: y\n",
	"a: &a {allow: [Read]}\npermissions: *a\n",
	"permissions: !!map {}\n",
}

// FuzzParse feeds arbitrary bytes to Parse. Properties: no panic; an
// error is manifest.Errors; a file that parses yields rules that
// policy.CheckRule accepts (and the gate compiles), hooks of known events
// whose Argv[0] is absolute and whose words are literal, sources inside
// the file; and parsing is deterministic (the same input gives the same
// file, or the same problems).
func FuzzParse(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	for _, dir := range []string{"testdata/valid", "testdata/invalid"} {
		files, _ := filepath.Glob(filepath.Join(dir, "*.*"))
		for _, file := range files {
			if strings.HasSuffix(file, ".golden") || strings.HasSuffix(file, ".err") {
				continue
			}
			b, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Parse("fuzz.yaml", data, ScopeWorkspace, testWorkspace)
		again, err2 := Parse("fuzz.yaml", data, ScopeWorkspace, testWorkspace)
		if err != nil {
			var probs manifest.Errors
			if !errors.As(err, &probs) {
				t.Fatalf("Parse error of type %T: %v", err, err)
			}
			if err2 == nil || err2.Error() != err.Error() {
				t.Fatalf("Parse is not deterministic:\n%v\nthen\n%v", err, err2)
			}
			return
		}
		if err2 != nil || !reflect.DeepEqual(file, again) {
			t.Fatalf("Parse is not deterministic: %+v then %+v, %v", file, again, err2)
		}
		lines := strings.Count(string(data), "\n") + 1
		for _, r := range file.Rules {
			if err := policy.CheckRule(r.Text); err != nil {
				t.Fatalf("rule %q was accepted but policy.CheckRule says %v", r.Text, err)
			}
			if r.List != "allow" && r.List != "ask" && r.List != "deny" {
				t.Fatalf("rule %q in list %q", r.Text, r.List)
			}
			if r.Source.Line < 1 || r.Source.Line > lines || r.Source.Scope != ScopeWorkspace {
				t.Fatalf("rule %q has source %v outside the file", r.Text, r.Source)
			}
		}
		for _, h := range file.Hooks {
			if len(h.Argv) == 0 || !filepath.IsAbs(h.Argv[0]) {
				t.Fatalf("hook %q has argv %q, want an absolute program", h.Command, h.Argv)
			}
			for _, w := range h.Argv {
				if strings.ContainsRune(w, 0) || strings.Contains(w, wsMark) {
					t.Fatalf("hook %q has a word that is not literal: %q", h.Command, h.Argv)
				}
			}
			if !h.Event.Valid() || h.Timeout < 0 || h.Timeout > maxHookTimeout*time.Second {
				t.Fatalf("hook %+v", h)
			}
			if h.Source.Line < 1 || h.Source.Line > lines {
				t.Fatalf("hook %q has source %v outside the file", h.Command, h.Source)
			}
			if h.Trusted() {
				t.Fatalf("a workspace hook is trusted: %+v", h)
			}
		}
		s := Merge([]*File{file})
		if _, err := policy.CompileRules(s.PolicyRules()); err != nil {
			t.Fatalf("merged rules do not compile: %v", err)
		}
	})
}
