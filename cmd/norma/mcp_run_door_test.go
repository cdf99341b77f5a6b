package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The done-when tests of `norma mcp add`: each of the four npm servers at
// mcpServerVersion is added as a user types it, then `norma run` (the
// scripted provider, through the built binary) gets its legitimate calls
// through and its ungranted ones refused, with nothing done.

// call is a scripted tool call.
func call(id, tool, input string) string {
	return "      - {id: " + id + ", name: " + tool + ", input: " + input + "}\n"
}

func oneTurn(calls ...string) string {
	return "turns:\n  - tool_calls:\n" + strings.Join(calls, "") + "  - text: done\n"
}

// wantCall checks the tool_call event of id: its reason, and that its
// result (what the model and the user see) contains want.
func wantCall(t *testing.T, events []map[string]any, id, reason, want string) map[string]any {
	t.Helper()
	c := toolCalls(events)[id]
	if c == nil {
		t.Fatalf("%s: no tool_call event in %v", id, events)
	}
	if c["reason"] != reason {
		t.Errorf("%s: reason %v, want %s (%v)", id, c["reason"], reason, c)
	}
	if got, _ := c["result"].(string); want != "" && !strings.Contains(got, want) {
		t.Errorf("%s: result %q, want it to contain %q (%v)", id, got, want, c)
	}
	return c
}

// TestMCPRunFilesystemDoor: server-filesystem added with the workspace as
// its argument, granted read of the workspace and write of out/ only.
// Reading a workspace file works; a write the grant leaves needing
// approval is refused under dontAsk (MODE_DENIED); an approved write
// outside out/ fails inside the sandbox; .env is never read; nothing is
// written but the approved write into out/.
func TestMCPRunFilesystemDoor(t *testing.T) {
	requireNPM(t)
	e := newRunEnv(t)
	os.MkdirAll(filepath.Join(e.ws, "out"), 0o755)
	e.addNPM(t, "fs", "filesystem", "  filesystem:\n    read: [\"workspace://**\"]\n    write: [\"workspace://out/**\"]\n", nil, e.ws)
	p := func(rel string) string { return filepath.Join(e.ws, rel) }

	code, events, stderr := e.doorRun(t, oneTurn(
		call("r1", "mcp__fs__read_text_file", `{path: "`+p("docs/intro.md")+`"}`),
		call("w1", "mcp__fs__write_file", `{path: "`+p("out/a.md")+`", content: "x"}`),
		call("env", "mcp__fs__read_text_file", `{path: "`+p(".env")+`"}`),
	), "--mode", "dontAsk")
	if code != 0 {
		t.Fatalf("run: exit %d\n%s", code, stderr)
	}
	wantCall(t, events, "r1", "ALLOWED", "hello")
	wantCall(t, events, "w1", "MODE_DENIED", "")
	if c := toolCalls(events)["env"]; c["is_error"] != true {
		t.Errorf("reading .env: %v", c)
	}
	if _, err := os.Stat(p("out/a.md")); err == nil {
		t.Error("out/a.md was written though the call was refused")
	}

	code, events, stderr = e.doorRun(t, oneTurn(
		call("ok", "mcp__fs__write_file", `{path: "`+p("out/ok.md")+`", content: "approved"}`),
		call("outside", "mcp__fs__write_file", `{path: "`+p("docs/evil.md")+`", content: "evil"}`),
	), "--yes")
	if code != 0 {
		t.Fatalf("run --yes: exit %d\n%s", code, stderr)
	}
	wantCall(t, events, "ok", "ALLOWED", "")
	if b, err := os.ReadFile(p("out/ok.md")); err != nil || string(b) != "approved" {
		t.Errorf("control: out/ok.md = %q, %v", b, err)
	}
	if c := toolCalls(events)["outside"]; c["is_error"] != true {
		t.Errorf("write outside the grant reported success: %v", c)
	}
	if _, err := os.Stat(p("docs/evil.md")); err == nil {
		t.Error("docs/evil.md was written outside the write grant")
	}
}

