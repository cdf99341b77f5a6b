package main

import (
	"encoding/base32"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// sseTurn is one OpenAI streaming response: the tool calls (name, input)
// or, with none, the text.
func sseTurn(t *testing.T, turn int, text string, calls ...[2]string) string {
	t.Helper()
	var b strings.Builder
	chunk := func(delta map[string]any, finish any) {
		c, _ := json.Marshal(map[string]any{"id": "chatcmpl-x", "object": "chat.completion.chunk", "model": "m",
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}})
		fmt.Fprintf(&b, "data: %s\n\n", c)
	}
	chunk(map[string]any{"role": "assistant", "content": text}, nil)
	for i, c := range calls {
		chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "id": fmt.Sprintf("call_%d_%d", turn, i), "type": "function",
			"function": map[string]any{"name": c[0], "arguments": c[1]}}}}, nil)
	}
	finish := "stop"
	if len(calls) > 0 {
		finish = "tool_calls"
	}
	chunk(map[string]any{}, finish)
	b.WriteString(`data: {"id":"chatcmpl-x","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}` + "\n\ndata: [DONE]\n\n")
	p := filepath.Join(t.TempDir(), fmt.Sprintf("turn%d.sse", turn))
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestDoorRunRedactsSecrets: a vault secret (set with `norma secret set`)
// and a GitHub token sit in a workspace file; the model reads it with
// Bash `cat` and Read, and a background task prints the vault value in
// two halves three seconds apart, read with two TaskOutput calls. What
// the model API receives, the terminal output, state.json, the audit
// database and every other file of the state directory (spill, runs) hold
// neither secret nor either half of the split one; the model received
// the masks; the audit log says what was masked, never the value.
func TestDoorRunRedactsSecrets(t *testing.T) {
	e := newRunEnv(t)
	vault := "VAULT-" + runCanary + "-9f2c71ab4e"
	gh := "gh" + "p_" + "Zq4W9xR2mT7vL1nB8kC3pY6dF0sH5jG2aE9u"
	halves := []string{vault[:12], vault[12:]}
	set := exec.Command(normaBin(t), "--home", e.home, "secret", "set", "db_password")
	set.Stdin = strings.NewReader(vault + "\n")
	if out, err := set.CombinedOutput(); err != nil {
		t.Fatalf("secret set: %v\n%s", err, out)
	}
	os.WriteFile(filepath.Join(e.ws, "notes.txt"), []byte("db password: "+vault+"\ngithub: "+gh+"\n"), 0o644)
	os.WriteFile(filepath.Join(e.ws, "split.txt"), []byte(vault), 0o644)

	f := &fakeServer{}
	srv := f.start(t, "/v1/chat/completions",
		sseTurn(t, 1, "", [2]string{"Bash", `{"command":"cat notes.txt"}`}, [2]string{"Read", `{"path":"notes.txt"}`},
			[2]string{"Bash", `{"command":"head -c 12 split.txt; sleep 3; tail -c +13 split.txt; echo","run_in_background":true}`}),
		sseTurn(t, 2, "", [2]string{"Bash", `{"command":"sleep 1"}`}),
		sseTurn(t, 3, "", [2]string{"TaskOutput", `{"task_id":"t1"}`}),
		sseTurn(t, 4, "", [2]string{"TaskOutput", `{"task_id":"t1","block":true,"timeout_ms":20000}`}),
		sseTurn(t, 5, "done"),
	)
	cmd := exec.Command(normaBin(t), "--home", e.home, "run", "--workspace", e.ws, "--provider", "openai",
		"--base-url", srv.URL+"/v1", "--yes", "--json", "read the notes")
	cmd.Env = append(os.Environ(), "OPENAI_API_KEY=sk-test-provider-key-0123456789")
	code, out, errs := doorCmd(t, cmd)
	if code != 0 {
		t.Fatalf("run: exit %d\n%s%s", code, out, errs)
	}
	leaks := func(where, s string) {
		t.Helper()
		for _, c := range append([]string{vault, gh, "sk-test-provider-key"}, halves...) {
			if strings.Contains(s, c) {
				t.Errorf("%s holds %q", where, c)
			}
		}
	}
	leaks("stdout and stderr", out+errs)

	f.mu.Lock()
	bodies := strings.Join(f.bodies, "\n")
	n := len(f.bodies)
	f.mu.Unlock()
	if n != 5 {
		t.Fatalf("the model was asked %d times, want 5", n)
	}
	leaks("what the model received", bodies)
	if c := strings.Count(bodies, "[REDACTED:db_password]"); c < 2 {
		t.Errorf("the model received the vault mask %d times, want at least 2 (cat, Read)", c)
	}
	if !strings.Contains(bodies, "[REDACTED:github-token]") {
		t.Error("the model did not receive the GitHub token mask")
	}
	// The split value: masked in the task's output (in the second read,
	// unless a slow machine let the task finish before the first), never
	// shown in halves.
	calls := toolCalls(jsonLines(t, out))
	r3, _ := calls["call_3_0"]["result"].(string)
	r4, _ := calls["call_4_0"]["result"].(string)
	if !strings.Contains(r3+r4, "[REDACTED:db_password]") {
		t.Errorf("the TaskOutput reads = %q, %q; want the mask", r3, r4)
	}

	runID, state := runStateFile(t, e.home, out)
	leaks("state.json", string(state))
	if !strings.Contains(string(state), "[REDACTED:db_password]") || !strings.Contains(string(state), "[REDACTED:github-token]") {
		t.Errorf("state.json lacks the masks:\n%s", state)
	}
	// Every file of the state directory but the (encrypted) vault: the
	// audit database and its journal, spill files, run state.
	stateFiles(e.home, leaks)

	code, aout, aerr := door(t, "--home", e.home, "audit", "query", "--type", "output_redacted", "--run", runID, "--json")
	if code != 0 {
		t.Fatalf("audit query: exit %d %s", code, aerr)
	}
	leaks("audit query", aout)
	var evs []struct {
		Event struct {
			Tool   string            `json:"tool"`
			Detail map[string]string `json:"detail"`
		} `json:"event"`
	}
	if err := json.Unmarshal([]byte(aout), &evs); err != nil {
		t.Fatalf("audit query: %v\n%s", err, aout)
	}
	masked := map[string]bool{}
	for _, ev := range evs {
		for k := range ev.Event.Detail {
			masked[ev.Event.Detail["tool_use_id"]+" "+ev.Event.Tool+" "+k] = true
		}
	}
	// The background task's stream is the call that started it.
	for _, want := range []string{"call_1_0 Bash redacted.db_password", "call_1_0 Bash redacted.github-token",
		"call_1_1 Read redacted.db_password", "call_1_1 Read redacted.github-token", "call_1_2 Bash redacted.db_password"} {
		if !masked[want] {
			t.Errorf("no output_redacted event with %s; events %v", want, evs)
		}
	}
}

