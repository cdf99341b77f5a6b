package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/norma-run/norma/sandbox/sandboxtest"
)

// everythingPkg builds a dev package of @modelcontextprotocol/server-everything
// from $NORMA_TEST_MCP_SERVERS (a prefix whose node_modules holds it,
// installed by .ci/run) or a fresh npm install, with the manifest
// `norma plugin wrap` proposes, every tool made a read without approval.
func everythingPkg(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat("/usr/bin/node"); err != nil {
		t.Skip("no /usr/bin/node")
	}
	src := os.Getenv("NORMA_TEST_MCP_SERVERS")
	if src == "" {
		src = t.TempDir()
		if b, err := exec.Command("npm", "install", "--prefix", src, "--no-audit", "--no-fund", "@modelcontextprotocol/server-everything@2026.8.31").CombinedOutput(); err != nil {
			if os.Getenv("NORMA_REQUIRE_SANDBOX") == "1" {
				t.Fatalf("npm install: %v\n%s", err, b)
			}
			t.Skipf("npm install: %v", err)
		}
	}
	pkg := filepath.Join(t.TempDir(), "everything")
	os.MkdirAll(pkg, 0o755)
	if b, err := exec.Command("cp", "-a", filepath.Join(src, "node_modules"), pkg).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, b)
	}
	os.RemoveAll(filepath.Join(pkg, "node_modules", ".bin"))
	os.MkdirAll(filepath.Join(pkg, "bin"), 0o755)
	entry := filepath.Join(pkg, "bin", "server.mjs")
	os.WriteFile(entry, []byte("#!/usr/bin/node\nprocess.argv.push('stdio');\nawait import('../node_modules/@modelcontextprotocol/server-everything/dist/index.js');\n"), 0o755)
	code, out, errs := door(t, "plugin", "wrap", "--id", "local.everything", "--entrypoint", "bin/server.mjs", "--ro", pkg, "--", entry)
	if code != 0 {
		t.Fatalf("wrap: exit %d\n%s", code, errs)
	}
	text := strings.ReplaceAll(strings.ReplaceAll(strings.ReplaceAll(out, "risk: external_write", "risk: read"), "external_state: write", "external_state: none"), "data: send", "data: read")
	text = strings.ReplaceAll(text, "approval: per_action", "approval: never")
	os.WriteFile(filepath.Join(pkg, "manifest.yaml"), []byte(text), 0o644)
	return pkg
}

