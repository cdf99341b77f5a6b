package gate_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/norma-run/norma/audit"
	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/gate"
	"github.com/norma-run/norma/secret"
	"github.com/norma-run/norma/tool"
)

const vaultCanary = "VAULT-gate-canary-4f1e2d3c"

var ghCanary = "gh" + "p_" + "Zq4W9xR2mT7vL1nB8kC3pY6dF0sH5jG2aE9u"

func redactFixture(t *testing.T, spill string, runner tool.Runner) *fixture {
	t.Helper()
	red := secret.NewRedactor()
	if err := red.AddValue("db_password", secret.NewValue([]byte(vaultCanary))); err != nil {
		t.Fatal(err)
	}
	return newFixture(t, func(o *gate.Options, _ *fixture) {
		o.Redactor = red
		o.Output = gate.OutputOptions{MaxChars: 200, SpillDir: spill}
		if runner != nil {
			o.Capabilities = func(tool.Plugin) (tool.Env, error) { return tool.Env{Exec: runner}, nil }
		}
	})
}

// noCanary fails when s holds a canary.
func noCanary(t *testing.T, where, s string) {
	t.Helper()
	for _, c := range []string{vaultCanary, ghCanary} {
		if strings.Contains(s, c) {
			t.Errorf("%s holds %q", where, c)
		}
	}
}

// TestOutputRedacted: step 7 masks a vault value and a token in a result,
// in an error's text and in the spill file of a capped result, and writes
// one output_redacted event per call with the counts, never the values.
func TestOutputRedacted(t *testing.T) {
	spill := filepath.Join(t.TempDir(), "spill")
	f := redactFixture(t, spill, nil)
	s := f.readTool()
	s.Name = "Leaky"
	s.Call = func(_ context.Context, _ tool.Env, in tool.Input) (tool.Result, error) {
		p, _ := in.String("path")
		switch p {
		case "err":
			return tool.Result{}, errors.New("connect with " + vaultCanary + " failed")
		case "big":
			return tool.Result{Content: strings.Repeat("x", 300) + vaultCanary + "\n" + ghCanary}, nil
		}
		return tool.Result{Content: "pw=" + vaultCanary + " gh=" + ghCanary + " again " + vaultCanary}, nil
	}
	f.register(t, s, 0)

	c := call("Leaky", `{"path":"small"}`)
	r := f.g.Execute(t.Context(), c)
	wantReason(t, r, capability.ReasonAllowed)
	if want := "pw=[REDACTED:db_password] gh=[REDACTED:github-token] again [REDACTED:db_password]"; r.Content != want {
		t.Errorf("content = %q, want %q", r.Content, want)
	}
	r = f.g.Execute(t.Context(), call("Leaky", `{"path":"err"}`))
	noCanary(t, "an error result", r.Content)
	if !r.IsError || !strings.Contains(r.Content, "[REDACTED:db_password]") {
		t.Errorf("error result = %q", r.Content)
	}
	r = f.g.Execute(t.Context(), call("Leaky", `{"path":"big"}`))
	if r.Spill == nil {
		t.Fatalf("no spill: %q", r.Content)
	}
	data, err := os.ReadFile(filepath.Join(spill, r.Spill.Name))
	if err != nil {
		t.Fatal(err)
	}
	noCanary(t, "the spill file", string(data))
	if !bytes.Contains(data, []byte("[REDACTED:github-token]")) {
		t.Errorf("spill file = %q", data)
	}

	var events []audit.Event
	for _, e := range f.sink.Events() {
		noCanary(t, "audit event "+e.Type, fmt.Sprint(e))
		if e.Type == audit.TypeOutputRedacted {
			events = append(events, e)
		}
	}
	if len(events) != 3 {
		t.Fatalf("output_redacted events = %d, want 3 (one per call)", len(events))
	}
	d := events[0].Detail
	if d["toolUseId"] != c.ID || d["redacted"] != "3" || d["redacted.db_password"] != "2" || d["redacted.github-token"] != "1" || events[0].Tool != "Leaky" {
		t.Errorf("first event = %+v", events[0])
	}
}

// TestProcessOutputRedacted: what a process writes reaches the tool
// redacted even when a secret is split across writes; output the runner
// collected is redacted too; the counts join the call's event.
func TestProcessOutputRedacted(t *testing.T) {
	runner := runnerFunc(func(_ context.Context, c tool.Command) (tool.CommandResult, error) {
		if c.Stdout == nil {
			return tool.CommandResult{Stdout: []byte("collected " + vaultCanary)}, nil
		}
		for _, part := range []string{"a=" + vaultCanary[:7], vaultCanary[7:] + " b=", ghCanary[:5], ghCanary[5:], "\n"} {
			c.Stdout.Write([]byte(part))
		}
		return tool.CommandResult{}, nil
	})
	f := redactFixture(t, "", runner)
	var written, collected string
	s := f.readTool()
	s.Name = "Spawner"
	s.Call = func(ctx context.Context, env tool.Env, _ tool.Input) (tool.Result, error) {
		var out bytes.Buffer
		if _, err := env.Exec.Run(ctx, tool.Command{Argv: []string{"git", "status"}, Stdout: &out, Stderr: &out}); err != nil {
			return tool.Result{}, err
		}
		res, err := env.Exec.Run(ctx, tool.Command{Argv: []string{"git", "status"}})
		if err != nil {
			return tool.Result{}, err
		}
		written, collected = out.String(), string(res.Stdout)
		return tool.Result{Content: "ok"}, nil
	}
	f.register(t, s, 0)
	wantReason(t, f.g.Execute(t.Context(), call("Spawner", `{"path":"docs/a"}`)), capability.ReasonAllowed)
	if written != "a=[REDACTED:db_password] b=[REDACTED:github-token]\n" {
		t.Errorf("the tool's writer got %q", written)
	}
	if collected != "collected [REDACTED:db_password]" {
		t.Errorf("collected output = %q", collected)
	}
	n := 0
	for _, e := range f.sink.Events() {
		if e.Type == audit.TypeOutputRedacted {
			n++
			if e.Detail["redacted.db_password"] != "2" || e.Detail["redacted.github-token"] != "1" {
				t.Errorf("event = %+v", e)
			}
		}
	}
	if n != 1 {
		t.Errorf("output_redacted events = %d, want 1", n)
	}
}
