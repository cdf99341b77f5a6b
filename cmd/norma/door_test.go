package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// The door tests drive the built norma binary the way a user does: a
// process, its arguments, its output and its exit code.

var built struct {
	once sync.Once
	path string
	err  error
}

// normaBin builds the norma binary once per test process.
func normaBin(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		dir, err := os.MkdirTemp("", "norma-door-")
		if err != nil {
			built.err = err
			return
		}
		// As installed (scripts/build): one static, stripped binary.
		built.path = filepath.Join(dir, "norma")
		build := exec.Command("scripts/build", dir)
		build.Dir = "../.."
		out, err := build.CombinedOutput()
		if err != nil {
			built.err = fmt.Errorf("scripts/build: %v\n%s", err, out)
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.path
}

// door runs the built binary with args and returns its exit code, stdout
// and stderr. Stdin is empty (not a terminal).
func door(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	return doorCmd(t, exec.Command(normaBin(t), args...))
}

// doorCmd runs cmd (the built binary, with its directory, environment,
// credentials or stdin set by the caller; stdin is empty otherwise) as
// door does.
func doorCmd(t *testing.T, cmd *exec.Cmd) (int, string, string) {
	t.Helper()
	args := cmd.Args[1:]
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if cmd.Stdin == nil {
		cmd.Stdin = strings.NewReader("")
	}
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("norma %v: %v", args, err)
	}
	if strings.Contains(out.String()+errb.String(), runCanary) {
		t.Errorf("norma %v: the canary leaked:\n%s%s", args, out.String(), errb.String())
	}
	return code, out.String(), errb.String()
}

// doorEnv is door with extra environment variables.
func doorEnv(t *testing.T, env []string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(normaBin(t), args...)
	cmd.Env = append(os.Environ(), env...)
	return doorCmd(t, cmd)
}

// auditEvents are the events of home's audit log, by `norma audit query
// --json` with args (a --type, --run, ... filter).
func auditEvents(t *testing.T, home string, args ...string) []map[string]any {
	t.Helper()
	code, out, errs := door(t, append([]string{"--home", home, "audit", "query", "--json", "--limit", "100000"}, args...)...)
	if code != 0 {
		t.Fatalf("audit query: exit %d\n%s", code, errs)
	}
	var recs []struct{ Event map[string]any }
	if err := json.Unmarshal([]byte(out), &recs); err != nil {
		t.Fatalf("audit query: %v\n%s", err, out)
	}
	evs := make([]map[string]any, 0, len(recs))
	for _, r := range recs {
		evs = append(evs, r.Event)
	}
	return evs
}

// jsonLines parses one JSON object per line.
func jsonLines(t *testing.T, s string) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(s))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("not a JSON line: %q", sc.Text())
		}
		out = append(out, m)
	}
	return out
}

// webServer serves /page and /hop (a redirect to /secret) on loopback and
// records every path it was asked for.
type webServer struct {
	origin string
	mu     sync.Mutex
	paths  []string
}

func newWebServer(t *testing.T) *webServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &webServer{origin: "http://" + ln.Addr().String()}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.paths = append(s.paths, r.URL.Path)
		s.mu.Unlock()
		switch r.URL.Path {
		case "/page":
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, "<html><body><h1>Fetched through the guard</h1></body></html>")
		case "/hop":
			http.Redirect(w, r, "/secret", http.StatusFound)
		default:
			fmt.Fprint(w, "you should not see this")
		}
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return s
}

func (s *webServer) asked(path string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.paths {
		if p == path {
			return true
		}
	}
	return false
}