// TestDoorEverything drives server-everything through `norma run` with
// the scripted provider: a resource read and a prompt get reach the model
// as tool results; its elicitation is declined in a headless run and its
// sampling refused by default, both audited; with mcp.sampling allowed in
// --settings, the run's provider answers it; a deny rule on
// ReadMcpResource refuses the read at the gate, and one on the server
// (mcp__local.everything) its resources and prompts as its tools.
func TestDoorEverything(t *testing.T) {
	sandboxtest.Require(t)
	home, work, ws := t.TempDir(), t.TempDir(), t.TempDir()
	pkg := everythingPkg(t)
	grant := filepath.Join(work, "grant.yaml")
	os.WriteFile(grant, []byte("schema_version: 2\nkind: grant\npermissions: {}\n"), 0o644)
	if code, out, errs := door(t, "--home", home, "plugin", "install", "--dev", pkg, "--yes", "--grant", grant); code != 0 {
		t.Fatalf("install: exit %d\n%s%s", code, out, errs)
	}
	script := filepath.Join(work, "script.yaml")
	os.WriteFile(script, []byte(`turns:
  - tool_calls:
      - {id: r1, name: ReadMcpResource, input: {server: local.everything, uri: "demo://resource/static/document/features.md"}}
      - {id: p1, name: GetMcpPrompt, input: {server: local.everything, name: args-prompt, arguments: {city: Lyon}}}
      - {id: e1, name: mcp__local.everything__trigger-elicitation-request, input: {}}
      - {id: s1, name: mcp__local.everything__trigger-sampling-request, input: {prompt: "tell me", maxTokens: 20}}
      - {id: l1, name: mcp__local.everything__trigger-long-running-operation, input: {duration: 0.4, steps: 2}}
  - text: done
sampling: [answered-by-the-script-provider]
`), 0o644)
	var notices []map[string]any
	run := func(extra ...string) map[string]map[string]any {
		t.Helper()
		args := append([]string{"--home", home, "run", "--provider", "scripted", "--script", script, "--workspace", ws, "--json"}, extra...)
		code, out, errs := door(t, append(args, "go")...)
		if code != 0 {
			t.Fatalf("run: exit %d\n%s%s", code, out, errs)
		}
		calls := map[string]map[string]any{}
		notices = nil
		for _, l := range jsonLines(t, out) {
			if l["event"] == "tool_call" {
				calls[l["id"].(string)] = l
			}
			if l["event"] == "plugin_notice" {
				notices = append(notices, l)
			}
		}
		if len(calls) != 5 {
			t.Fatalf("%d tool calls:\n%s%s", len(calls), out, errs)
		}
		return calls
	}
	result := func(c map[string]any) string { s, _ := c["result"].(string); return s + " " + toString(c["message"]) }

	calls := run()
	for _, id := range []string{"r1", "p1", "e1", "s1", "l1"} {
		t.Logf("%s: %s", id, termtextCut(result(calls[id])))
	}
	if c := calls["r1"]; c["decision"] != "allow" || c["is_error"] == true || !strings.Contains(result(c), "#") {
		t.Errorf("resource read: %v", c)
	}
	if c := calls["p1"]; c["is_error"] == true || !strings.Contains(result(c), "What's weather in Lyon?") {
		t.Errorf("prompt get: %v", c)
	}
	if c := calls["e1"]; !strings.Contains(result(c), "User declined") {
		t.Errorf("headless elicitation: %v", c)
	}
	if c := calls["s1"]; strings.Contains(result(c), "answered-by-the-script-provider") || c["is_error"] != true {
		t.Errorf("default sampling was not refused: %v", c)
	}
	// Progress reaches the person as events, not the model.
	if len(notices) != 2 || notices[0]["kind"] != "progress" || notices[0]["server"] != "local.everything" {
		t.Errorf("progress events: %v", notices)
	}
	if strings.Contains(result(calls["l1"]), "progress") {
		t.Errorf("progress in the result: %v", calls["l1"])
	}
	audited := func(typ string) []map[string]any {
		t.Helper()
		_, out, _ := door(t, "--home", home, "audit", "query", "--type", typ, "--json")
		var recs []struct{ Event map[string]any }
		if err := json.Unmarshal([]byte(out), &recs); err != nil {
			t.Fatalf("audit query: %v\n%s", err, out)
		}
		var evs []map[string]any
		for _, r := range recs {
			evs = append(evs, r.Event)
		}
		return evs
	}
	if ev := audited("elicitation"); len(ev) != 1 || ev[0]["reason"] != "ELICITATION_HEADLESS" {
		t.Errorf("elicitation audit: %v", ev)
	}
	if ev := audited("sampling"); len(ev) != 1 || ev[0]["reason"] != "SAMPLING_REFUSED" {
		t.Errorf("sampling audit: %v", ev)
	}

	// Explain decides on the feature tools as the run registers them.
	deny := filepath.Join(work, "deny.yaml")
	os.WriteFile(deny, []byte("permissions:\n  deny: [ReadMcpResource]\n"), 0o644)
	for _, tc := range []struct {
		extra []string
		want  string
	}{{nil, "allow"}, {[]string{"--settings", deny}, "deny"}} {
		args := append([]string{"--home", home, "policy", "explain", "--workspace", ws, "--tool", "ReadMcpResource",
			"--input", `{"server":"local.everything","uri":"demo://x"}`, "--json"}, tc.extra...)
		_, out, errs := door(t, args...)
		var ex struct{ Decision string }
		if json.Unmarshal([]byte(out), &ex) != nil || ex.Decision != tc.want {
			t.Errorf("explain %v: %s%s, want %s", tc.extra, out, errs, tc.want)
		}
	}

	allow := filepath.Join(work, "sampling.yaml")
	os.WriteFile(allow, []byte("mcp:\n  sampling:\n    allow: true\n    max_tokens: 1000\n"), 0o644)
	calls = run("--settings", allow)
	if c := calls["s1"]; !strings.Contains(result(c), "answered-by-the-script-provider") {
		t.Errorf("allowed sampling: %v", c)
	}
	if ev := audited("sampling"); len(ev) != 2 || ev[1]["decision"] != "allow" {
		t.Errorf("sampling audit: %v", ev)
	}

	calls = run("--settings", deny)
	if c := calls["r1"]; c["decision"] != "deny" || strings.Contains(result(c), "#") {
		t.Errorf("denied read: %v", c)
	}
	// A deny of the server covers its resources and prompts as its tools.
	denyServer := filepath.Join(work, "deny-server.yaml")
	os.WriteFile(denyServer, []byte("permissions:\n  deny: [mcp__local.everything]\n"), 0o644)
	calls = run("--settings", denyServer)
	for _, id := range []string{"r1", "p1", "e1"} {
		if c := calls[id]; c["decision"] != "deny" || c["rule"] != "mcp__local.everything" {
			t.Errorf("%s under a server deny: %v", id, c)
		}
	}
}

