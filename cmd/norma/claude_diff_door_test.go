package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/norma-run/norma/internal/fakeanthropic"
)

// The differential door against Claude Code (issue 31): the real Claude
// Code (2.1.332, $NORMA_TEST_CLAUDE) is the oracle. For each rule set of
// testdata/claudediff and each permission mode, Claude Code alone decides
// every call of the set under its own permissions (the rules in the
// project's .claude/settings.json, no Norma hook), offline against the
// loopback fake of its API, which scripts one tool_use per turn. Norma
// decides the same calls: `norma settings import claude` of the same
// settings, then `norma hook claude-code` fed each PreToolUse event, in
// the same mode. Norma is never weaker; where it is stricter, the row
// (or the set, for a whole mode) names why, by a key that the section
// "Where Norma is stricter than Claude Code" of docs/claude-rules.md
// explains.
//
// How the oracle's decision is read: a neutral recording hook in Claude's
// user settings (it decides nothing) logs PermissionRequest, which Claude
// Code fires exactly when it would ask the user (in -p mode the ask is then
// refused, with a message of its own), and PostToolUse and
// PostToolUseFailure, which fire when the tool ran. A call with neither
// was denied. The message texts differ too ("Permission to use Bash with
// command … has been denied." for a deny, "Claude requested permissions to
// use Bash, but you haven't granted it yet." or "… needs approval" for an
// ask), but there are dozens of them; the hooks are exact.
//
// Every decider has a world of its own, built alike (newDiffWorld), since
// a call Claude Code allows runs for real. Offline, Claude Code's plan
// mode refuses what its auto-mode classifier would judge online: the
// corpus takes that refusal as the answer, which asks more of Norma than
// the online answer would.

// diffModes are Claude Code's permission modes, in the order a set runs
// them.
var diffModes = []string{"default", "acceptEdits", "plan", "dontAsk", "bypassPermissions"}

// diffRank orders decisions from the weakest.
var diffRank = map[string]int{"allow": 0, "ask": 1, "deny": 2}

// diffSet is one rule set of the corpus.
type diffSet struct {
	name  string // the file's base name
	modes []string
	// rules are Claude Code's permissions, by kind, in file order.
	rules map[string][]string
	// mcp names the memory MCP servers the project's .mcp.json starts.
	mcp []string
	// stricter is a whole mode's reason, for every row: mode → key.
	stricter map[string]string
	calls    []diffCall
}

// diffCall is one row: a tool call, and where Norma is known stricter.
type diffCall struct {
	line  int
	tool  string
	arg   string
	notes map[string]string // mode ("" for any) → stricter key
}

// stricterKey is the key that explains Norma being stricter on c in
// mode, or "".
func (s *diffSet) stricterKey(c diffCall, mode string) string {
	if k := c.notes[mode]; k != "" {
		return k
	}
	if k := c.notes[""]; k != "" {
		return k
	}
	return s.stricter[mode]
}

var diffNoteRE = regexp.MustCompile(`\s+##\s*stricter(?:\(([A-Za-z, ]+)\))?:\s*([a-z0-9-]+)\s*$`)

