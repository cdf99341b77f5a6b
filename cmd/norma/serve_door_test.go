package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/norma-run/norma/internal/syncbuf"
)

// serveProc is a `norma serve` started by a door test.
type serveProc struct {
	cmd    *exec.Cmd
	stderr *syncbuf.Buffer
	home   string
	sock   string
	base   string // http://127.0.0.1:PORT when --http was given
	done   chan error
}

var serveHTTPLine = regexp.MustCompile(`listening on (http://127\.0\.0\.1:[0-9]+)`)

// startServe starts the built binary's `norma serve` on home (a short
// temporary directory, for the socket's path) with args, and waits until
// it listens. The daemon is stopped at the end of the test.
func startServe(t *testing.T, home string, env []string, args ...string) *serveProc {
	t.Helper()
	p := &serveProc{home: home, sock: filepath.Join(home, "serve.sock"), stderr: &syncbuf.Buffer{}, done: make(chan error, 1)}
	p.cmd = exec.Command(normaBin(t), append([]string{"--home", home, "serve"}, args...)...)
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stdout, p.cmd.Stderr = io.Discard, p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.done <- p.cmd.Wait() }()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.done
		p.checkLog(t)
	})
	wantHTTP := strings.Contains(strings.Join(args, " "), "--http")
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		log := p.stderr.String()
		if strings.Contains(log, "listening on unix:") && (!wantHTTP || serveHTTPLine.MatchString(log)) {
			if m := serveHTTPLine.FindStringSubmatch(log); m != nil {
				p.base = m[1]
			}
			return p
		}
		select {
		case err := <-p.done:
			p.done <- err
			t.Fatalf("norma serve exited: %v\n%s", err, log)
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("norma serve did not listen:\n%s", p.stderr.String())
	return nil
}

// checkLog fails the test if the daemon's log holds the token or a canary.
func (p *serveProc) checkLog(t *testing.T) {
	t.Helper()
	log := p.stderr.String()
	if tok, err := os.ReadFile(filepath.Join(p.home, "serve.token")); err == nil && strings.Contains(log, strings.TrimSpace(string(tok))) {
		t.Errorf("the bearer token is in the daemon's log:\n%s", log)
	}
	for _, c := range []string{runCanary, serveCanaryToken} {
		if strings.Contains(log, c) {
			t.Errorf("a canary is in the daemon's log:\n%s", log)
		}
	}
}

