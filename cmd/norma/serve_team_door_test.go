package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/norma-run/norma/internal/pgtest"
	"github.com/norma-run/norma/internal/syncbuf"
)

var teamLine = regexp.MustCompile(`team server listening on (http://127\.0\.0\.1:[0-9]+)`)

// teamClient talks to a team server with one token, keeping every answer
// so the test can scan them all for tokens.
type teamClient struct {
	base    string
	answers *strings.Builder
	mu      *sync.Mutex // guards answers: a long poll runs beside other calls
}

func (c teamClient) call(t *testing.T, method, path, tok, body string) (int, map[string]any) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	res, err := (&http.Client{Timeout: 60 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	c.mu.Lock()
	c.answers.Write(b)
	c.mu.Unlock()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s %s: not JSON: %s", method, path, b)
	}
	return res.StatusCode, m
}

// teamToken makes a token with the built binary and returns it: the one
// line on stdout.
func teamToken(t *testing.T, home, name, role string, outputs *strings.Builder) string {
	t.Helper()
	code, out, errs := door(t, "--home", home, "serve", "token", "add", name, "--role", role)
	if code != 0 {
		t.Fatalf("token add %s: exit %d %s", name, code, errs)
	}
	outputs.WriteString(errs) // stdout is the token itself
	tok := strings.TrimSpace(out)
	if !strings.HasPrefix(tok, "norma_team_") || strings.Contains(tok, "\n") {
		t.Fatalf("token add printed %q", out)
	}
	return tok
}

// startTeam starts the built binary's norma serve --team 127.0.0.1:0 on
// home with args and returns it and a client of its team listener.
func startTeam(t *testing.T, home string, answers *strings.Builder, args ...string) (*serveProc, teamClient) {
	t.Helper()
	srv := startServe(t, home, isolated(t), append(args, "--team", "127.0.0.1:0")...)
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if m := teamLine.FindStringSubmatch(srv.stderr.String()); m != nil {
			return srv, teamClient{base: m[1], answers: answers, mu: new(sync.Mutex)}
		}
	}
	t.Fatalf("no team listener:\n%s", srv.stderr.String())
	return nil, teamClient{}
}

// TestDoorTeamApproval: norma serve --team over a store shared with a
// headless norma run in another state directory (a SQLite file; a
// PostgreSQL database, whose change notification wakes the long poll and
// the run). The run files a request for a Bash line that appends to a
// file; the API lists it; a runner's approve and a viewer's are 403 and
// change nothing (the line has not run, the record is pending); the
// approver's approve lets the waiting run go on, the line runs exactly
// once, and the audit log names the approver. No token (and no store
// password) appears in any output, log or answer.
func TestDoorTeamApproval(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) { testDoorTeamApproval(t, "sqlite:"+filepath.Join(t.TempDir(), "team.db")) })
	t.Run("postgres", func(t *testing.T) { testDoorTeamApproval(t, withPassword(t, pgtest.URL(t))) })
}