// TestDoorRunRedactsEncodings: a vault secret in a workspace file, printed
// by Bash reversed, as upper-case hex, in base32 and in ROT13 (encodings a
// model undoes at a glance), reaches neither the model's input (the tool
// results) nor state.json in any of these forms; each result holds the
// mask.
func TestDoorRunRedactsEncodings(t *testing.T) {
	e := newRunEnv(t)
	vault := "VAULT-" + runCanary + "-9f2c71ab4e"
	set := exec.Command(normaBin(t), "--home", e.home, "secret", "set", "db_password")
	set.Stdin = strings.NewReader(vault + "\n")
	if out, err := set.CombinedOutput(); err != nil {
		t.Fatalf("secret set: %v\n%s", err, out)
	}
	os.WriteFile(filepath.Join(e.ws, "cfg.txt"), []byte(vault), 0o644)
	rev := []byte(vault)
	slices.Reverse(rev)
	rot := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z':
			return 'a' + (r-'a'+13)%26
		case r >= 'A' && r <= 'Z':
			return 'A' + (r-'A'+13)%26
		}
		return r
	}, vault)
	forms := map[string]string{
		"rev":   string(rev),
		"hexu":  strings.ToUpper(hex.EncodeToString([]byte(vault))),
		"b32":   base32.StdEncoding.EncodeToString([]byte(vault)),
		"rot13": rot,
	}
	script := "turns:\n  - tool_calls:\n" +
		"      - {id: rev, name: Bash, input: {command: \"rev cfg.txt\"}}\n" +
		"      - {id: hexu, name: Bash, input: {command: \"od -An -vtx1 cfg.txt | tr -d ' \\\\n' | tr a-f A-F\"}}\n" +
		"      - {id: b32, name: Bash, input: {command: \"base32 -w0 cfg.txt\"}}\n" +
		"      - {id: rot13, name: Bash, input: {command: \"tr a-zA-Z n-za-mN-ZA-M < cfg.txt\"}}\n" +
		"  - text: done\n"
	code, out, errs := doorEnv(t, rtEnv(t), "--home", e.home, "run", "--workspace", e.ws, "--provider", "scripted",
		"--script", e.script(t, script), "--yes", "--json", "go")
	if code != 0 {
		t.Fatalf("run: exit %d\n%s%s", code, out, errs)
	}
	calls := toolCalls(jsonLines(t, out))
	_, state := runStateFile(t, e.home, out)
	for id, form := range forms {
		res, _ := calls[id]["result"].(string)
		if !strings.Contains(res, "[REDACTED:db_password]") {
			t.Errorf("%s result = %q; want the mask", id, res)
		}
		if strings.Contains(out+errs, form) || strings.Contains(string(state), form) {
			t.Errorf("the %s form of the secret reached the output or state.json", id)
		}
	}
}

// runStateFile is the id and the state.json of the run whose --json output
// is out.
func runStateFile(t *testing.T, home, out string) (string, []byte) {
	t.Helper()
	var runID string
	for _, ev := range jsonLines(t, out) {
		if ev["event"] == "session_started" {
			runID, _ = ev["run_id"].(string)
		}
	}
	state, err := os.ReadFile(filepath.Join(home, "runs", runID, "state.json"))
	if err != nil {
		t.Fatal(err)
	}
	return runID, state
}

// stateFiles calls check with every file of the state directory home
// but the (encrypted) vault: the audit and approval database and its
// journal, spill files, run state.
func stateFiles(home string, check func(where, content string)) {
	filepath.WalkDir(home, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			if d != nil && d.IsDir() && d.Name() == "secrets" {
				return filepath.SkipDir
			}
			return nil
		}
		b, _ := os.ReadFile(p)
		check(p, string(b))
		return nil
	})
}