// token is the daemon's bearer token, as a user reads it from the file.
func (p *serveProc) token(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(p.home, "serve.token"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// post sends body to path with the bearer token tok ("" for none).
func (p *serveProc) post(t *testing.T, c *http.Client, path, tok, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, p.base+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if strings.Contains(string(b), runCanary) || strings.Contains(string(b), serveCanaryToken) {
		t.Errorf("a canary is in the answer: %s", b)
	}
	return resp.StatusCode, string(b)
}

// served reports whether the daemon's log records a request with body.
func (p *serveProc) served(body string) bool {
	sum := sha256.Sum256([]byte(body))
	return strings.Contains(p.stderr.String(), "request sha256:"+hex.EncodeToString(sum[:8]))
}

// serveCanaryToken is a wrong bearer token: it must never be echoed.
const serveCanaryToken = "norma_serve_CANARYWRONGTOKENCANARYWRONGTOKENCANARYWR"

// shortHome is a state directory with a path short enough for a socket.
func shortHome(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "nh")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// preToolUse is the stdin a real Claude Code 2.1.332 sends a PreToolUse
// hook (the fields issue 18 lists), for tool with input in workspace ws.
func preToolUse(ws, id, tool, input string) string {
	return fmt.Sprintf(`{"session_id":"9f1c2a7e-0b3d-4c56-8e9f-1a2b3c4d5e6f","transcript_path":%q,"cwd":%q,"prompt_id":"p-1","permission_mode":"default","effort":"medium","hook_event_name":"PreToolUse","tool_name":%q,"tool_input":%s,"tool_use_id":%q}`,
		filepath.Join(ws, ".claude", "transcript.jsonl"), ws, tool, input, id)
}

// permissionDecision is hookSpecificOutput.permissionDecision and its
// reason in a Claude Code hook answer.
func permissionDecision(t *testing.T, out string) (string, string) {
	t.Helper()
	var a struct {
		HookSpecificOutput struct {
			PermissionDecision       string `json:"permissionDecision"`
			PermissionDecisionReason string `json:"permissionDecisionReason"`
		} `json:"hookSpecificOutput"`
	}
	if err := json.Unmarshal([]byte(out), &a); err != nil {
		t.Fatalf("not a hook answer: %q", out)
	}
	return a.HookSpecificOutput.PermissionDecision, a.HookSpecificOutput.PermissionDecisionReason
}

// auditOfToolUse are the capability_decision events of home's audit log
// whose tool_use_id is id.
func auditOfToolUse(t *testing.T, home, id string) []map[string]any {
	t.Helper()
	return auditByToolUse(t, home)[id]
}

// auditByToolUse are the capability_decision events of home's audit log
// by their tool_use_id.
func auditByToolUse(t *testing.T, home string) map[string][]map[string]any {
	t.Helper()
	got := map[string][]map[string]any{}
	for _, ev := range auditEvents(t, home, "--type", "capability_decision") {
		if d, _ := ev["detail"].(map[string]any); d != nil {
			if id, _ := d["tool_use_id"].(string); id != "" {
				got[id] = append(got[id], ev)
			}
		}
	}
	return got
}

// TestDoorServeHTTPHooks drives `norma serve --http` as Claude Code's http
// hooks do: an allowed Read and a denied Read of .env both answer 200 with
// Claude Code's JSON (the deny is never an error status, which Claude Code
// would take as "go on"), each decision is in the audit log; requests
// without the token or with a wrong one are 401 and decide nothing.
func TestDoorServeHTTPHooks(t *testing.T) {
	e := newRunEnv(t)
	home := shortHome(t)
	p := startServe(t, home, isolated(t), "--http", "127.0.0.1:0")
	tok := p.token(t)
	if fi, err := os.Stat(filepath.Join(home, "serve.token")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v %v", fi, err)
	}
	c := &http.Client{Timeout: 20 * time.Second}

	allow := preToolUse(e.ws, "toolu_allow", "Read", fmt.Sprintf(`{"file_path":%q}`, filepath.Join(e.ws, "docs", "intro.md")))
	code, out := p.post(t, c, "/hooks/claude-code", tok, allow)
	if d, _ := permissionDecision(t, out); code != 200 || d != "allow" {
		t.Fatalf("allowed Read: %d %s", code, out)
	}
	deny := preToolUse(e.ws, "toolu_deny", "Read", fmt.Sprintf(`{"file_path":%q}`, filepath.Join(e.ws, ".env")))
	code, out = p.post(t, c, "/hooks/claude-code", tok, deny)
	if d, why := permissionDecision(t, out); code != 200 || d != "deny" || !strings.Contains(why, "FILESYSTEM_READ_DENIED") {
		t.Fatalf("Read of .env: %d %s", code, out)
	}

	// Without the token, with a wrong one: refused before any decision.
	for _, bad := range []string{"", serveCanaryToken, tok[:len(tok)-1]} {
		body := preToolUse(e.ws, "toolu_unauth", "Read", fmt.Sprintf(`{"file_path":%q}`, filepath.Join(e.ws, "docs", "intro.md")))
		if code, out := p.post(t, c, "/hooks/claude-code", bad, body); code != 401 {
			t.Fatalf("token %q: %d %s, want 401", bad, code, out)
		}
	}
	// A DNS-rebinding page: the right port, its own Host name.
	req, _ := http.NewRequest(http.MethodPost, p.base+"/hooks/claude-code", strings.NewReader(allow))
	req.Host = "rebind.attacker.example"
	req.Header.Set("Authorization", "Bearer "+tok)
	if resp, err := c.Do(req); err != nil || resp.StatusCode != http.StatusMisdirectedRequest {
		t.Fatalf("rebinding Host: %v %v", resp, err)
	}
	if code, _ := p.post(t, c, "/healthz", "", ""); code != 405 && code != 401 {
		t.Fatalf("healthz without the token: %d", code)
	}

	for id, want := range map[string]string{"toolu_allow": "allow", "toolu_deny": "deny", "toolu_unauth": ""} {
		evs := auditOfToolUse(t, home, id)
		if want == "" {
			if len(evs) != 0 {
				t.Fatalf("unauthenticated requests were decided: %v", evs)
			}
			continue
		}
		if len(evs) != 1 || evs[0]["decision"] != want {
			t.Fatalf("audit of %s: %v, want one %s", id, evs, want)
		}
	}
	if n := strings.Count(p.stderr.String(), "refused POST /hooks/claude-code via http: 401"); n != 3 {
		t.Fatalf("daemon log, want the three 401s:\n%s", p.stderr.String())
	}
	if strings.Count(p.stderr.String(), "hook claude-code via http") != 2 {
		t.Fatalf("daemon log, want two decisions:\n%s", p.stderr.String())
	}
}

// TestDoorServeRefusesNonLoopback: an --http address that is not a
// loopback IP is refused before anything listens (no socket either).
func TestDoorServeRefusesNonLoopback(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", "[::]:0", ":8787", "localhost:0", "192.168.1.10:8787"} {
		home := shortHome(t)
		code, out, errs := door(t, "--home", home, "serve", "--http", addr)
		if code != exitFailed || !strings.Contains(errs, "loopback") {
			t.Fatalf("serve --http %s: exit %d\n%s%s", addr, code, out, errs)
		}
		if _, err := os.Lstat(filepath.Join(home, "serve.sock")); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("serve --http %s left a socket: %v", addr, err)
		}
	}
}