func testDoorTeamApproval(t *testing.T, db string) {
	serverHome, runHome := shortHome(t), t.TempDir()
	var outputs, answers strings.Builder
	alice := teamToken(t, serverHome, "alice", "approver", &outputs)
	vic := teamToken(t, serverHome, "vic", "viewer", &outputs)
	ci := teamToken(t, serverHome, "ci", "runner", &outputs)
	toks := []string{alice, vic, ci}
	code, out, errs := door(t, "--home", serverHome, "serve", "token", "list")
	outputs.WriteString(out + errs)
	if code != 0 || !regexp.MustCompile(`(?m)^alice\s+approver\s`).MatchString(out) || !regexp.MustCompile(`(?m)^ci\s+runner\s`).MatchString(out) {
		t.Errorf("token list: exit %d\n%s", code, out)
	}

	srv, api := startTeam(t, serverHome, &answers, "--store", db)

	// The headless run, in its own state directory, sharing the store.
	wr := startWaitingRun(t, runHome, db, `turns:
  - tool_calls:
      - {id: b1, name: Bash, input: {command: "echo ran >> count.txt"}}
  - text: "Done."
`, "90s")
	ws, runOut, runErr, runDone := wr.ws, wr.out, wr.errOut, wr.done

	// The API lists the request the run filed.
	var id string
	for deadline := time.Now().Add(60 * time.Second); id == "" && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		code, m := api.call(t, "GET", "/api/v1/approvals", vic, "")
		if code != 200 {
			t.Fatalf("list: %d %v", code, m)
		}
		if l := m["approvals"].([]any); len(l) == 1 {
			rec := l[0].(map[string]any)
			id, _ = rec["id"].(string)
			if rec["tool"] != "Bash" || !strings.Contains(rec["preview"].(string), "echo ran >> count.txt") {
				t.Errorf("listed request = %v", rec)
			}
		}
		select {
		case err := <-runDone:
			runDone <- err
			t.Fatalf("the run ended before its request was listed: %v\n%s%s", err, runOut, runErr)
		default:
		}
	}
	if id == "" {
		t.Fatalf("no pending request:\n%s\n%s", runOut, runErr)
	}
	count := filepath.Join(ws, "count.txt")

	// A runner and a viewer may not approve: 403, and nothing changed.
	for _, c := range []struct{ who, tok string }{{"runner", ci}, {"viewer", vic}} {
		code, m := api.call(t, "POST", "/api/v1/approvals/"+id+"/approve", c.tok, `{"reason":"let me"}`)
		if code != 403 || m["error"].(map[string]any)["code"] != "TEAM_FORBIDDEN" {
			t.Errorf("%s approves: %d %v, want 403 TEAM_FORBIDDEN", c.who, code, m)
		}
		_, m = api.call(t, "GET", "/api/v1/approvals/"+id, vic, "")
		if rec := m["approval"].(map[string]any); rec["state"] != "pending" || rec["decided_by"] != nil {
			t.Errorf("after the %s's approve: %v", c.who, rec)
		}
	}
	time.Sleep(500 * time.Millisecond) // the run's waiter polls every 200ms: give it the chance to act on a change
	if _, err := os.Stat(count); !os.IsNotExist(err) {
		t.Fatalf("the line ran before the approver decided: %v", err)
	}
	if code, m := api.call(t, "POST", "/api/v1/approvals/"+id+"/approve", "norma_team_notatoken", `{}`); code != 401 {
		t.Errorf("unknown token approves: %d %v", code, m)
	}

	// The runner long-polls; the approver approves; both the poll and
	// the run wake.
	polled := make(chan map[string]any, 1)
	go func() {
		_, m := api.call(t, "GET", "/api/v1/approvals/"+id+"?wait=30s", ci, "")
		polled <- m
	}()
	time.Sleep(200 * time.Millisecond)
	start := time.Now()
	code, m := api.call(t, "POST", "/api/v1/approvals/"+id+"/approve", alice, `{"reason":"counting is fine"}`)
	if code != 200 {
		t.Fatalf("approver approves: %d %v", code, m)
	}
	select {
	case m := <-polled:
		if rec := m["approval"].(map[string]any); rec["state"] != "granted" && rec["state"] != "consumed" {
			t.Errorf("long poll = %v", rec)
		}
		d := time.Since(start)
		if d > 5*time.Second {
			t.Errorf("the long poll woke %v after the decision", d)
		}
		t.Logf("the runner's long poll answered %v after the approve was sent", d.Round(time.Millisecond))
	case <-time.After(40 * time.Second):
		t.Fatal("the long poll did not wake")
	}
	select {
	case err := <-runDone:
		runDone <- err
		if err != nil {
			t.Fatalf("run: %v\n%s%s", err, runOut, runErr)
		}
		t.Logf("the headless run ended %v after the approve was sent", time.Since(start).Round(time.Millisecond))
	case <-time.After(60 * time.Second):
		t.Fatalf("the run did not proceed:\n%s\n%s", runOut, runErr)
	}
	lines := jsonLines(t, runOut.String())
	if fin := lines[len(lines)-1]; fin["event"] != "session_finished" || fin["status"] != "completed" {
		t.Errorf("run finished with %v", fin)
	}
	if b, err := os.ReadFile(count); err != nil || string(b) != "ran\n" {
		t.Errorf("count.txt = %q, %v; want the line run exactly once", b, err)
	}

	// The decision names the approver, in the record and in the audit log
	// (through the API and through the CLI on the shared store).
	_, m = api.call(t, "GET", "/api/v1/approvals/"+id, vic, "")
	if rec := m["approval"].(map[string]any); rec["decided_by"] != "team:alice" || rec["why"] != "counting is fine" || rec["state"] != "consumed" {
		t.Errorf("record = %v", rec)
	}
	_, m = api.call(t, "GET", "/api/v1/audit?type=approval_granted", vic, "")
	evs := m["events"].([]any)
	if len(evs) != 1 {
		t.Fatalf("approval_granted events = %v", evs)
	}
	ev := evs[0].(map[string]any)["event"].(map[string]any)
	if ev["approval_id"] != id || ev["detail"].(map[string]any)["by"] != "team:alice" {
		t.Errorf("approval_granted = %v", ev)
	}
	runID, _ := ev["run_id"].(string)
	finished := 0
	_, m = api.call(t, "GET", "/api/v1/runs/"+runID, vic, "")
	for _, e := range m["events"].([]any) {
		if ev := e.(map[string]any)["event"].(map[string]any); ev["type"] == "tool_call_finished" {
			finished++
		}
	}
	if finished != 1 {
		t.Errorf("tool_call_finished events of the run = %d, want 1", finished)
	}
	if _, m = api.call(t, "GET", "/api/v1/audit/verify", vic, ""); m["ok"] != true {
		t.Errorf("verify = %v", m)
	}
	if code, m := api.call(t, "GET", "/api/v1/audit", ci, ""); code != 403 {
		t.Errorf("runner reads the audit log: %d %v", code, m)
	}

	// Revoked: refused from the next request on, by the running server.
	if code, _, errs := door(t, "--home", serverHome, "serve", "token", "revoke", "vic"); code != 0 {
		t.Fatalf("revoke: %s", errs)
	}
	if code, m := api.call(t, "GET", "/api/v1/approvals", vic, ""); code != 401 || m["error"].(map[string]any)["code"] != "TEAM_UNAUTHENTICATED" {
		t.Errorf("revoked token: %d %v", code, m)
	}

	// No token anywhere: outputs, logs, answers, the store, the token file.
	srv.cmd.Process.Signal(os.Interrupt)
	<-srv.done
	srv.done <- nil
	var dbBytes []byte
	if path, ok := strings.CutPrefix(db, "sqlite:"); ok {
		main, _ := os.ReadFile(path)
		wal, _ := os.ReadFile(path + "-wal")
		dbBytes = append(main, wal...)
	}
	tokFile, _ := os.ReadFile(filepath.Join(serverHome, "team-tokens.json"))
	for _, where := range []struct{ name, text string }{
		{"token commands", outputs.String()}, {"API answers", answers.String()}, {"server log", srv.stderr.String()},
		{"run output", runOut.String() + runErr.String()}, {"store", string(dbBytes)}, {"token file", string(tokFile)},
	} {
		for _, tok := range toks {
			if strings.Contains(where.text, tok) {
				t.Errorf("a token is in the %s", where.name)
			}
		}
		noCanary(t, where.name, where.text)
	}
}