// parseDiffSet reads one corpus file: comment lines (#), header lines
// (modes:, allow:, ask:, deny:, mcp:, stricter(MODE):), then one call a
// line, "Tool: argument", each optionally ending in "## stricter: KEY"
// or "## stricter(MODE,…): KEY".
func parseDiffSet(path string) (*diffSet, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	s := &diffSet{name: strings.TrimSuffix(filepath.Base(path), ".txt"), modes: diffModes, rules: map[string][]string{}, stricter: map[string]string{}}
	for i, line := range strings.Split(string(b), "\n") {
		n := i + 1
		line = strings.TrimRight(line, " \t\r")
		if strings.TrimSpace(line) == "" || strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		key, val, ok := strings.Cut(line, ":")
		if !ok {
			return nil, fmt.Errorf("%s:%d:1: want \"key: value\" or \"Tool: argument\"", path, n)
		}
		val = strings.TrimSpace(val)
		switch {
		case key == "modes":
			s.modes = strings.Fields(val)
			for _, m := range s.modes {
				if !slices.Contains(diffModes, m) {
					return nil, fmt.Errorf("%s:%d:1: unknown mode %q", path, n, m)
				}
			}
		case key == "allow" || key == "ask" || key == "deny":
			s.rules[key] = append(s.rules[key], val)
		case key == "mcp":
			s.mcp = append(s.mcp, val)
		case strings.HasPrefix(key, "stricter("):
			for _, m := range strings.Split(strings.TrimSuffix(strings.TrimPrefix(key, "stricter("), ")"), ",") {
				s.stricter[strings.TrimSpace(m)] = val
			}
		case key != "" && (key[0] >= 'A' && key[0] <= 'Z' || strings.HasPrefix(key, "mcp__")):
			c := diffCall{line: n, tool: key, notes: map[string]string{}}
			if m := diffNoteRE.FindStringSubmatchIndex(val); m != nil {
				modes, k := "", val[m[4]:m[5]]
				if m[2] >= 0 {
					modes = val[m[2]:m[3]]
				}
				val = val[:m[0]]
				if modes == "" {
					c.notes[""] = k
				}
				for _, md := range strings.Split(modes, ",") {
					if md = strings.TrimSpace(md); md != "" {
						c.notes[md] = k
					}
				}
			}
			c.arg = val
			s.calls = append(s.calls, c)
		default:
			return nil, fmt.Errorf("%s:%d:1: unknown key %q", path, n, key)
		}
	}
	if len(s.calls) == 0 {
		return nil, fmt.Errorf("%s: no calls", path)
	}
	return s, nil
}

// settingsJSON is the set's .claude/settings.json in world w.
func (s *diffSet) settingsJSON(w diffWorld) []byte {
	perms := map[string][]string{}
	for k, rs := range s.rules {
		for _, r := range rs {
			perms[k] = append(perms[k], w.expand(r))
		}
	}
	b, _ := json.MarshalIndent(map[string]any{"permissions": perms}, "", "  ")
	return append(b, '\n')
}

// diffWorld is the place one decider sees: the workspace (a git
// repository), the agent's home and a directory outside both. Every
// decider gets a world of its own, built alike, since a call Claude Code
// runs changes its world.
type diffWorld struct{ ws, home, out string }

func newDiffWorld(t *testing.T) diffWorld {
	t.Helper()
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	w := diffWorld{ws: ws, home: t.TempDir(), out: t.TempDir()}
	for name, body := range map[string]string{
		"README.md": "readme\n", "notes.txt": "notes\n", "my file.txt": "spaces\n", ".env": "TOKEN=diff-env\n",
		"docs/intro.md": "intro\n", "docs/guide.md": "guide\n", "src/main.go": "package main\n", "src/util/x.go": "package util\n",
		"secrets/key.txt": "k\n", "secrets/api.txt": "a\n", "SECRETS/key.txt": "K\n", "config/db.yaml": "db: x\n",
		"a/b/cert.pem": "pem\n", "server.pem": "pem\n", "key.txt": "k\n", "a/key.txt": "k\n",
		"protected/p.txt": "p\n", "scratch/s1.tmp": "1\n", "scratch/s2.tmp": "2\n", "scratch/keep.txt": "k\n",
		"build/out.log": "log\n", "node_modules/m/index.js": "x\n",
	} {
		rtWrite(t, filepath.Join(ws, name), body, 0o644)
	}
	for name, body := range map[string]string{".ssh/id_rsa": "id\n", ".aws/credentials": "aws\n", "notes.txt": "home notes\n"} {
		rtWrite(t, filepath.Join(w.home, name), body, 0o600)
	}
	for name, body := range map[string]string{"outside.txt": "outside\n", "data/x.txt": "x\n"} {
		rtWrite(t, filepath.Join(w.out, name), body, 0o644)
	}
	for link, target := range map[string]string{
		"link-out.md": filepath.Join(w.out, "outside.txt"), "link-secrets": "secrets", "docs/key-link.txt": "../secrets/key.txt", "link-out-dir": w.out,
	} {
		if err := os.Symlink(target, filepath.Join(ws, link)); err != nil {
			t.Fatal(err)
		}
	}
	if b, err := exec.Command("git", "-C", ws, "init", "-q").CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, b)
	}
	return w
}