// TestDoorServeOneDaemon: a second daemon on the same state directory is
// refused (exit 5) and the first keeps answering; SIGTERM stops it cleanly
// and removes its socket; a socket left by a killed daemon is replaced.
func TestDoorServeOneDaemon(t *testing.T) {
	home := shortHome(t)
	p := startServe(t, home, isolated(t))
	if fi, err := os.Lstat(p.sock); err != nil || fi.Mode().Type() != os.ModeSocket || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket: %v %v", fi, err)
	}
	code, _, errs := door(t, "--home", home, "serve")
	if code != exitBusy || !strings.Contains(errs, "another norma serve") {
		t.Fatalf("second serve: exit %d %s", code, errs)
	}
	if !healthy(p.sock) {
		t.Fatal("the first daemon stopped answering")
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.done:
		p.done <- err
		if err != nil {
			t.Fatalf("after SIGTERM: %v\n%s", err, p.stderr.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("SIGTERM did not stop the daemon")
	}
	if _, err := os.Lstat(p.sock); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the socket is left after SIGTERM: %v", err)
	}

	// Killed: its socket stays behind, stale; the next daemon replaces it.
	q := startServe(t, home, isolated(t))
	q.cmd.Process.Kill()
	<-q.done
	q.done <- nil
	if _, err := os.Lstat(q.sock); err != nil {
		t.Fatalf("a killed daemon's socket: %v", err)
	}
	r := startServe(t, home, isolated(t))
	if !healthy(r.sock) {
		t.Fatal("the daemon on the replaced socket does not answer")
	}
}

// healthy reports whether a daemon answers /healthz on sock.
func healthy(sock string) bool {
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		}}}
	resp, err := c.Get("http://norma/healthz")
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode == 200 && strings.Contains(string(b), `"ok":true`)
}

// hookCmd runs the built binary's `norma hook claude-code` on home with
// stdin, as Claude Code runs a command hook.
func hookCmd(t *testing.T, home, stdin string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(normaBin(t), "--home", home, "hook", "claude-code")
	cmd.Env = append(os.Environ(), isolated(t)...)
	cmd.Stdin = strings.NewReader(stdin)
	return cmd
}