// TestDoorTeamNeedsTLSOffLoopback: an address other than loopback without
// a certificate is refused before anything listens; the token commands
// refuse a bad role and a second token of one name, and print no token.
func TestDoorTeamNeedsTLSOffLoopback(t *testing.T) {
	home := shortHome(t)
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"serve", "--team", "0.0.0.0:0"}, exitUsage, "give --tls-cert and --tls-key"},
		{[]string{"serve", "--team", ":0"}, exitUsage, "not a loopback address"},
		{[]string{"serve", "--team", "localhost:0"}, exitUsage, "must be an IP address"},
		{[]string{"serve", "--tls-cert", "c.pem"}, exitUsage, "are for --team"},
		{[]string{"serve", "token", "add", "eve", "--role", "admin"}, exitUsage, "unknown role"},
		{[]string{"serve", "token", "add", "Eve!", "--role", "viewer"}, exitFailed, "token name"},
		{[]string{"serve", "token", "revoke", "nobody"}, exitFailed, "no token of that name"},
	} {
		code, out, errs := door(t, append([]string{"--home", home}, c.args...)...)
		if code != c.code || !strings.Contains(errs, c.want) || strings.Contains(out, "norma_team_") {
			t.Errorf("norma %v: exit %d, %q %q; want exit %d and %q", c.args, code, out, errs, c.code, c.want)
		}
	}
	if _, err := os.Stat(filepath.Join(home, "serve.sock")); !os.IsNotExist(err) {
		t.Errorf("a refused serve left a socket: %v", err)
	}
	teamToken(t, home, "eve", "viewer", &strings.Builder{})
	if code, out, errs := door(t, "--home", home, "serve", "token", "add", "eve", "--role", "approver"); code != exitFailed || strings.Contains(out, "norma_team_") {
		t.Errorf("second eve: exit %d %q %q", code, out, errs)
	}
}

