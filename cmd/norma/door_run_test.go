package main

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/norma-run/norma/agent"
	"github.com/norma-run/norma/capability"
)

// hostileScript is a session whose model and tools print what a terminal
// would act on: an assistant text and a tool name with escape sequences,
// a file whose lines carry them, a Bash command that prints them and
// dumps its environment (where the provider key must not be), and a read
// of .env, which holds the canary.
const hostileScript = `turns:
  - text: "Reading \x1b[2J\x1b]0;pwned\x07 now.\n"
    tool_calls:
      - {id: t1, name: Read, input: {path: docs/long.md}}
      - {id: t2, name: Read, input: {path: .env}}
      - {id: t3, name: "Evil\x1b[31mTool", input: {}}
      - {id: t4, name: Bash, input: {command: "printf 'a\\033[31mred\\n'; env"}}
  - text: "Done."
`

// TestDoorRunOutput: `norma run` shows its work. Piped, the text output
// has no colour and no escape byte at all (everything the model or a
// tool wrote is escaped); each call's line names the tool once, its
// target, decision, reason and, for a refusal, the layer; the first lines
// of each result follow (at most 3), and every error's message. --json
// carries the capped result and the message. The canary of .env and of
// the provider key is in neither.
func TestDoorRunOutput(t *testing.T) {
	e := newRunEnv(t)
	long := "line one\x1b[1m\nline two\nline three\nline four\nline five\n"
	os.WriteFile(e.ws+"/docs/long.md", []byte(long), 0o644)
	script := e.script(t, hostileScript)
	run := func(args ...string) (int, string, string) {
		cmd := exec.Command(normaBin(t), append([]string{"--home", e.home, "run", "--workspace", e.ws, "--script", script, "--yes"}, args...)...)
		cmd.Env = append(os.Environ(), "ANTHROPIC_API_KEY=sk-"+runCanary, "OPENAI_API_KEY=sk-"+runCanary, "NO_COLOR=")
		return doorCmd(t, cmd)
	}
	code, out, errs := run("go")
	if code != 0 {
		t.Fatalf("run: exit %d\n%s%s", code, out, errs)
	}
	if strings.ContainsAny(out+errs, "\x1b\x07\r") {
		t.Errorf("a control byte reached the terminal:\n%q", out)
	}
	for _, want := range []string{
		`Reading \x1b[2J\x1b]0;pwned\x07 now.`,
		"⏺ Read fs.read workspace://docs/long.md → allow ALLOWED",
		`  ⎿ `, `line one\x1b[1m`, "line two", "line three", "… 2 more lines",
		"⏺ Read fs.read workspace://.env → deny FILESYSTEM_READ_DENIED", ", layer builtin)",
		"denied: FILESYSTEM_READ_DENIED (layer builtin",
		`⏺ Evil\x1b[31mTool → deny TOOL_UNKNOWN`, `unknown tool "Evil\x1b[31mTool"`,
		`a\x1b[31mred`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("text output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "line four") {
		t.Errorf("more than 3 lines of a result:\n%s", out)
	}
	if !bytes.Contains([]byte(out), []byte("⏺ Bash process.spawn")) {
		t.Errorf("no Bash line:\n%s", out)
	}

	code, out, errs = run("--json", "go")
	if code != 0 {
		t.Fatalf("run --json: exit %d\n%s%s", code, out, errs)
	}
	calls := toolCalls(jsonLines(t, out))
	if r, _ := calls["t1"]["result"].(string); !strings.Contains(r, "line one\x1b[1m") || !strings.Contains(r, "line five") {
		t.Errorf("t1 result = %q", r)
	}
	if m, _ := calls["t2"]["message"].(string); !strings.Contains(m, "FILESYSTEM_READ_DENIED") || calls["t2"]["layer"] != "builtin" || calls["t2"]["result"] != nil {
		t.Errorf("t2 = %v", calls["t2"])
	}
	if r, _ := calls["t4"]["result"].(string); !strings.Contains(r, "red") {
		t.Errorf("t4 result = %q", r)
	}
	checkJSONKeys(t, "run --json", out)
}

// TestRunPrinterColor: colour only on a terminal, never for --json or
// with NO_COLOR set (even empty); a coloured line still escapes what the
// model wrote.
func TestRunPrinterColor(t *testing.T) {
	t.Setenv("NO_COLOR", "")
	os.Unsetenv("NO_COLOR")
	if !useColor(true, false) || useColor(false, false) || useColor(true, true) {
		t.Error("useColor without NO_COLOR")
	}
	t.Setenv("NO_COLOR", "")
	if useColor(true, false) {
		t.Error("NO_COLOR set (empty) must turn colour off")
	}
	var b bytes.Buffer
	p := &runPrinter{w: &b, color: true, last: time.Now()}
	p.event(agent.Event{Kind: agent.EventToolCall, Call: &agent.CallRecord{Tool: "mcp__x__y", Target: "mcp__x__y",
		Decision: capability.Deny.String(), Reason: "TOOL_UNKNOWN", Layer: capability.LayerGate, IsError: true, Message: "no \x1b[2J"}})
	got := b.String()
	if !strings.Contains(got, "\x1b[31m") || !strings.Contains(got, `no \x1b[2J`) || strings.Contains(got, "no \x1b[2J") {
		t.Errorf("coloured output = %q", got)
	}
	if strings.Count(got, "mcp__x__y") != 1 {
		t.Errorf("the tool name is printed %d times: %q", strings.Count(got, "mcp__x__y"), got)
	}
}