// expand replaces {WS}, {HOME} and {OUT} by the world's paths.
func (w diffWorld) expand(s string) string {
	return strings.NewReplacer("{WS}", w.ws, "{HOME}", w.home, "{OUT}", w.out).Replace(s)
}

// path is a Read, Write or Edit argument as an absolute path: ~/ is the
// home, a relative path the workspace's.
func (w diffWorld) path(p string) string {
	p = w.expand(p)
	switch {
	case strings.HasPrefix(p, "~/"):
		return filepath.Join(w.home, p[2:])
	case strings.HasPrefix(p, "/"):
		return p
	}
	return w.ws + "/" + p
}

// input is the tool_input of call c in world w.
func (w diffWorld) input(c diffCall) (map[string]any, error) {
	switch c.tool {
	case "Bash":
		return map[string]any{"command": w.expand(c.arg)}, nil
	case "Read":
		return map[string]any{"file_path": w.path(c.arg)}, nil
	case "Write":
		return map[string]any{"file_path": w.path(c.arg), "content": "written\n"}, nil
	case "Edit":
		// An Edit that creates the file: one of an existing file needs
		// a Read first.
		return map[string]any{"file_path": w.path(c.arg), "old_string": "", "new_string": "edited\n"}, nil
	case "WebFetch":
		return map[string]any{"url": c.arg, "prompt": "Summarize the page"}, nil
	}
	var in map[string]any
	if err := json.Unmarshal([]byte(w.expand(c.arg)), &in); err != nil {
		return nil, fmt.Errorf("line %d: %s's argument is not a JSON object: %v", c.line, c.tool, err)
	}
	return in, nil
}

// diffID is the tool_use id of row i.
func diffID(i int) string { return fmt.Sprintf("toolu_diff_%03d", i) }

// memoryServer is the command line of @modelcontextprotocol/server-memory
// ($NORMA_TEST_MCP_SERVERS), the MCP server of the sets with MCP rules.
func memoryServer(t *testing.T) string {
	t.Helper()
	p := os.Getenv("NORMA_TEST_MCP_SERVERS")
	if p == "" {
		if os.Getenv("NORMA_REQUIRE_SANDBOX") == "1" {
			t.Fatal("NORMA_TEST_MCP_SERVERS is required (the prefix .ci/run installs the MCP servers in)")
		}
		t.Skip("NORMA_TEST_MCP_SERVERS is not set")
	}
	js := filepath.Join(p, "node_modules", "@modelcontextprotocol", "server-memory", "dist", "index.js")
	if _, err := os.Stat(js); err != nil {
		t.Fatal(err)
	}
	return js
}

// oracle runs Claude Code over every call of s in mode, in a world of
// its own, and returns its decision on each row.
func oracle(t *testing.T, s *diffSet, mode string) []string {
	t.Helper()
	w := newDiffWorld(t)
	rtWrite(t, filepath.Join(w.ws, ".claude", "settings.json"), string(s.settingsJSON(w)), 0o644)
	// The workspace is trusted, or Claude Code ignores its allow rules.
	trust, _ := json.Marshal(map[string]any{"projects": map[string]any{w.ws: map[string]any{"hasTrustDialogAccepted": true}}})
	rtWrite(t, filepath.Join(w.home, ".claude.json"), string(trust)+"\n", 0o644)
	if len(s.mcp) > 0 {
		js := memoryServer(t)
		servers := map[string]any{}
		for _, name := range s.mcp {
			servers[name] = map[string]any{"command": "node", "args": []string{js}, "env": map[string]string{"MEMORY_FILE_PATH": filepath.Join(t.TempDir(), name+".jsonl")}}
		}
		b, _ := json.Marshal(map[string]any{"mcpServers": servers})
		rtWrite(t, filepath.Join(w.ws, ".mcp.json"), string(b)+"\n", 0o644)
	}
	got := make([]string, len(s.calls))
	for from := 0; from < len(s.calls); {
		next := oracleFrom(t, s, mode, w, from, got)
		if next == from {
			t.Fatalf("%s.txt:%d (%s): Claude Code ended its session before deciding the row", s.name, s.calls[from].line, mode)
		}
		from = next
	}
	return got
}

