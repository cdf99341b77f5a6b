package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/norma-run/norma/sandbox/sandboxtest"
)

// proxyClient starts `norma mcp proxy NAME ARGS...` (the built binary, in
// the workspace) as a real MCP client does, over stdio, and connects to it
// with the go-sdk client; elicit, when set, answers the proxy's
// elicitations (and declares the capability); proto is the protocol
// version it asks for ("" the latest). The session is closed at
// the end of the test, and the proxy's stderr checked for the canary.
func (e runEnv) proxyClient(t *testing.T, elicit func(*mcp.ElicitRequest) (*mcp.ElicitResult, error), proto, name string, args ...string) *mcp.ClientSession {
	t.Helper()
	cmd := exec.Command(normaBin(t), append([]string{"--home", e.home, "mcp", "proxy", name}, args...)...)
	cmd.Dir = e.ws
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	opts := &mcp.ClientOptions{}
	if elicit != nil {
		opts.ElicitationHandler = func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) { return elicit(r) }
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "norma-door-test", Version: "1"}, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	s, err := c.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 10 * time.Second}, &mcp.ClientSessionOptions{ProtocolVersion: proto})
	if err != nil {
		cancel()
		t.Fatalf("connect to the proxy: %v\n%s", err, stderr.String())
	}
	t.Cleanup(func() {
		s.Close()
		cancel()
		if strings.Contains(stderr.String(), runCanary) {
			t.Errorf("canary on the proxy's stderr:\n%s", stderr.String())
		}
	})
	return s
}