// writeWorkspacePolicy lets WebFetch GET /page and /hop of origin, a
// loopback address admitted by allow_private.
func writeWorkspacePolicy(t *testing.T, ws, origin string) {
	t.Helper()
	os.MkdirAll(filepath.Join(ws, ".norma"), 0o755)
	pol := fmt.Sprintf(`schema_version: 2
kind: workspace
permissions:
  network:
    requests:
      - {origin: %q, methods: [GET], paths: ["/page", "/hop"]}
    allow_private: ["127.0.0.1/32"]
`, origin)
	if err := os.WriteFile(filepath.Join(ws, ".norma", "policy.yaml"), []byte(pol), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestDoorExplainAgreesWithRun runs the built binary on a table of calls:
// `policy explain --json` and `run --json --mode dontAsk` in the same
// workspace must agree on the decision and the reason of every call, for
// the built-in tools, the shell, the web and unknown tools.
func TestDoorExplainAgreesWithRun(t *testing.T) {
	e := newRunEnv(t)
	web := newWebServer(t)
	writeWorkspacePolicy(t, e.ws, web.origin)
	trustWorkspace(t, nil, e.home, e.ws)
	os.Symlink("../.env", filepath.Join(e.ws, "docs", "notes.md"))
	calls := []struct{ tool, input string }{
		{"Read", `{"path":"docs/intro.md"}`},
		{"Read", `{"path":".env"}`},
		{"Read", `{"path":"docs/notes.md"}`},
		{"Read", `{"file_path":"docs/intro.md"}`},
		{"Write", `{"path":"out.md","content":"x"}`},
		{"Write", `{"path":"../x","content":"y"}`},
		{"Bash", `{"command":"git status"}`},
		{"Bash", `{"command":"cat docs/intro.md > .env"}`},
		{"Bash", `{"command":"eval $X"}`},
		{"WebFetch", `{"url":"` + web.origin + `/page"}`},
		{"WebFetch", `{"url":"` + web.origin + `/other"}`},
		{"WebFetch", `{"url":"http://169.254.169.254/latest/meta-data"}`},
		{"NoSuchTool", `{}`},
		{"mcp__com.example.none__x", `{}`},
	}
	var script strings.Builder
	script.WriteString("turns:\n  - tool_calls:\n")
	for i, c := range calls {
		fmt.Fprintf(&script, "      - {id: c%d, name: %s, input: %s}\n", i, c.tool, c.input)
	}
	script.WriteString("  - text: done\n")
	code, out, errs := door(t, "--home", e.home, "run", "--workspace", e.ws, "--provider", "scripted",
		"--script", e.script(t, script.String()), "--mode", "dontAsk", "--json", "go")
	if code != 0 {
		t.Fatalf("run: exit %d\n%s%s", code, out, errs)
	}
	got := toolCalls(jsonLines(t, out))
	for i, c := range calls {
		ran := got[fmt.Sprintf("c%d", i)]
		if ran == nil {
			t.Errorf("%s %s: no tool_call event", c.tool, c.input)
			continue
		}
		code, out, errs := door(t, "--home", e.home, "policy", "explain", "--workspace", e.ws, "--mode", "dontAsk",
			"--tool", c.tool, "--input", c.input, "--json")
		var ex map[string]any
		if code != 0 || json.Unmarshal([]byte(out), &ex) != nil {
			t.Errorf("explain %s %s: exit %d %s%s", c.tool, c.input, code, out, errs)
			continue
		}
		if ex["decision"] != ran["decision"] || ex["reason"] != ran["reason"] {
			t.Errorf("%s %s: explain %v %v, run %v %v", c.tool, c.input, ex["decision"], ex["reason"], ran["decision"], ran["reason"])
		}
	}
	if !web.asked("/page") || web.asked("/other") {
		t.Errorf("the server saw %v: want /page and never /other", web.paths)
	}
}

// TestDoorExplainDefaultMode: in the default mode a shell command is not
// allowed without approval unless every effect of it is a read the policy
// allows (issue 31: git status, as in Claude Code); explain says so, as
// run does.
func TestDoorExplainDefaultMode(t *testing.T) {
	e := newRunEnv(t)
	for _, tc := range []struct{ tool, input, decision, reason string }{
		{"Bash", `{"command":"git status"}`, "allow", "ALLOWED"},
		{"Bash", `{"command":"git commit -m x"}`, "approval_required", "APPROVAL_REQUIRED"},
		{"Bash", `{"command":"eval $X"}`, "approval_required", "COMMAND_UNPARSEABLE"},
		{"Read", `{"path":"docs/intro.md"}`, "allow", "ALLOWED"},
		{"Write", `{"path":"out.md","content":"x"}`, "approval_required", "APPROVAL_REQUIRED"},
	} {
		// --workspace . is what run accepts, and so does explain.
		cmd := exec.Command(normaBin(t), "--home", e.home, "policy", "explain", "--workspace", ".", "--tool", tc.tool, "--input", tc.input, "--json")
		cmd.Dir = e.ws
		out, err := cmd.Output()
		var ex map[string]any
		if err != nil || json.Unmarshal(out, &ex) != nil {
			t.Errorf("explain %s %s: %v %s", tc.tool, tc.input, err, out)
			continue
		}
		if ex["decision"] != tc.decision || ex["reason"] != tc.reason {
			t.Errorf("explain %s %s = %v %v, want %s %s", tc.tool, tc.input, ex["decision"], ex["reason"], tc.decision, tc.reason)
		}
	}
}

// TestDoorWebFetch: WebFetch from `norma run` reaches a destination the
// workspace policy's network section allows, and refuses every other one
// with its reason code — a path not listed, a redirect to one, the cloud
// metadata address — without a byte reaching them.
func TestDoorWebFetch(t *testing.T) {
	e := newRunEnv(t)
	web := newWebServer(t)
	writeWorkspacePolicy(t, e.ws, web.origin)
	trustWorkspace(t, nil, e.home, e.ws)
	script := e.script(t, fmt.Sprintf(`turns:
  - tool_calls:
      - {id: ok, name: WebFetch, input: {url: "%[1]s/page"}}
      - {id: path, name: WebFetch, input: {url: "%[1]s/secret"}}
      - {id: hop, name: WebFetch, input: {url: "%[1]s/hop"}}
      - {id: meta, name: WebFetch, input: {url: "http://169.254.169.254/latest/meta-data"}}
  - text: done
`, web.origin))
	code, out, errs := door(t, "--home", e.home, "run", "--workspace", e.ws, "--provider", "scripted", "--script", script, "--json", "fetch")
	if code != 0 {
		t.Fatalf("run: exit %d\n%s%s", code, out, errs)
	}
	calls := toolCalls(jsonLines(t, out))
	for id, want := range map[string]string{"ok": "ALLOWED", "path": "NETWORK_PATH_DENIED",
		"hop": "NETWORK_PATH_DENIED", "meta": "NETWORK_DESTINATION_DENIED"} {
		if c := calls[id]; c == nil || c["reason"] != want {
			t.Errorf("call %s: %v, want reason %s", id, c, want)
		}
	}
	if calls["ok"]["is_error"] != false {
		t.Errorf("the allowed fetch failed: %v", calls["ok"])
	}
	if !web.asked("/page") || !web.asked("/hop") || web.asked("/secret") {
		t.Errorf("the server saw %v: want /page and /hop, never /secret", web.paths)
	}
}

// TestDoorExplainWritesNoState: explain applies a narrowing workspace
// policy seen for the first time, as a run would, but records nothing in
// the state directory: deciding without running leaves no trace. The run
// that follows records it.
func TestDoorExplainWritesNoState(t *testing.T) {
	e := newRunEnv(t)
	if err := os.MkdirAll(filepath.Join(e.ws, ".norma"), 0o755); err != nil {
		t.Fatal(err)
	}
	narrow := "schema_version: 2\nkind: workspace\npermissions:\n  filesystem:\n    deny: [\"workspace://docs/**\"]\n"
	if err := os.WriteFile(filepath.Join(e.ws, ".norma", "policy.yaml"), []byte(narrow), 0o644); err != nil {
		t.Fatal(err)
	}
	trust := filepath.Join(e.home, "policy-trust.json")
	code, out, errs := door(t, "--home", e.home, "policy", "explain", "--workspace", e.ws, "--tool", "Read", "--input", `{"path":"docs/intro.md"}`, "--json")
	var ex map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &ex) != nil || ex["decision"] != "deny" || ex["reason"] != "FILESYSTEM_READ_DENIED" {
		t.Fatalf("explain Read docs/intro.md: exit %d %s%s; want deny FILESYSTEM_READ_DENIED", code, out, errs)
	}
	if _, err := os.Stat(trust); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("explain wrote %s (%v); it must write nothing", trust, err)
	}
	code, _, errs = door(t, "--home", e.home, "run", "--workspace", e.ws, "--provider", "scripted", "--script", e.script(t, "turns:\n  - text: done\n"), "--yes", "--json", "go")
	if code != 0 {
		t.Fatalf("run: exit %d\n%s", code, errs)
	}
	if _, err := os.Stat(trust); err != nil {
		t.Errorf("the run did not record the narrowing policy it applied: %v", err)
	}
}
