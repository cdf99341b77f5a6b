package agenthook

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/norma-run/norma/capability"
)

// TestInstalledIn: what a settings file holds of Norma's hook, for each
// agent: nothing in an empty file, every event after Install, the events
// left after one is removed by hand, and an older binary's command beside
// the current one.
func TestInstalledIn(t *testing.T) {
	for _, a := range []Agent{ClaudeCode, Codex, Gemini} {
		in, _ := InstallerFor(a)
		cmd := "/usr/bin/norma hook " + string(a)
		got, err := InstalledIn(a, nil)
		if err != nil || len(got.Events) != 0 || got.Complete() {
			t.Errorf("%s: InstalledIn(empty) = %+v, %v; want nothing", a, got, err)
		}
		b, err := in.Install([]byte(`{"hooks":{"Stop":[{"hooks":[{"type":"command","command":"notify"}]}]}}`), cmd)
		if err != nil {
			t.Fatal(err)
		}
		got, err = InstalledIn(a, b)
		f, _ := hooksFileOf(a)
		if err != nil || !got.Complete() || len(got.Events) != len(f.events) || !slices.Equal(got.Commands, []string{cmd}) {
			t.Errorf("%s: InstalledIn(installed) = %+v, %v; want every event with %q", a, got, err, cmd)
		}
		var top map[string]map[string]json.RawMessage
		json.Unmarshal(b, &top)
		first := f.events[0].name
		delete(top["hooks"], first)
		top["hooks"][f.events[1].name] = json.RawMessage(`[{"hooks":[{"type":"command","command":"/old/norma hook ` + string(a) + `"}]}]`)
		b, _ = json.Marshal(top)
		got, err = InstalledIn(a, b)
		if err != nil || got.Complete() || !slices.Equal(got.Missing, []string{first}) || len(got.Commands) != 2 {
			t.Errorf("%s: InstalledIn(edited) = %+v, %v; want %s missing and two commands", a, got, err, first)
		}
	}
	if _, err := InstalledIn(Codex, []byte("[]")); err == nil {
		t.Error("InstalledIn(a JSON list) = nil error, want one")
	}
}

// TestCodexInstallerHome: the user's hooks file lives in CODEX_HOME when
// it is set, as Codex reads it there; a relative CODEX_HOME is refused.
func TestCodexInstallerHome(t *testing.T) {
	for _, tt := range []struct {
		home, want string
		scope      Scope
	}{
		{"", "/home/u/.codex/hooks.json", ScopeUser},
		{"/srv/codex", "/srv/codex/hooks.json", ScopeUser},
		{"/srv/codex", "/p/.codex/hooks.json", ScopeProject},
		{"codex", "", ScopeUser},
	} {
		got, err := CodexInstaller{Home: tt.home}.Path(tt.scope, "/home/u", "/p")
		if got != tt.want || (err != nil) != (tt.want == "") {
			t.Errorf("CodexInstaller{Home: %q}.Path(%s) = %q, %v; want %q", tt.home, tt.scope, got, err, tt.want)
		}
	}
}

// TestCodexTrustPreview: Norma's hooks are picked from Codex's list by
// file and command, rebased from a scratch copy to the real file (keys
// and source path; hashes kept), and rendered as the config.toml entries
// Codex writes; a key Codex names otherwise is refused.
func TestCodexTrustPreview(t *testing.T) {
	hs := []CodexHook{
		{Key: "/tmp/s/hooks.json:pre_tool_use:1:0", Command: "/usr/bin/norma hook codex", SourcePath: "/tmp/s/hooks.json", CurrentHash: "sha256:aa"},
		{Key: "/tmp/s/hooks.json:pre_tool_use:0:0", Command: "lint", SourcePath: "/tmp/s/hooks.json", CurrentHash: "sha256:bb"},
		{Key: "/p/.codex/hooks.json:stop:0:0", Command: "/usr/bin/norma hook codex", SourcePath: "/p/.codex/hooks.json", CurrentHash: "sha256:cc"},
		{Key: "/tmp/s/hooks.json:session_start:0:0", Command: "/usr/bin/norma hook codex", SourcePath: "/tmp/s/hooks.json", CurrentHash: "sha256:dd"},
	}
	mine := NormaCodexHooks(hs, "/tmp/s/hooks.json")
	if len(mine) != 2 || mine[0].CurrentHash != "sha256:aa" || mine[1].CurrentHash != "sha256:dd" {
		t.Fatalf("NormaCodexHooks = %+v, want the two Norma hooks of the file", mine)
	}
	got, err := RebaseCodexHooks(mine, "/tmp/s/hooks.json", "/home/u/.codex/hooks.json")
	if err != nil || got[0].Key != "/home/u/.codex/hooks.json:pre_tool_use:1:0" || got[0].SourcePath != "/home/u/.codex/hooks.json" || got[0].CurrentHash != "sha256:aa" {
		t.Fatalf("RebaseCodexHooks = %+v, %v", got, err)
	}
	want := "[hooks.state.\"/home/u/.codex/hooks.json:pre_tool_use:1:0\"]\ntrusted_hash = \"sha256:aa\"\n\n" +
		"[hooks.state.\"/home/u/.codex/hooks.json:session_start:0:0\"]\ntrusted_hash = \"sha256:dd\"\n"
	if toml := CodexTrustTOML(got); toml != want {
		t.Errorf("CodexTrustTOML =\n%s\nwant\n%s", toml, want)
	}
	if _, err := RebaseCodexHooks(hs[2:3], "/tmp/s/hooks.json", "/x/hooks.json"); err == nil {
		t.Error("RebaseCodexHooks of a key of another file = nil error, want one")
	}
	for _, tt := range []struct {
		h    CodexHook
		runs bool
	}{
		{CodexHook{Enabled: true, TrustStatus: "trusted"}, true},
		{CodexHook{Enabled: true, TrustStatus: "managed"}, true},
		{CodexHook{Enabled: false, TrustStatus: "trusted"}, false},
		{CodexHook{Enabled: true, TrustStatus: "untrusted"}, false},
		{CodexHook{Enabled: true, TrustStatus: "modified"}, false},
	} {
		if got := tt.h.Runs(); got != tt.runs {
			t.Errorf("%+v.Runs() = %v, want %v", tt.h, got, tt.runs)
		}
	}
}