// TestDoorHookForwardsToServe: while `norma serve` runs on the state
// directory, `norma hook claude-code` hands its input to it (the daemon's
// log records the request's digest) and answers what it decided; once the
// daemon is stopped, the command decides itself, with the same answers.
// Every decision, by either path, is in the audit log.
func TestDoorHookForwardsToServe(t *testing.T) {
	e := newRunEnv(t)
	home := shortHome(t)
	cases := func(tag string) []struct{ body, want string } {
		return []struct{ body, want string }{
			{preToolUse(e.ws, "toolu_allow_"+tag, "Read", fmt.Sprintf(`{"file_path":%q}`, filepath.Join(e.ws, "docs", "intro.md"))), "allow"},
			{preToolUse(e.ws, "toolu_deny_"+tag, "Read", fmt.Sprintf(`{"file_path":%q}`, filepath.Join(e.ws, ".env"))), "deny"},
			{preToolUse(e.ws, "toolu_bash_"+tag, "Bash", `{"command":"cat .env"}`), "deny"},
		}
	}
	p := startServe(t, home, isolated(t))
	for _, c := range cases("daemon") {
		code, out, errs := doorCmd(t, hookCmd(t, home, c.body))
		if d, _ := permissionDecision(t, out); code != 0 || d != c.want {
			t.Fatalf("through the daemon: exit %d %s %s, want %s", code, out, errs, c.want)
		}
		if !p.served(c.body) {
			t.Fatalf("the daemon did not decide %s:\n%s", c.body, p.stderr.String())
		}
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	if err := <-p.done; err != nil {
		t.Fatalf("serve: %v", err)
	}
	p.done <- nil
	for _, c := range cases("self") {
		code, out, errs := doorCmd(t, hookCmd(t, home, c.body))
		if d, _ := permissionDecision(t, out); code != 0 || d != c.want {
			t.Fatalf("without the daemon: exit %d %s %s, want %s", code, out, errs, c.want)
		}
		if p.served(c.body) {
			t.Fatal("a stopped daemon decided")
		}
	}
	for _, tag := range []string{"daemon", "self"} {
		for _, c := range cases(tag) {
			var id struct {
				ID string `json:"tool_use_id"`
			}
			json.Unmarshal([]byte(c.body), &id)
			if evs := auditOfToolUse(t, home, id.ID); len(evs) != 1 || evs[0]["decision"] != c.want {
				t.Fatalf("audit of %s: %v, want one %s", id.ID, evs, c.want)
			}
		}
	}
}

// TestDoorHookDaemonKilledMidRequest: the daemon takes the command hook's
// connection and is killed before it answers (stopped first, so the
// request is surely in flight). The hook denies with SERVE_NO_ANSWER and
// exit 2 — for a Read the policy would allow — and decides nothing
// itself: no decision for the call is in the audit log.
func TestDoorHookDaemonKilledMidRequest(t *testing.T) {
	e := newRunEnv(t)
	home := shortHome(t)
	p := startServe(t, home, isolated(t))
	body := preToolUse(e.ws, "toolu_killed", "Read", fmt.Sprintf(`{"file_path":%q}`, filepath.Join(e.ws, "docs", "intro.md")))
	if err := p.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	h := hookCmd(t, home, body)
	var out, errb strings.Builder
	h.Stdout, h.Stderr = &out, &errb
	if err := h.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- h.Wait() }()
	// The hook connects at once (the kernel queues the connection of a
	// stopped listener) and waits for the answer.
	select {
	case err := <-exited:
		t.Fatalf("the hook did not wait for the stopped daemon: %v\n%s%s", err, out.String(), errb.String())
	case <-time.After(1500 * time.Millisecond):
	}
	p.cmd.Process.Kill()
	var err error
	select {
	case err = <-exited:
	case <-time.After(20 * time.Second):
		t.Fatal("the hook did not answer after the daemon was killed")
	}
	ee, _ := err.(*exec.ExitError)
	if ee == nil || ee.ExitCode() != 2 {
		t.Fatalf("hook: %v, want exit 2\n%s%s", err, out.String(), errb.String())
	}
	if d, why := permissionDecision(t, out.String()); d != "deny" || !strings.Contains(why, "SERVE_NO_ANSWER") || !strings.Contains(errb.String(), "SERVE_NO_ANSWER") {
		t.Fatalf("hook answer %q, stderr %q: want a deny with SERVE_NO_ANSWER", out.String(), errb.String())
	}
	if strings.Contains(out.String(), `"allow"`) {
		t.Fatalf("the hook allowed: %s", out.String())
	}
	if evs := auditOfToolUse(t, home, "toolu_killed"); len(evs) != 0 {
		t.Fatalf("the call was decided after all: %v", evs)
	}
}

// TestDoorServeConcurrent: concurrent hooks, over the socket and over
// HTTP, share the daemon's one engine; each gets its own call's decision
// and each decision is in the audit log once.
func TestDoorServeConcurrent(t *testing.T) {
	e := newRunEnv(t)
	home := shortHome(t)
	p := startServe(t, home, isolated(t), "--http", "127.0.0.1:0")
	tok := p.token(t)
	c := &http.Client{Timeout: 30 * time.Second}
	const n = 12
	type result struct {
		id, want, got string
	}
	results := make(chan result, 2*n)
	for i := range n {
		for _, viaHTTP := range []bool{false, true} {
			go func() {
				id, file, want := fmt.Sprintf("toolu_c%d_%v", i, viaHTTP), "docs/intro.md", "allow"
				if i%2 == 1 {
					file, want = ".env", "deny"
				}
				body := preToolUse(e.ws, id, "Read", fmt.Sprintf(`{"file_path":%q}`, filepath.Join(e.ws, file)))
				var out string
				if viaHTTP {
					_, out = p.post(t, c, "/hooks/claude-code", tok, body)
				} else {
					var cmd = hookCmd(t, home, body)
					var b strings.Builder
					cmd.Stdout = &b
					cmd.Run()
					out = b.String()
				}
				var a struct {
					H struct {
						D string `json:"permissionDecision"`
					} `json:"hookSpecificOutput"`
				}
				json.Unmarshal([]byte(out), &a)
				results <- result{id, want, a.H.D}
			}()
		}
	}
	var all []result
	for range 2 * n {
		r := <-results
		if r.got != r.want {
			t.Errorf("%s: %q, want %s", r.id, r.got, r.want)
		}
		all = append(all, r)
	}
	audited := auditByToolUse(t, home)
	for _, r := range all {
		if evs := audited[r.id]; len(evs) != 1 || evs[0]["decision"] != r.want {
			t.Errorf("audit of %s: %v", r.id, evs)
		}
	}
	if got := strings.Count(p.stderr.String(), "hook claude-code via"); got != 2*n {
		t.Fatalf("the daemon decided %d hooks, want %d", got, 2*n)
	}
}