// oracleFrom is one Claude Code session over the rows of s from row
// from on: it fills got and returns the first row it did not decide.
// Offline, plan mode refuses what its auto-mode classifier would judge,
// and after many refusals Claude Code ends the session ("Claude stopped
// after a run of responses whose actions were refused"); the caller
// starts another at the next row.
func oracleFrom(t *testing.T, s *diffSet, mode string, w diffWorld, from int, got []string) int {
	t.Helper()
	logf := filepath.Join(t.TempDir(), "hooks.jsonl")
	hooks := map[string]any{}
	for _, ev := range []string{"PermissionRequest", "PostToolUse", "PostToolUseFailure"} {
		hooks[ev] = []any{map[string]any{"matcher": "*", "hooks": []any{map[string]any{"type": "command",
			"command": "(printf '%s ' " + ev + "; tr -d '\\n'; echo) >> '" + logf + "'"}}}}
	}
	user, _ := json.Marshal(map[string]any{"skipWebFetchPreflight": true, "enableAllProjectMcpServers": true, "hooks": hooks})
	rtWrite(t, filepath.Join(w.home, ".claude", "settings.json"), string(user)+"\n", 0o644)

	turns := make([]fakeanthropic.Turn, 0, len(s.calls)-from+1)
	inputs := make([]map[string]any, len(s.calls))
	for i := from; i < len(s.calls); i++ {
		c := s.calls[i]
		in, err := w.input(c)
		if err != nil {
			t.Fatalf("%s.txt:%v", s.name, err)
		}
		inputs[i] = in
		turns = append(turns, fakeanthropic.Turn{{ID: diffID(i), Tool: c.tool, Input: in}})
	}
	turns = append(turns, fakeanthropic.Turn{{Text: "Done."}})
	api, err := fakeanthropic.New(turns...)
	if err != nil {
		t.Fatal(err)
	}
	defer api.Close()

	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, claudeBin(t), "-p", "Do the task.", "--output-format", "stream-json", "--verbose",
		"--max-turns", fmt.Sprint(len(turns)+2), "--permission-mode", mode)
	cmd.Dir = w.ws
	// IS_SANDBOX lets bypassPermissions run as root (CI's user).
	cmd.Env = append(os.Environ(), "HOME="+w.home, "ANTHROPIC_BASE_URL="+api.URL, "ANTHROPIC_API_KEY=anything",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1", "IS_SANDBOX=1")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr, cmd.Stdin = &out, &errb, strings.NewReader("")
	if err := cmd.Run(); err != nil && !strings.Contains(out.String(), "Claude stopped after") {
		t.Fatalf("claude (%s, %s): %v\nstdout (the end):\n%s\nstderr:\n%s", s.name, mode, err, tail(out.String(), 4000), errb.String())
	}
	results := api.ToolResults()

	type logged struct {
		ev    string
		Tool  string         `json:"tool_name"`
		Input map[string]any `json:"tool_input"`
		ID    string         `json:"tool_use_id"`
	}
	var evs []logged
	if b, err := os.ReadFile(logf); err == nil {
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(nil, 4<<20)
		for sc.Scan() {
			ev, js, _ := strings.Cut(sc.Text(), " ")
			var l logged
			if err := json.Unmarshal([]byte(js), &l); err != nil {
				t.Fatalf("hook log line %q: %v", sc.Text(), err)
			}
			l.ev = ev
			evs = append(evs, l)
		}
	}
	ran := map[string]bool{}
	var asks []logged
	for _, l := range evs {
		if l.ev == "PermissionRequest" {
			asks = append(asks, l)
		} else {
			ran[l.ID] = true
		}
	}
	// PermissionRequest carries no tool_use id: the calls run one a turn,
	// so the requests come in the rows' order, each with its input.
	for i := from; i < len(s.calls); i++ {
		c, id := s.calls[i], diffID(i)
		res, ok := results[id]
		switch {
		case ran[id]:
			got[i] = "allow"
		case len(asks) > 0 && asks[0].Tool == c.tool && jsonHas(asks[0].Input, inputs[i]):
			got[i], asks = "ask", asks[1:]
		case !ok:
			if len(asks) != 0 {
				t.Fatalf("%s (%s): %d permission requests matched no row, the first %s %v", s.name, mode, len(asks), asks[0].Tool, asks[0].Input)
			}
			return i
		case strings.Contains(res.Text, "No such tool available") && slices.Contains(s.rules["deny"], c.tool):
			// A deny of a whole tool takes it out of the model's tools.
			got[i] = "deny"
		default:
			if v := diffInvalid(res.Text); v != "" {
				t.Errorf("%s.txt:%d (%s): %s %q is refused before Claude Code's permission check (%q): the row is not a decision; fix the corpus", s.name, c.line, mode, c.tool, c.arg, res.Text)
			}
			got[i] = "deny"
		}
	}
	if len(asks) != 0 {
		t.Fatalf("%s (%s): %d permission requests matched no row, the first %s %v", s.name, mode, len(asks), asks[0].Tool, asks[0].Input)
	}
	return len(s.calls)
}