// TestProbe: each agent's probe input parses with its own codec as a
// shell call of cat .env, and ProbeDenied reads the codec's deny as a
// deny and its allow as none.
func TestProbe(t *testing.T) {
	for _, a := range []Agent{ClaudeCode, Codex, Gemini} {
		in, err := ProbeInput(a, "norma-hook-check-1", "/p")
		if err != nil {
			t.Fatal(err)
		}
		c, _ := CodecFor(a)
		e, err := c.Parse(in)
		if err != nil || e.Kind != BeforeTool || e.Call == nil || e.Call.Tool != "Bash" || probeCommandOf(e.Call.Input) != ProbeCommand || e.Session != "norma-hook-check-1" {
			t.Errorf("%s: Parse(ProbeInput) = %+v, %v; want a Bash call of %q", a, e, err, ProbeCommand)
			continue
		}
		deny := Verdict{Decision: capability.Decision{Mode: capability.Deny, Reason: capability.ReasonAgentFileProtected, Layer: capability.LayerBuiltin}, Message: "no"}
		out, _ := c.Render(e, deny)
		if reason, ok := ProbeDenied(a, out); !ok || !strings.Contains(reason, "AGENT_FILE_PROTECTED") {
			t.Errorf("%s: ProbeDenied(%s) = %q, %v; want the deny", a, out, reason, ok)
		}
		allow := Verdict{Decision: capability.Decision{Mode: capability.Allow, Reason: capability.ReasonAllowed}}
		out, _ = c.Render(e, allow)
		if _, ok := ProbeDenied(a, out); ok {
			t.Errorf("%s: ProbeDenied(%s) = true for an allow", a, out)
		}
	}
}

// TestCodexAppServer drives the client against a stand-in of `codex
// app-server` (this test binary, as helperAppServer): the session is
// initialized, notifications and a request of the server's are skipped
// on the way to each answer, hooks/list and config/batchWrite send what
// Codex expects, and an error answer is an error.
func TestCodexAppServer(t *testing.T) {
	log := filepath.Join(t.TempDir(), "requests")
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperAppServer$")
	cmd.Env = append(os.Environ(), "NORMA_HELPER_APP_SERVER="+log)
	s, err := StartCodexAppServer(t.Context(), cmd)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.CodexHome() != "/home/u/.codex" {
		t.Errorf("CodexHome() = %q", s.CodexHome())
	}
	hs, err := s.Hooks(t.Context(), "/p")
	if err != nil || len(hs) != 1 || hs[0].Key != "/home/u/.codex/hooks.json:pre_tool_use:0:0" || hs[0].Runs() || hs[0].CurrentHash != "sha256:aa" {
		t.Fatalf("Hooks = %+v, %v", hs, err)
	}
	file, err := s.Trust(t.Context(), hs)
	if err != nil || file != "/home/u/.codex/config.toml" {
		t.Fatalf("Trust = %q, %v", file, err)
	}
	for _, tt := range []struct {
		dir        string
		found      bool
		disabledBy string
	}{
		{"/p/.codex", true, "add /p as a trusted project"},
		{"/q/.codex", true, ""},
		{"/r/.codex", false, ""},
	} {
		found, why, err := s.ProjectLayer(t.Context(), "/p", tt.dir)
		if err != nil || found != tt.found || why != tt.disabledBy {
			t.Errorf("ProjectLayer(%s) = %v, %q, %v; want %v, %q", tt.dir, found, why, err, tt.found, tt.disabledBy)
		}
	}
	if _, err := s.Hooks(t.Context(), "/fail"); err == nil || !strings.Contains(err.Error(), "no such cwd") {
		t.Errorf("Hooks(/fail) = %v, want the server's error", err)
	}
	s.Close()
	b, _ := os.ReadFile(log)
	for _, want := range []string{`"method":"initialize"`, `"method":"initialized"`, `"cwds":["/p"]`,
		`{"edits":[{"keyPath":"hooks.state","mergeStrategy":"upsert","value":{"/home/u/.codex/hooks.json:pre_tool_use:0:0":{"trusted_hash":"sha256:aa"}}}]}`,
		`"error":{"code":-32601`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the app-server got no %s:\n%s", want, b)
		}
	}
}