// TestDoorTeamPlugins: GET /api/v1/plugins lists a plugin installed in the
// server's state directory with its version, signer and grant; a runner
// may not read it.
func TestDoorTeamPlugins(t *testing.T) {
	home, work := shortHome(t), t.TempDir()
	key := filepath.Join(work, "dev")
	mustNorma(t, "plugin", "keygen", "--out", key)
	mustNorma(t, "--home", home, "plugin", "trust", "add", key+".pub", "--publisher", "Example", "--prefix", "com.example")
	docs := "  filesystem: {read: [workspace://docs/**]}\n"
	grant := filepath.Join(work, "grant.yaml")
	os.WriteFile(grant, []byte("schema_version: 2\nkind: grant\npermissions:\n"+docs), 0o644)
	mustNorma(t, "--home", home, "plugin", "install", echoPkg(t, echoManifest("1.0.0", "", docs), "", key), "--yes", "--grant", grant)
	var outputs, answers strings.Builder
	vic := teamToken(t, home, "vic", "viewer", &outputs)
	ci := teamToken(t, home, "ci", "runner", &outputs)
	_, api := startTeam(t, home, &answers)
	code, m := api.call(t, "GET", "/api/v1/plugins", vic, "")
	if code != 200 {
		t.Fatalf("plugins: %d %v", code, m)
	}
	ps := m["plugins"].([]any)
	if len(ps) != 1 {
		t.Fatalf("plugins = %v", ps)
	}
	p := ps[0].(map[string]any)
	g, _ := p["grant"].(map[string]any)
	if p["id"] != "com.example.echo" || p["version"] != "1.0.0" || p["publisher"] != "Example" || g == nil ||
		fmt.Sprint(g["filesystem_read"]) != "[workspace://docs/**]" {
		t.Errorf("plugin = %v", p)
	}
	if code, m := api.call(t, "GET", "/api/v1/plugins", ci, ""); code != 403 {
		t.Errorf("runner lists plugins: %d %v", code, m)
	}
	for _, tok := range []string{vic, ci} {
		if strings.Contains(answers.String()+outputs.String(), tok) {
			t.Error("a token is in an answer or an output")
		}
	}
}

// waitingRun is a headless scripted `norma run` in the background that
// files an approval request in store db and waits up to wait for its
// decision; the test kills it at the end.
type waitingRun struct {
	ws          string
	out, errOut *syncbuf.Buffer
	done        chan error // the run's end; a receiver puts the value back
}

func startWaitingRun(t *testing.T, runHome, db, script, wait string) *waitingRun {
	t.Helper()
	r := &waitingRun{ws: t.TempDir(), out: &syncbuf.Buffer{}, errOut: &syncbuf.Buffer{}, done: make(chan error, 1)}
	file := filepath.Join(t.TempDir(), "script.yaml")
	if err := os.WriteFile(file, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	run := exec.Command(normaBin(t), "--home", runHome, "--store", db, "run", "--workspace", r.ws, "--provider", "scripted",
		"--script", file, "--json", "--approval-wait", wait, "count")
	run.Env = append(os.Environ(), isolated(t)...)
	run.Stdout, run.Stderr, run.Stdin = r.out, r.errOut, strings.NewReader("")
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { r.done <- run.Wait() }()
	t.Cleanup(func() { run.Process.Kill(); r.done <- <-r.done })
	return r
}