func termtextCut(s string) string { return s[:min(len(s), 200)] }

func toString(v any) string { s, _ := v.(string); return s }

// TestDoorElicitationOnTerminal: in dontAsk mode server-everything's
// elicitation is declined even on a terminal; otherwise, on a terminal, it
// is asked of the person: the server and the fields show, the
// typed values reach the server, and the audit records the accept with
// the field names, never a value.
func TestDoorElicitationOnTerminal(t *testing.T) {
	sandboxtest.Require(t)
	home, work, ws := t.TempDir(), t.TempDir(), t.TempDir()
	pkg := everythingPkg(t)
	grant := filepath.Join(work, "grant.yaml")
	os.WriteFile(grant, []byte("schema_version: 2\nkind: grant\npermissions: {}\n"), 0o644)
	if code, out, errs := door(t, "--home", home, "plugin", "install", "--dev", pkg, "--yes", "--grant", grant); code != 0 {
		t.Fatalf("install: exit %d\n%s%s", code, out, errs)
	}
	script := filepath.Join(work, "script.yaml")
	os.WriteFile(script, []byte("turns:\n  - tool_calls:\n      - {id: e1, name: mcp__local.everything__trigger-elicitation-request, input: {}}\n  - text: done\n"), 0o644)
	// dontAsk asks nobody, even on a terminal: declined, as headless.
	r := startOnTerminal(t, isolated(t), "--home", home, "run", "--provider", "scripted", "--script", script, "--workspace", ws, "--mode", "dontAsk", "go")
	if code := r.wait(); code != 0 || strings.Contains(r.out.String(), "asks you for information") || !strings.Contains(r.out.String(), "User declined") {
		t.Fatalf("dontAsk: exit %d\n%s\n%s", code, r.out.String(), r.errb.String())
	}
	if _, audit, _ := door(t, "--home", home, "audit", "query", "--type", "elicitation", "--json"); !strings.Contains(audit, "ELICITATION_HEADLESS") {
		t.Fatalf("dontAsk elicitation audit: %s", audit)
	}

	r = startOnTerminal(t, isolated(t), "--home", home, "run", "--provider", "scripted", "--script", script, "--workspace", ws, "go")
	r.waitFor("The MCP server local.everything asks you for information", 1)
	r.waitFor("name (string, required)", 1)
	r.waitFor("[a/D/c]: ", 1)
	r.answer("a")
	// One line per field, in name order.
	for _, f := range []struct{ name, value string }{
		{"birthdate", ""}, {"check", "yes"}, {"email", ""}, {"firstLine", ""}, {"homepage", ""}, {"integer", "7"},
		{"legacyTitledEnum", ""}, {"name", "Ada-Lovelace-5x"}, {"number", ""}, {"titledMultipleSelectEnum", ""},
		{"titledSingleSelectEnum", ""}, {"untitledMultipleSelectEnum", ""}, {"untitledSingleSelectEnum", ""},
	} {
		r.waitFor(" "+f.name+": ", 1)
		r.answer(f.value)
	}
	if code := r.wait(); code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", code, r.out.String(), r.errb.String())
	}
	out := r.out.String()
	for _, want := range []string{"User provided the requested information", "Name: Ada-Lovelace-5x", "Agreed to terms: true"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in the run's output:\n%s", want, out)
		}
	}
	_, audit, _ := door(t, "--home", home, "audit", "query", "--type", "elicitation", "--json")
	if !strings.Contains(audit, `"action": "accept"`) || !strings.Contains(audit, ",name,") || strings.Contains(audit, "Ada-Lovelace-5x") {
		t.Errorf("elicitation audit: %s", audit)
	}
}