// TestHelperAppServer is the stand-in of `codex app-server` that
// TestCodexAppServer starts; it logs every line it reads.
func TestHelperAppServer(t *testing.T) {
	log := os.Getenv("NORMA_HELPER_APP_SERVER")
	if log == "" {
		t.Skip("a helper process of TestCodexAppServer")
	}
	f, _ := os.Create(log)
	defer f.Close()
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		fmt.Fprintln(f, sc.Text())
		var m struct {
			ID     *int            `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		json.Unmarshal(sc.Bytes(), &m)
		if m.ID == nil || m.Method == "" {
			continue
		}
		answer := func(result string) {
			fmt.Printf(`{"method":"configWarning","params":{"summary":"noise"}}`+"\n"+`{"id":99,"method":"item/tool/requestUserInput","params":{}}`+"\n"+`{"id":%d,"result":%s}`+"\n", *m.ID, result)
		}
		switch {
		case m.Method == "initialize":
			answer(`{"userAgent":"x","codexHome":"/home/u/.codex"}`)
		case m.Method == "hooks/list" && strings.Contains(string(m.Params), "/fail"):
			fmt.Printf(`{"id":%d,"error":{"code":-32600,"message":"no such cwd"}}`+"\n", *m.ID)
		case m.Method == "hooks/list":
			answer(`{"data":[{"cwd":"/p","hooks":[{"key":"/home/u/.codex/hooks.json:pre_tool_use:0:0","eventName":"preToolUse","command":"/usr/bin/norma hook codex","sourcePath":"/home/u/.codex/hooks.json","enabled":true,"isManaged":false,"currentHash":"sha256:aa","trustStatus":"untrusted"}],"warnings":[],"errors":[]}]}`)
		case m.Method == "config/read":
			answer(`{"config":{},"layers":[{"name":{"type":"project","dotCodexFolder":"/p/.codex"},"version":"v","config":{},"disabledReason":"add /p as a trusted project"},` +
				`{"name":{"type":"project","dotCodexFolder":"/q/.codex"},"version":"v","config":{},"disabledReason":null},{"name":{"type":"user","file":"/home/u/.codex/config.toml"},"version":"v","config":{}}]}`)
		case m.Method == "config/batchWrite":
			answer(`{"status":"ok","version":"sha256:v","filePath":"/home/u/.codex/config.toml"}`)
		}
	}
	os.Exit(0)
}

// TestProbeDeniedEverywhere: the engine denies each agent's probe in a
// workspace with nothing in it (no .env, no .claude), in every mode, so
// that `norma hook status --check` reports a working hook in any project.
func TestProbeDeniedEverywhere(t *testing.T) {
	w := newHookWorld(t)
	empty, _ := filepath.EvalSymlinks(t.TempDir())
	for _, a := range []Agent{ClaudeCode, Codex, Gemini} {
		in, err := ProbeInput(a, "norma-hook-check-2", empty)
		if err != nil {
			t.Fatal(err)
		}
		c, _ := CodecFor(a)
		e, err := c.Parse(in)
		if err != nil {
			t.Fatal(err)
		}
		for _, mode := range []string{"default", "acceptEdits", "bypassPermissions", "plan"} {
			e.PermissionMode = mode
			v := w.eng.Decide(t.Context(), e)
			if v.Decision.Mode != capability.Deny {
				t.Errorf("%s in %s: %s %s, want deny", a, mode, v.Decision.Mode, v.Decision.Reason)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(empty, ".claude")); err == nil {
		t.Errorf("the probe made .claude")
	}
}

func probeCommandOf(in json.RawMessage) string {
	var b struct{ Command string }
	json.Unmarshal(in, &b)
	return b.Command
}