// TestMCPRunMemoryDoor: server-memory keeps its graph in its data
// directory (--env MEMORY_FILE_PATH=${data}/memory.jsonl). An approved
// create_entities and a read_graph work and the graph is on disk; under
// dontAsk a create_entities is refused (MODE_DENIED) and the graph is
// unchanged.
func TestMCPRunMemoryDoor(t *testing.T) {
	requireNPM(t)
	e := newRunEnv(t)
	e.addNPM(t, "memory", "memory", "  {}\n", []string{"--env", "MEMORY_FILE_PATH=${data}/memory.jsonl"})
	entity := func(name string) string {
		return `{entities: [{name: ` + name + `, entityType: project, observations: ["confines tools"]}]}`
	}
	code, events, stderr := e.doorRun(t, "turns:\n  - tool_calls:\n"+call("c1", "mcp__memory__create_entities", entity("Norma"))+
		"  - tool_calls:\n"+call("r1", "mcp__memory__read_graph", "{}")+"  - text: done\n", "--yes")
	if code != 0 {
		t.Fatalf("run: exit %d\n%s", code, stderr)
	}
	wantCall(t, events, "c1", "ALLOWED", "Norma")
	wantCall(t, events, "r1", "ALLOWED", "confines tools")
	graph := filepath.Join(e.home, "plugins", "local.mcp.memory", "data", "memory.jsonl")
	before, err := os.ReadFile(graph)
	if err != nil || !strings.Contains(string(before), "Norma") {
		t.Fatalf("the graph in the data directory: %q, %v", before, err)
	}

	code, events, stderr = e.doorRun(t, oneTurn(call("c2", "mcp__memory__create_entities", entity("Intruder"))), "--mode", "dontAsk")
	if code != 0 {
		t.Fatalf("run dontAsk: exit %d\n%s", code, stderr)
	}
	wantCall(t, events, "c2", "MODE_DENIED", "")
	if after, _ := os.ReadFile(graph); string(after) != string(before) {
		t.Errorf("the refused call changed the graph: %q", after)
	}
}

// TestMCPRunSequentialThinkingDoor: one thought goes through (the tool
// claims to only read: no approval); a settings deny rule on it is
// applied (RULE_DENIED) and the server never sees the call.
func TestMCPRunSequentialThinkingDoor(t *testing.T) {
	requireNPM(t)
	e := newRunEnv(t)
	e.addNPM(t, "thinking", "sequential-thinking", "  {}\n", nil)
	thought := `{thought: "one step", nextThoughtNeeded: false, thoughtNumber: 1, totalThoughts: 1}`
	code, events, stderr := e.doorRun(t, oneTurn(call("t1", "mcp__thinking__sequentialthinking", thought)), "--mode", "dontAsk")
	if code != 0 {
		t.Fatalf("run: exit %d\n%s", code, stderr)
	}
	wantCall(t, events, "t1", "ALLOWED", "thoughtNumber")

	settings := filepath.Join(t.TempDir(), "settings.yaml")
	os.WriteFile(settings, []byte("permissions:\n  deny: [\"mcp__thinking__sequentialthinking\"]\n"), 0o644)
	code, events, stderr = e.doorRun(t, oneTurn(call("t2", "mcp__thinking__sequentialthinking", thought)), "--mode", "dontAsk", "--settings", settings)
	if code != 0 {
		t.Fatalf("run with the deny rule: exit %d\n%s", code, stderr)
	}
	if c := wantCall(t, events, "t2", "RULE_DENIED", ""); c["result"] != nil && c["result"] != "" {
		t.Errorf("the denied call has a result: %v", c)
	}
}

// TestMCPRunEverythingDoor: server-everything's echo goes through; its
// gzip-file-as-resource, not read-only, needs approval and is refused
// under dontAsk (MODE_DENIED).
func TestMCPRunEverythingDoor(t *testing.T) {
	requireNPM(t)
	e := newRunEnv(t)
	e.addNPM(t, "everything", "everything", "  {}\n", nil)
	code, events, stderr := e.doorRun(t, oneTurn(
		call("e1", "mcp__everything__echo", `{message: "hello through norma"}`),
		call("g1", "mcp__everything__gzip-file-as-resource", `{name: "x.gz", data: "data:text/plain;base64,aGk="}`),
	), "--mode", "dontAsk")
	if code != 0 {
		t.Fatalf("run: exit %d\n%s", code, stderr)
	}
	wantCall(t, events, "e1", "ALLOWED", "hello through norma")
	wantCall(t, events, "g1", "MODE_DENIED", "")
}
