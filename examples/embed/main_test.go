package main

import (
	"flag"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/norma-run/norma/sandbox"
)

var update = flag.Bool("update", false, "rewrite README.md's embedding snippet from main.go's README:begin … README:end region")

// wantOutput is what the example prints, line by line. The explained Bash
// call is decided by the policy where the OS sandbox runs the shell tools;
// without it there are no shell tools, and the call names an unknown tool.
func wantOutput() string {
	bash := "deny FILESYSTEM_WRITE_DENIED"
	if !sandbox.Ready() {
		bash = "deny TOOL_UNKNOWN"
	}
	return strings.Join([]string{
		"approval asked: Ticket (t3)",
		"t1 Ticket allow    ALLOWED",
		"t2 Ticket deny     SCHEMA_INVALID",
		"t3 Ticket allow    ALLOWED",
		"t4 Read   deny     FILESYSTEM_READ_DENIED",
		"t5 Deploy deny     TOOL_UNKNOWN",
		"status: completed, model said: Ticket 42 is closed.",
		"explain Bash echo x > .norma/policy.yaml: " + bash,
		"audit log: chain verified",
	}, "\n") + "\n"
}

// TestEmbedRuns builds and runs the example the way its doc comment says
// (go run ./examples/embed) and checks every decision it prints.
func TestEmbedRuns(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	cmd := exec.CommandContext(t.Context(), goBin, "run", ".")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go run ./examples/embed: %v\n%s%s", err, out, stderr.String())
	}
	if got, want := string(out), wantOutput(); got != want {
		t.Errorf("go run ./examples/embed printed:\n%s\nwant:\n%s", got, want)
	}
}

// The README's embedding snippet lies between these markers.
const (
	snippetBegin = "<!-- embed:begin -->"
	snippetEnd   = "<!-- embed:end -->"
)

// snippet is the region of main.go between the README:begin and
// README:end comment lines, one tab of indentation removed, as the fenced
// block README.md shows.
func snippet(t *testing.T) string {
	t.Helper()
	src, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(src), "\n")
	begin, end := -1, -1
	for i, l := range lines {
		switch strings.TrimSpace(l) {
		case "// README:begin":
			begin = i
		case "// README:end":
			end = i
		}
	}
	if begin < 0 || end <= begin {
		t.Fatal("main.go has no // README:begin … // README:end region")
	}
	var b strings.Builder
	b.WriteString(snippetBegin + "\n```go\n")
	for _, l := range lines[begin+1 : end] {
		b.WriteString(strings.TrimPrefix(l, "\t") + "\n")
	}
	b.WriteString("```\n" + snippetEnd)
	return b.String()
}

// TestREADMESnippet fails when README.md's embedding snippet differs from
// the region of main.go it shows, so the README's code is code that runs
// (TestEmbedRuns) and builds in a module of its own (TestEmbedModule).
// Regenerate with: go test ./examples/embed -run TestREADMESnippet -update
func TestREADMESnippet(t *testing.T) {
	const readmePath = "../../README.md"
	want := snippet(t)
	data, err := os.ReadFile(readmePath)
	if err != nil {
		t.Fatal(err)
	}
	readme := string(data)
	i, j := strings.Index(readme, snippetBegin), strings.Index(readme, snippetEnd)
	if i < 0 || j < i {
		t.Fatalf("README.md has no %s … %s section (put the markers where the snippet goes, then run go test ./examples/embed -run TestREADMESnippet -update)", snippetBegin, snippetEnd)
	}
	if *update {
		readme = readme[:i] + want + readme[j+len(snippetEnd):]
		if err := os.WriteFile(readmePath, []byte(readme), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if got := readme[i : j+len(snippetEnd)]; got != want {
		t.Errorf("README.md's embedding snippet differs from examples/embed/main.go's README:begin … README:end region; run go test ./examples/embed -run TestREADMESnippet -update\ngot:\n%s\nwant:\n%s", got, want)
	}
}
