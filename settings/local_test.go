package settings_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/norma-run/norma/settings"
)

// localRules parses the workspace's local file and returns its allow rules.
func localRules(t *testing.T, ws string) []string {
	t.Helper()
	f, err := settings.ReadFile(filepath.Join(ws, settings.LocalFile), settings.ScopeLocal, ws)
	if err != nil {
		t.Fatalf("ReadFile: %v", err)
	}
	var out []string
	for _, r := range f.Rules {
		if r.List == "allow" {
			out = append(out, r.Text)
		}
	}
	return out
}

func writeLocal(t *testing.T, ws, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(ws, ".norma"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, settings.LocalFile), []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func readLocal(t *testing.T, ws string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(ws, settings.LocalFile))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestAddLocalAllow(t *testing.T) {
	tests := []struct {
		name    string
		before  string // "" means no file
		add     []string
		want    []string
		keep    []string // substrings of before that must survive (comments, other keys)
		wantErr bool
	}{
		{name: "no file", add: []string{"Write(out/a.md)"}, want: []string{"Write(out/a.md)"}},
		{name: "empty file", before: "\n", add: []string{"Bash(git status)"}, want: []string{"Bash(git status)"}},
		{name: "comments only", before: "# mine\n", add: []string{"Bash(git status)"}, want: []string{"Bash(git status)"}, keep: []string{"# mine"}},
		{
			name:   "block list keeps comments",
			before: "# top comment\npermissions:\n  # the allow list\n  allow:\n    - Read(docs/**)   # docs\n  deny: [\"Bash(rm:*)\"]\nenv:\n  A: b\n",
			add:    []string{"Write(out/a.md)"}, want: []string{"Read(docs/**)", "Write(out/a.md)"},
			keep: []string{"# top comment", "# the allow list", "# docs", "A: b"},
		},
		{
			name:   "flow list and a comma in the rule",
			before: "permissions:\n  allow: [\"Read(a)\"]\n  defaultMode: acceptEdits\n",
			add:    []string{"WebFetch(domain:example.com)", "Write(out/a, b.md)"},
			want:   []string{"Read(a)", "WebFetch(domain:example.com)", "Write(out/a, b.md)"},
			keep:   []string{"defaultMode: acceptEdits"},
		},
		{
			name:   "permissions without allow",
			before: "# c\npermissions:\n    defaultMode: plan # why\n    deny:\n        - Bash(rm:*)\n",
			add:    []string{"Bash(go test ./...)"}, want: []string{"Bash(go test ./...)"},
			keep: []string{"# c", "# why", "defaultMode: plan"},
		},
		{
			name:   "no permissions",
			before: "env:\n  GOFLAGS: -mod=readonly # keep\n",
			add:    []string{"mcp__github__create_issue"}, want: []string{"mcp__github__create_issue"},
			keep: []string{"# keep"},
		},
		{
			name:   "JSON file",
			before: `{"permissions": {"allow": ["Read(a)"], "deny": []}, "env": {"A": "b"}}`,
			add:    []string{"Write(x y.md)"}, want: []string{"Read(a)", "Write(x y.md)"},
		},
		{
			name:   "JSON file without allow",
			before: `{"env": {"A": "b"}}`,
			add:    []string{"Read(a)"}, want: []string{"Read(a)"},
		},
		{
			name:   "already there",
			before: "permissions:\n  allow:\n    - Read(a)\n",
			add:    []string{"Read(a)"}, want: []string{"Read(a)"},
		},
		{name: "not a rule", before: "permissions:\n  allow: [Read(a)]\n", add: []string{"Read(x"}, want: []string{"Read(a)"}, wantErr: true},
		{name: "invalid file", before: "permissions:\n  alow: [Read(a)]\n", add: []string{"Read(b)"}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := t.TempDir()
			if tt.before != "" {
				writeLocal(t, ws, tt.before)
			}
			err := settings.AddLocalAllow(ws, tt.add...)
			if (err != nil) != tt.wantErr {
				t.Fatalf("AddLocalAllow(%q) = %v, want error %v", tt.add, err, tt.wantErr)
			}
			if tt.wantErr {
				if tt.before != "" && readLocal(t, ws) != tt.before {
					t.Errorf("a refused AddLocalAllow changed the file:\n%s", readLocal(t, ws))
				}
			} else if got := localRules(t, ws); !slices.Equal(got, tt.want) {
				t.Errorf("allow after AddLocalAllow(%q) = %q, want %q\n%s", tt.add, got, tt.want, readLocal(t, ws))
			}
			out := readLocal(t, ws)
			t.Logf("after:\n%s", out)
			for _, k := range tt.keep {
				if !strings.Contains(out, k) {
					t.Errorf("%q was lost:\n%s", k, out)
				}
			}
			noTemp(t, ws)
		})
	}
}

func noTemp(t *testing.T, ws string) {
	t.Helper()
	ents, _ := os.ReadDir(filepath.Join(ws, ".norma"))
	for _, e := range ents {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("temporary file %s left behind", e.Name())
		}
	}
}