// diffInvalid reports the validation error a tool result is, if it is
// one: a call that never reached the permission check.
func diffInvalid(text string) string {
	for _, v := range []string{"File does not exist", "has not been read yet", "already exists", "No such tool available", "InputValidationError"} {
		if strings.Contains(text, v) {
			return v
		}
	}
	return ""
}

// jsonHas reports whether got holds every field of want, equal (Claude
// Code adds the defaults of the fields a call leaves out, and cleans a
// file_path).
func jsonHas(got, want map[string]any) bool {
	for k, v := range want {
		if p, ok := v.(string); ok && k == "file_path" {
			if q, _ := got[k].(string); filepath.Clean(q) != filepath.Clean(p) {
				return false
			}
			continue
		}
		x, _ := json.Marshal(got[k])
		y, _ := json.Marshal(v)
		if !bytes.Equal(x, y) {
			return false
		}
	}
	return true
}

// normaDecision is Norma's answer on one row in one mode.
type normaDecision struct{ decision, reason string }

var normaReasonRE = regexp.MustCompile(`NORMA ([A-Z][A-Z_]+)`)

// normaDecides imports s's settings with the built binary and starts
// asking `norma hook claude-code` about every call in every mode, four at
// a time (a decision waits on the audit log's fsync more than it
// computes), while the caller runs the oracle; wait returns the answers.
func normaDecides(t *testing.T, s *diffSet) (wait func() map[string][]normaDecision) {
	t.Helper()
	w := newDiffWorld(t)
	rtWrite(t, filepath.Join(w.ws, ".claude", "settings.json"), string(s.settingsJSON(w)), 0o644)
	if err := os.MkdirAll(filepath.Join(w.ws, ".norma"), 0o755); err != nil {
		t.Fatal(err)
	}
	xdg, state := t.TempDir(), t.TempDir()
	env := append(os.Environ(), "HOME="+w.home, "NORMA_HOME="+state, "XDG_CONFIG_HOME="+xdg, "NORMA_MANAGED_SETTINGS="+filepath.Join(xdg, "none.yaml"))
	imp := exec.Command(normaBin(t), "settings", "import", "claude", "--out", filepath.Join(".norma", "settings.yaml"))
	imp.Dir, imp.Env = w.ws, env
	code, _, stderr := doorCmd(t, imp)
	if code != 0 {
		t.Fatalf("%s: norma settings import claude: exit %d\n%s", s.name, code, stderr)
	}
	if stderr != "" {
		t.Logf("%s: the import's notes:\n%s", s.name, stderr)
	}

	bin := normaBin(t)
	out := map[string][]normaDecision{}
	type job struct {
		mode string
		i    int
	}
	var jobs []job
	for _, m := range s.modes {
		out[m] = make([]normaDecision, len(s.calls))
		for i := range s.calls {
			jobs = append(jobs, job{m, i})
		}
	}
	var (
		mu   sync.Mutex
		errs []string
		wg   sync.WaitGroup
		next = make(chan job)
	)
	for range 4 {
		wg.Go(func() {
			for j := range next {
				d, err := hookDecide(t.Context(), bin, env, w, s, j.mode, j.i)
				mu.Lock()
				if err != nil {
					errs = append(errs, err.Error())
				}
				out[j.mode][j.i] = d
				mu.Unlock()
			}
		})
	}
	// The first decision alone: it creates the state directory's store,
	// which decisions starting together would race to migrate
	// (SQLITE_BUSY, HOOK_DECIDE_FAILED).
	first, err := hookDecide(t.Context(), bin, env, w, s, jobs[0].mode, jobs[0].i)
	if err != nil {
		t.Fatal(err)
	}
	out[jobs[0].mode][jobs[0].i], jobs = first, jobs[1:]
	// Registered after the worlds' temporary directories, it runs before
	// they are removed, should the oracle fail first.
	t.Cleanup(wg.Wait)
	go func() {
		for _, j := range jobs {
			next <- j
		}
		close(next)
	}()
	return func() map[string][]normaDecision {
		wg.Wait()
		for _, e := range errs {
			t.Error(e)
		}
		return out
	}
}