// callTool calls tool with args and returns the result's text and reason.
func callTool(t *testing.T, s *mcp.ClientSession, tool string, args map[string]any) (text, reason string, isErr bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("tools/call %s: %v", tool, err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	reason, _ = res.Meta["norma/reason"].(string)
	if strings.Contains(b.String(), runCanary) {
		t.Errorf("%s: the canary reached the client: %q", tool, b.String())
	}
	return b.String(), reason, res.IsError
}

// elicitAnswer answers an elicitation with action (and decision), counting
// the asks and keeping their messages.
func elicitAnswer(n *atomic.Int32, msgs *[]string, action, decision string) func(*mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	return func(r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		n.Add(1)
		*msgs = append(*msgs, r.Params.Message)
		res := &mcp.ElicitResult{Action: action}
		if action == "accept" {
			res.Content = map[string]any{"decision": decision}
		}
		return res, nil
	}
}

// auditEvents returns the events of the state directory's audit log.
func (e runEnv) auditEvents(t *testing.T) []map[string]any {
	t.Helper()
	return auditEvents(t, e.home)
}

// callReasons lists the reasons of tool's final gate events in the log
// (tool_call_finished for a call that ran, capability_decision for one
// refused before it ran): one per call.
func callReasons(evs []map[string]any, tool string) []string {
	var out []string
	for _, ev := range evs {
		if ev["tool"] != tool {
			continue
		}
		if ev["type"] == "tool_call_finished" || ev["type"] == "capability_decision" {
			out = append(out, toString(ev["reason"]))
		}
	}
	return out
}

// TestMCPProxyFilesystemDoor: server-filesystem, added with read of the
// workspace and write of out/ granted (writes need approval), served by
// `norma mcp proxy fs` to a go-sdk client over stdio. tools/list shows
// the server's own names with their schemas; a read goes through; .env
// is refused and its canary reaches nobody; a write the client approves
// through elicitation runs once, one it declines does nothing; an
// approved write outside out/ fails in the sandbox and writes nothing;
// --headless refuses at once and asks nobody; without elicitation a
// write waits for `norma approvals approve` from another process, then
// runs. Every call is in the audit log, and the log verifies.
func TestMCPProxyFilesystemDoor(t *testing.T) {
	requireNPM(t)
	e := newRunEnv(t)
	os.MkdirAll(filepath.Join(e.ws, "out"), 0o755)
	e.addNPM(t, "fs", "filesystem", "  filesystem:\n    read: [\"workspace://**\"]\n    write: [\"workspace://out/**\"]\n", nil, e.ws)
	p := func(rel string) string { return filepath.Join(e.ws, rel) }

	var asked atomic.Int32
	var msgs []string
	s := e.proxyClient(t, elicitAnswer(&asked, &msgs, "accept", "approve"), "", "fs")
	ctx := context.Background()
	tl, err := s.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]*mcp.Tool{}
	for _, tool := range tl.Tools {
		names[tool.Name] = tool
		if strings.HasPrefix(tool.Name, "mcp__") {
			t.Errorf("tools/list: %s carries the gate's name", tool.Name)
		}
	}
	if w := names["write_file"]; w == nil || !strings.Contains(string(mustJSON(t, w.InputSchema)), `"content"`) {
		t.Fatalf("tools/list: no write_file with its schema: %v", names)
	}
	if names["read_text_file"] == nil {
		t.Fatalf("tools/list: no read_text_file: %v", names)
	}

	if text, reason, isErr := callTool(t, s, "read_text_file", map[string]any{"path": p("docs/intro.md")}); isErr || reason != "ALLOWED" || !strings.Contains(text, "hello") {
		t.Errorf("allowed read: %q %s %v", text, reason, isErr)
	}
	if text, _, isErr := callTool(t, s, "read_text_file", map[string]any{"path": p(".env")}); !isErr {
		t.Errorf("reading .env was not refused: %q", text)
	}
	// Approved through elicitation: it runs once.
	if text, reason, isErr := callTool(t, s, "write_file", map[string]any{"path": p("out/ok.md"), "content": "approved"}); isErr || reason != "ALLOWED" {
		t.Errorf("approved write: %q %s", text, reason)
	}
	if b, err := os.ReadFile(p("out/ok.md")); err != nil || string(b) != "approved" {
		t.Errorf("out/ok.md = %q, %v", b, err)
	}
	if asked.Load() != 1 || !strings.Contains(msgs[0], "write_file") || !strings.Contains(msgs[0], "out/ok.md") {
		t.Errorf("elicitation: %d asks, %q", asked.Load(), msgs)
	}
	// Approved, but outside the write grant: the sandbox refuses it.
	if text, _, isErr := callTool(t, s, "write_file", map[string]any{"path": p("docs/evil.md"), "content": "evil"}); !isErr {
		t.Errorf("write outside the grant reported success: %q", text)
	}
	if _, err := os.Stat(p("docs/evil.md")); err == nil {
		t.Error("docs/evil.md was written outside the write grant")
	}

	// A client of an older protocol is asked by elicitation/create
	// during the call (the SDK's way for it); it approves: the call runs
	// once.
	var oasked atomic.Int32
	var omsgs []string
	o := e.proxyClient(t, elicitAnswer(&oasked, &omsgs, "accept", "approve"), "2025-11-25", "fs")
	if text, reason, isErr := callTool(t, o, "write_file", map[string]any{"path": p("out/old.md"), "content": "old"}); isErr || reason != "ALLOWED" {
		t.Errorf("approved write, older protocol: %q %s", text, reason)
	}
	if b, err := os.ReadFile(p("out/old.md")); err != nil || string(b) != "old" || oasked.Load() != 1 || !strings.Contains(omsgs[0], "out/old.md") {
		t.Errorf("out/old.md = %q, %v; %d asks", b, err, oasked.Load())
	}

	// The client declines: nothing happens.
	var declined atomic.Int32
	var dmsgs []string
	d := e.proxyClient(t, elicitAnswer(&declined, &dmsgs, "decline", ""), "2025-11-25", "fs")
	if text, reason, isErr := callTool(t, d, "write_file", map[string]any{"path": p("out/no.md"), "content": "no"}); !isErr || reason != "APPROVAL_DENIED" ||
		!strings.HasPrefix(text, "norma: APPROVAL_DENIED:") {
		t.Errorf("declined write: %q %s %v", text, reason, isErr)
	}
	if _, err := os.Stat(p("out/no.md")); err == nil || declined.Load() != 1 {
		t.Errorf("declined write: out/no.md exists (%v) or %d asks", err, declined.Load())
	}

	// --headless: refused at once, nobody asked, even a client that could
	// answer.
	var hasked atomic.Int32
	var hmsgs []string
	h := e.proxyClient(t, elicitAnswer(&hasked, &hmsgs, "accept", "approve"), "", "fs", "--headless")
	start := time.Now()
	if text, reason, isErr := callTool(t, h, "write_file", map[string]any{"path": p("out/h.md"), "content": "h"}); !isErr || reason != "MODE_DENIED" ||
		!strings.HasPrefix(text, "norma: MODE_DENIED:") {
		t.Errorf("headless write: %q %s %v", text, reason, isErr)
	}
	if _, err := os.Stat(p("out/h.md")); err == nil || hasked.Load() != 0 || time.Since(start) > 30*time.Second {
		t.Errorf("headless write: out/h.md exists (%v), %d asks, %s", err, hasked.Load(), time.Since(start))
	}

	// No elicitation: the call waits for `norma approvals approve` in
	// another process.
	q := e.proxyClient(t, nil, "", "fs", "--approval-wait", "90s")
	approved := make(chan string, 1)
	go func() {
		deadline := time.Now().Add(80 * time.Second)
		for time.Now().Before(deadline) {
			_, out, _ := door(t, "--home", e.home, "approvals", "list", "--json")
			var recs []map[string]any
			json.Unmarshal([]byte(out), &recs)
			for _, r := range recs {
				if r["tool"] == "mcp__fs__write_file" {
					id := toString(r["id"])
					code, _, errs := door(t, "--home", e.home, "approvals", "approve", id)
					if code != 0 {
						approved <- "approve: " + errs
						return
					}
					approved <- id
					return
				}
			}
			time.Sleep(300 * time.Millisecond)
		}
		approved <- "no pending approval"
	}()
	if text, reason, isErr := callTool(t, q, "write_file", map[string]any{"path": p("out/queued.md"), "content": "queued"}); isErr || reason != "ALLOWED" {
		t.Errorf("queued write: %q %s", text, reason)
	}
	if id := <-approved; !strings.HasPrefix(id, "apr_") {
		t.Errorf("approving from another process: %s", id)
	}
	if b, err := os.ReadFile(p("out/queued.md")); err != nil || string(b) != "queued" {
		t.Errorf("out/queued.md = %q, %v", b, err)
	}

	for _, c := range []*mcp.ClientSession{s, o, d, h, q} {
		c.Close()
	}
	evs := e.auditEvents(t)
	reads, writes := callReasons(evs, "mcp__fs__read_text_file"), callReasons(evs, "mcp__fs__write_file")
	if len(reads) != 2 || reads[0] != "ALLOWED" {
		t.Errorf("audited reads: %v", reads)
	}
	count := func(list []string, want string) (n int) {
		for _, x := range list {
			if x == want {
				n++
			}
		}
		return n
	}
	// ok, old and queued ran; h was refused by the mode; ok, evil, old
	// and no were held for the client's answer first.
	if count(writes, "ALLOWED") != 3 || count(writes, "MODE_DENIED") != 1 || count(writes, "APPROVAL_REQUIRED") < 4 {
		t.Errorf("audited writes: %v", writes)
	}
	var decisions []string
	for _, ev := range evs {
		if ev["tool"] == "mcp__fs__write_file" && strings.HasPrefix(toString(ev["type"]), "approval_") {
			decisions = append(decisions, toString(ev["type"]))
		}
	}
	if d := strings.Join(decisions, " "); strings.Count(d, "approval_granted") != 4 || strings.Count(d, "approval_denied") != 1 {
		t.Errorf("audited approvals: %v", decisions)
	}
	if code, out, errs := door(t, "--home", e.home, "audit", "verify"); code != 0 {
		t.Errorf("audit verify: exit %d\n%s%s", code, out, errs)
	}
	// Closing the client stopped the proxy and its server.
	if procs := processesWith(e.ws); len(procs) > 0 {
		t.Errorf("processes left with the workspace in their command line: %v", procs)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// processesWith lists the processes whose command line contains s, after
// a grace period for the ones being stopped.
func processesWith(s string) []string {
	var out []string
	for range 50 {
		out = out[:0]
		ents, _ := os.ReadDir("/proc")
		for _, e := range ents {
			b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
			if err == nil && bytes.Contains(b, []byte(s)) && e.Name() != "self" {
				out = append(out, e.Name()+": "+strings.ReplaceAll(string(b), "\x00", " "))
			}
		}
		if len(out) == 0 {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return out
}

// inspector returns the MCP Inspector CLI ($NORMA_TEST_MCP_INSPECTOR,
// installed by .ci/run): a skip without it, a failure under
// NORMA_REQUIRE_SANDBOX=1.
func inspector(t *testing.T) string {
	t.Helper()
	p := os.Getenv("NORMA_TEST_MCP_INSPECTOR")
	if p == "" {
		if os.Getenv("NORMA_REQUIRE_SANDBOX") == "1" {
			t.Fatal("NORMA_TEST_MCP_INSPECTOR is required")
		}
		t.Skip("NORMA_TEST_MCP_INSPECTOR is not set")
	}
	return p
}

// inspect runs `mcp-inspector --cli norma --home HOME mcp proxy ARGS...`
// in the workspace and returns its exit code and the JSON it printed.
func (e runEnv) inspect(t *testing.T, args ...string) (int, map[string]any, string) {
	t.Helper()
	cmd := exec.Command(inspector(t), append([]string{"--cli", normaBin(t), "--home", e.home, "mcp", "proxy"}, args...)...)
	cmd.Dir = e.ws
	code, out, errs := doorCmd(t, cmd)
	i := strings.Index(out, "{")
	var v map[string]any
	if i < 0 || json.NewDecoder(strings.NewReader(out[i:])).Decode(&v) != nil {
		t.Fatalf("inspector %v: exit %d, no JSON:\n%s\n%s", args, code, out, errs)
	}
	return code, v, errs
}

// TestMCPProxyInspectorDoor: the MCP Inspector CLI, a second real client,
// runs `norma mcp proxy fs`: tools/list gives the server's tools under
// their own names; an allowed read returns the file; a write under
// --headless is a tool error carrying MODE_DENIED, and nothing is
// written.
func TestMCPProxyInspectorDoor(t *testing.T) {
	requireNPM(t)
	inspector(t)
	e := newRunEnv(t)
	os.MkdirAll(filepath.Join(e.ws, "out"), 0o755)
	e.addNPM(t, "fs", "filesystem", "  filesystem:\n    read: [\"workspace://**\"]\n    write: [\"workspace://out/**\"]\n", nil, e.ws)

	code, list, errs := e.inspect(t, "fs", "--method", "tools/list")
	tools, _ := list["tools"].([]any)
	var names []string
	for _, x := range tools {
		m, _ := x.(map[string]any)
		names = append(names, toString(m["name"]))
		if m["inputSchema"] == nil {
			t.Errorf("tools/list: %v has no inputSchema", m["name"])
		}
	}
	if code != 0 || !strings.Contains(" "+strings.Join(names, " ")+" ", " read_text_file ") || !strings.Contains(strings.Join(names, " "), "write_file") ||
		strings.Contains(strings.Join(names, " "), "mcp__") {
		t.Fatalf("tools/list: exit %d, %v\n%s", code, names, errs)
	}

	text := func(v map[string]any) string {
		var b strings.Builder
		c, _ := v["content"].([]any)
		for _, x := range c {
			m, _ := x.(map[string]any)
			b.WriteString(toString(m["text"]))
		}
		return b.String()
	}
	meta := func(v map[string]any) string { m, _ := v["_meta"].(map[string]any); return toString(m["norma/reason"]) }
	code, res, errs := e.inspect(t, "fs", "--method", "tools/call", "--tool-name", "read_text_file", "--tool-arg", "path="+filepath.Join(e.ws, "docs/intro.md"))
	if code != 0 || res["isError"] == true || meta(res) != "ALLOWED" || !strings.Contains(text(res), "hello") {
		t.Errorf("allowed read: exit %d, %v\n%s", code, res, errs)
	}

	target := filepath.Join(e.ws, "out", "inspected.md")
	_, res, errs = e.inspect(t, "fs", "--headless", "--method", "tools/call", "--tool-name", "write_file", "--tool-arg", "path="+target, "--tool-arg", "content=x")
	if res["isError"] != true || meta(res) != "MODE_DENIED" || !strings.HasPrefix(text(res), "norma: MODE_DENIED:") {
		t.Errorf("denied write: %v\n%s", res, errs)
	}
	if _, err := os.Stat(target); err == nil {
		t.Error("the denied write wrote the file")
	}
	evs := e.auditEvents(t)
	if r := callReasons(evs, "mcp__fs__read_text_file"); len(r) != 1 || r[0] != "ALLOWED" {
		t.Errorf("audited reads: %v", r)
	}
	if r := callReasons(evs, "mcp__fs__write_file"); len(r) != 1 || r[0] != "MODE_DENIED" {
		t.Errorf("audited writes: %v", r)
	}
}

// TestMCPProxyEverythingDoor: server-everything (installed as a dev
// plugin) through `norma mcp proxy`: its resources and prompts are
// listed, read and got through the gate's feature tools, as in a run;
// a settings deny rule on ReadMcpResource refuses resources/read with
// RULE_DENIED, and the refusal is audited.
func TestMCPProxyEverythingDoor(t *testing.T) {
	sandboxtest.Require(t)
	requireNPM(t)
	e := newRunEnv(t)
	pkg := everythingPkg(t)
	grant := grantFile(t, "  {}\n")
	if code, out, errs := door(t, "--home", e.home, "plugin", "install", "--dev", pkg, "--yes", "--grant", grant); code != 0 {
		t.Fatalf("install: exit %d\n%s%s", code, out, errs)
	}
	s := e.proxyClient(t, nil, "", "local.everything")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const doc = "demo://resource/static/document/features.md"
	rl, err := s.ListResources(ctx, nil)
	if err != nil {
		t.Fatalf("resources/list: %v", err)
	}
	found := false
	for _, r := range rl.Resources {
		found = found || r.URI == doc
	}
	if !found {
		t.Errorf("resources/list lacks %s: %d resources", doc, len(rl.Resources))
	}
	rr, err := s.ReadResource(ctx, &mcp.ReadResourceParams{URI: doc})
	if err != nil || len(rr.Contents) != 1 || !strings.Contains(rr.Contents[0].Text, "#") {
		t.Errorf("resources/read: %v, %v", rr, err)
	}
	pl, err := s.ListPrompts(ctx, nil)
	if err != nil {
		t.Fatalf("prompts/list: %v", err)
	}
	var prompts []string
	for _, p := range pl.Prompts {
		prompts = append(prompts, p.Name)
	}
	if !slices.Contains(prompts, "args-prompt") {
		t.Errorf("prompts/list: %v", prompts)
	}
	gp, err := s.GetPrompt(ctx, &mcp.GetPromptParams{Name: "args-prompt", Arguments: map[string]string{"city": "Lyon"}})
	if err != nil || len(gp.Messages) != 1 || !strings.Contains(gp.Messages[0].Content.(*mcp.TextContent).Text, "What's weather in Lyon?") {
		t.Errorf("prompts/get: %v, %v", gp, err)
	}
	s.Close()

	settings := filepath.Join(t.TempDir(), "settings.yaml")
	os.WriteFile(settings, []byte("permissions:\n  deny: [\"ReadMcpResource\"]\n"), 0o644)
	d := e.proxyClient(t, nil, "", "local.everything", "--settings", settings)
	if _, err := d.ReadResource(ctx, &mcp.ReadResourceParams{URI: doc}); err == nil || !strings.Contains(err.Error(), "norma: RULE_DENIED:") {
		t.Errorf("denied resources/read: %v", err)
	}
	d.Close()
	if r := callReasons(e.auditEvents(t), "ReadMcpResource"); len(r) != 2 || r[0] != "ALLOWED" || r[1] != "RULE_DENIED" {
		t.Errorf("audited reads: %v", r)
	}
}

// TestMCPProxyStdioDoor speaks raw JSON-RPC to `norma mcp proxy` over
// its stdin: every line of its stdout is a JSON-RPC frame (the server's
// stderr, with a terminal escape, never reaches it; Norma's notes go to
// stderr, escaped); the tool works; closing stdin ends the proxy (exit
// 0) and its server.
func TestMCPProxyStdioDoor(t *testing.T) {
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("no /usr/bin/python3")
	}
	e := newRunEnv(t)
	src := t.TempDir()
	p := echoServer(t, src, "echo-server")
	b, _ := os.ReadFile(p)
	noisy := strings.Replace(string(b), "def main():\n", "def main():\n    sys.stderr.write('\\x1b]0;pwned\\x07 STDERR-MARK\\n'); sys.stderr.flush()\n", 1)
	os.WriteFile(p, []byte(noisy), 0o755)
	add := exec.Command(normaBin(t), "--home", e.home, "mcp", "add", "echo", "--workspace", e.ws, "--grant", grantFile(t, "  {}\n"), "--yes", "--", "./echo-server")
	add.Dir = src
	if code, out, errs := doorCmd(t, add); code != 0 {
		t.Fatalf("mcp add: exit %d\n%s%s", code, out, errs)
	}
	in := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
{"jsonrpc":"2.0","id":2,"method":"tools/list"}
{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}
`
	cmd := exec.Command(normaBin(t), "--home", e.home, "mcp", "proxy", "echo")
	cmd.Dir, cmd.Stdin = e.ws, &slowReader{lines: strings.SplitAfter(in, "\n")}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	out, errs := stdout.String(), stderr.String()
	if err != nil || time.Since(start) > time.Minute {
		t.Fatalf("proxy: %v after %s\n%s", err, time.Since(start), errs)
	}
	var ids []float64
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var f map[string]any
		if err := json.Unmarshal([]byte(l), &f); err != nil || f["jsonrpc"] != "2.0" {
			t.Errorf("stdout line is not a JSON-RPC frame: %q", l)
			continue
		}
		if id, ok := f["id"].(float64); ok {
			ids = append(ids, id)
		}
	}
	if !slices.Equal(ids, []float64{1, 2, 3}) || !strings.Contains(out, `echo: hi`) {
		t.Errorf("answers %v:\n%s", ids, out)
	}
	if strings.Contains(out, "STDERR-MARK") || strings.Contains(out+errs, "\x1b]0;") {
		t.Errorf("the server's stderr or a raw escape reached the output:\n%q\n%q", out, errs)
	}
	if procs := processesWith(filepath.Join(e.home, "plugins")); len(procs) > 0 {
		t.Errorf("processes left: %v", procs)
	}
}

// slowReader gives one line per read, then, after a pause for the
// answers, EOF: a client that sends its requests and closes stdin.
type slowReader struct{ lines []string }

func (r *slowReader) Read(p []byte) (int, error) {
	if len(r.lines) == 0 {
		time.Sleep(2 * time.Second)
		return 0, io.EOF
	}
	time.Sleep(100 * time.Millisecond)
	n := copy(p, r.lines[0])
	r.lines[0] = r.lines[0][n:]
	if r.lines[0] == "" {
		r.lines = r.lines[1:]
	}
	return n, nil
}