func TestAddLocalAllowKeepsOtherListsAndMode(t *testing.T) {
	ws := t.TempDir()
	writeLocal(t, ws, "permissions:\n  allow: [Read(a)]\n  ask: [mcp__gh]\n  deny: [\"Bash(rm:*)\"]\n")
	if err := settings.AddLocalAllow(ws, "Write(b)"); err != nil {
		t.Fatal(err)
	}
	st, err := settings.Load(settings.Options{Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	r := st.PolicyRules()
	if !slices.Equal(r.Allow, []string{"Read(a)", "Write(b)"}) || !slices.Equal(r.Ask, []string{"mcp__gh"}) || !slices.Equal(r.Deny, []string{"Bash(rm:*)"}) {
		t.Errorf("rules = %+v", r)
	}
	fi, err := os.Stat(filepath.Join(ws, settings.LocalFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("mode = %v, %v; want the file's own 0600 kept", fi.Mode(), err)
	}
}

// A symbolic link is refused: renaming over it would replace the link,
// not change what it names, and what it names may be outside the
// workspace.
func TestAddLocalAllowRefusesSymlink(t *testing.T) {
	ws := t.TempDir()
	target := filepath.Join(t.TempDir(), "elsewhere.yaml")
	os.WriteFile(target, []byte("permissions:\n  allow: [Read(a)]\n"), 0o644)
	os.MkdirAll(filepath.Join(ws, ".norma"), 0o755)
	if err := os.Symlink(target, filepath.Join(ws, settings.LocalFile)); err != nil {
		t.Fatal(err)
	}
	if err := settings.AddLocalAllow(ws, "Read(b)"); err == nil {
		t.Fatal("AddLocalAllow through a symbolic link succeeded")
	}
	if b, _ := os.ReadFile(target); strings.Contains(string(b), "Read(b)") {
		t.Error("the link's target was changed")
	}
}

// Concurrent writers of one workspace are serialized: no rule is lost.
func TestAddLocalAllowConcurrent(t *testing.T) {
	ws := t.TempDir()
	var wg sync.WaitGroup
	rules := []string{"Read(a)", "Read(b)", "Read(c)", "Read(d)", "Read(e)", "Read(f)"}
	for _, r := range rules {
		wg.Go(func() {
			if err := settings.AddLocalAllow(ws, r); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	got := localRules(t, ws)
	slices.Sort(got)
	if !slices.Equal(got, rules) {
		t.Errorf("allow = %q, want %q", got, rules)
	}
}

func TestRemoveLocalAllow(t *testing.T) {
	tests := []struct {
		name   string
		before string
		remove string
		want   []string
		keep   []string
		err    error
	}{
		{
			name:   "block list keeps comments",
			before: "# top\npermissions:\n  allow:\n    # first\n    - Read(a)\n    - Write(b) # second\n    - Read(a)\n  deny: [\"Bash(rm:*)\"]\n",
			remove: "Read(a)", want: []string{"Write(b)"}, keep: []string{"# top", "# second", "Bash(rm:*)"},
		},
		{name: "flow list", before: "permissions: {allow: [Read(a), \"Write(b)\"]}\n", remove: "Write(b)", want: []string{"Read(a)"}},
		{name: "last rule", before: "permissions:\n  allow:\n    - Read(a)\n  defaultMode: plan\n", remove: "Read(a)", want: nil, keep: []string{"defaultMode: plan"}},
		{name: "not there", before: "permissions:\n  allow: [Read(a)]\n", remove: "Read(b)", want: []string{"Read(a)"}, err: settings.ErrRuleNotFound},
		{name: "only in deny", before: "permissions:\n  deny: [Read(a)]\n", remove: "Read(a)", err: settings.ErrRuleNotFound},
		{name: "no file", remove: "Read(a)", err: settings.ErrRuleNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := t.TempDir()
			if tt.before != "" {
				writeLocal(t, ws, tt.before)
			}
			err := settings.RemoveLocalAllow(ws, tt.remove)
			if !errors.Is(err, tt.err) || (tt.err == nil && err != nil) {
				t.Fatalf("RemoveLocalAllow(%q) = %v, want %v", tt.remove, err, tt.err)
			}
			if tt.before == "" {
				if _, err := os.Stat(filepath.Join(ws, ".norma")); err == nil {
					t.Error("RemoveLocalAllow created .norma")
				}
				return
			}
			if tt.err != nil && readLocal(t, ws) != tt.before {
				t.Errorf("a failed RemoveLocalAllow changed the file:\n%s", readLocal(t, ws))
			}
			if got := localRules(t, ws); !slices.Equal(got, tt.want) {
				t.Errorf("allow = %q, want %q\n%s", got, tt.want, readLocal(t, ws))
			}
			for _, k := range tt.keep {
				if !strings.Contains(readLocal(t, ws), k) {
					t.Errorf("%q was lost:\n%s", k, readLocal(t, ws))
				}
			}
			noTemp(t, ws)
		})
	}
}