// hookDecide runs `norma hook claude-code` on row i in mode.
func hookDecide(ctx context.Context, bin string, env []string, w diffWorld, s *diffSet, mode string, i int) (normaDecision, error) {
	c := s.calls[i]
	in, err := w.input(c)
	if err != nil {
		return normaDecision{}, err
	}
	ev, _ := json.Marshal(map[string]any{"session_id": "sess-diff", "transcript_path": filepath.Join(w.home, "t.jsonl"), "cwd": w.ws,
		"permission_mode": mode, "hook_event_name": "PreToolUse", "tool_name": c.tool, "tool_input": in, "tool_use_id": diffID(i)})
	cmd := exec.CommandContext(ctx, bin, "hook", "claude-code")
	cmd.Dir, cmd.Env, cmd.Stdin = w.ws, env, bytes.NewReader(ev)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return normaDecision{}, fmt.Errorf("%s.txt:%d (%s): norma hook claude-code: %v\n%s", s.name, c.line, mode, err, stderr.String())
	}
	var a preAnswer
	if err := json.Unmarshal(stdout.Bytes(), &a); err != nil || diffRank[a.HookSpecificOutput.PermissionDecision] == 0 && a.HookSpecificOutput.PermissionDecision != "allow" {
		return normaDecision{}, fmt.Errorf("%s.txt:%d (%s): the hook's answer %q is no decision (stderr %s)", s.name, c.line, mode, stdout.String(), stderr.String())
	}
	d := normaDecision{decision: a.HookSpecificOutput.PermissionDecision}
	if m := normaReasonRE.FindStringSubmatch(a.HookSpecificOutput.PermissionDecisionReason); m != nil {
		d.reason = m[1]
	} else if d.decision == "allow" {
		d.reason = "ALLOWED"
	}
	return d, nil
}

// stricterKeys are the keys the section "Where Norma is stricter than
// Claude Code" of docs/claude-rules.md explains: each of its items opens
// with the key in backquotes.
func stricterKeys(t *testing.T) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "claude-rules.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(b), "\n## Where Norma is stricter than Claude Code")
	if !ok {
		t.Fatal("docs/claude-rules.md has no section \"Where Norma is stricter than Claude Code\"")
	}
	sec, _, _ = strings.Cut(sec, "\n## ")
	keys := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^- `([a-z0-9-]+)`").FindAllStringSubmatch(sec, -1) {
		keys[m[1]] = true
	}
	return keys
}

// TestDoorClaudeDiff is the differential test (see the comment at the top
// of this file). NORMA_CLAUDEDIFF_SETS=a,b runs only those sets;
// NORMA_CLAUDEDIFF_TABLE=FILE writes every row's decisions to FILE.
func TestDoorClaudeDiff(t *testing.T) {
	claudeBin(t)
	normaBin(t)
	files, err := filepath.Glob(filepath.Join("testdata", "claudediff", "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no corpus in testdata/claudediff: %v", err)
	}
	keys := stricterKeys(t)
	only := os.Getenv("NORMA_CLAUDEDIFF_SETS")
	var (
		mu    sync.Mutex
		table strings.Builder
		rows  int
	)
	t.Run("sets", func(t *testing.T) {
		for _, f := range files {
			s, err := parseDiffSet(f)
			if err != nil {
				t.Fatal(err)
			}
			if only != "" && !slices.Contains(strings.Split(only, ","), s.name) {
				continue
			}
			for _, c := range s.calls {
				for _, k := range c.notes {
					if !keys[k] {
						t.Errorf("%s:%d: stricter key %q is not in docs/claude-rules.md's section \"Where Norma is stricter than Claude Code\"", f, c.line, k)
					}
				}
			}
			for _, k := range s.stricter {
				if !keys[k] {
					t.Errorf("%s: stricter key %q is not in docs/claude-rules.md's section \"Where Norma is stricter than Claude Code\"", f, k)
				}
			}
			t.Run(s.name, func(t *testing.T) {
				t.Parallel()
				lines, n := diffSetRun(t, s)
				mu.Lock()
				table.WriteString(lines)
				rows += n
				mu.Unlock()
			})
		}
	})
	if p := os.Getenv("NORMA_CLAUDEDIFF_TABLE"); p != "" {
		if err := os.WriteFile(p, []byte("set\tline\tmode\ttool\tcall\tclaude\tnorma\treason\tverdict\n"+table.String()), 0o644); err != nil {
			t.Error(err)
		}
	}
	t.Logf("%d rows (call × mode) compared", rows)
}

// diffSetRun compares Norma with Claude Code on every row of s in every
// mode of s, and returns the rows' lines of the table and their number.
func diffSetRun(t *testing.T, s *diffSet) (string, int) {
	start := time.Now()
	wait := normaDecides(t, s)
	cc := map[string][]string{}
	for _, mode := range s.modes {
		t0 := time.Now()
		cc[mode] = oracle(t, s, mode)
		t.Logf("%s: Claude Code in %s: %v", s.name, mode, time.Since(t0).Round(time.Millisecond))
	}
	norma := wait()
	t.Logf("%s: %d calls in %d modes: %v", s.name, len(s.calls), len(s.modes), time.Since(start).Round(time.Millisecond))
	var table strings.Builder
	rows := 0
	stricterSeen := make([]bool, len(s.calls))
	for _, mode := range s.modes {
		cc := cc[mode]
		for i, c := range s.calls {
			n := norma[mode][i]
			rows++
			verdict := "same"
			switch {
			case diffRank[n.decision] < diffRank[cc[i]]:
				verdict = "WEAKER"
				t.Errorf("%s.txt:%d (%s): %s %q: Claude Code %s, Norma %s (%s): Norma is weaker", s.name, c.line, mode, c.tool, c.arg, cc[i], n.decision, n.reason)
			case diffRank[n.decision] > diffRank[cc[i]]:
				verdict = "stricter"
				// A row's note is in use where no note of the whole
				// mode would explain the row anyway.
				if c.notes[mode] != "" || c.notes[""] != "" && s.stricter[mode] == "" {
					stricterSeen[i] = true
				}
				if k := s.stricterKey(c, mode); k == "" {
					t.Errorf("%s.txt:%d (%s): %s %q: Claude Code %s, Norma %s (%s): Norma is stricter and the row does not say why (## stricter: KEY)", s.name, c.line, mode, c.tool, c.arg, cc[i], n.decision, n.reason)
				} else {
					verdict += " (" + k + ")"
				}
			}
			fmt.Fprintf(&table, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", s.name, c.line, mode, c.tool, c.arg, cc[i], n.decision, n.reason, verdict)
		}
	}
	for i, c := range s.calls {
		if len(c.notes) > 0 && !stricterSeen[i] {
			t.Errorf("%s.txt:%d: %s %q says Norma is stricter, and it is in no mode: drop the note", s.name, c.line, c.tool, c.arg)
		}
	}
	return table.String(), rows
}

// tail is the last n bytes of s.
func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
