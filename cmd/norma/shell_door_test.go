package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDoorHiddenShellCode: through the built binary, allow rules that
// cover every command a hidden-code attack shows (user settings) do not
// let it run. `norma run --mode dontAsk` refuses each with
// COMMAND_UNPARSEABLE and the marker is never written, while a plain
// command under the same rules runs; `policy explain` in the default mode
// says approval_required, COMMAND_UNPARSEABLE.
func TestDoorHiddenShellCode(t *testing.T) {
	e := newRunEnv(t)
	env := rtEnv(t)
	xdg := strings.TrimPrefix(env[0], "XDG_CONFIG_HOME=")
	rtWrite(t, filepath.Join(xdg, "norma", "settings.yaml"), `permissions:
  allow: ["Bash(echo:*)", "Bash(printf:*)", "Bash(read:*)", "Bash(declare:*)", "Bash(trap:*)", "Bash(eval:*)",
          "Bash(set:*)", "Bash(true)", "Bash(let:*)", "Bash(source:*)", "Write(**)"]
`, 0o644)
	attacks := []string{
		`x='a[$(echo ran >marker)]'; (( x ))`,
		`x='a[$(echo ran >marker)]'; echo ${y[x]}`,
		`x='$(echo ran >marker)'; echo ${x@P}`,
		`r='a[$(echo ran >marker)]'; echo ${!r}`,
		`x='a[$(echo ran >marker)]'; read "$x" <<< 1`,
		`declare -i y; y='a[$(echo ran >marker)]'`,
		`PS4='$(echo ran >marker)'; set -x; true`,
		`x='echo ran >marker'; trap "$x" EXIT`,
		`echo 'echo ran >marker' >s.sh; source ./s.sh`,
		`echo hi && [[ x == @($(echo ran >marker)) ]]`,
	}
	var script strings.Builder
	script.WriteString("turns:\n  - tool_calls:\n")
	for i, c := range attacks {
		fmt.Fprintf(&script, "      - {id: a%d, name: Bash, input: {\"command\": %s}}\n", i, jsonQuote(c))
	}
	script.WriteString("      - {id: control, name: Bash, input: {\"command\": \"echo control >control.txt\"}}\n  - text: done\n")
	code, out, errs := doorEnv(t, env, "--home", e.home, "run", "--workspace", e.ws, "--provider", "scripted",
		"--script", e.script(t, script.String()), "--mode", "dontAsk", "--json", "go")
	if code != 0 {
		t.Fatalf("run: exit %d\n%s%s", code, out, errs)
	}
	got := toolCalls(jsonLines(t, out))
	for i, c := range attacks {
		ran := got[fmt.Sprintf("a%d", i)]
		if ran == nil || ran["decision"] != "deny" || ran["reason"] != "COMMAND_UNPARSEABLE" {
			t.Errorf("run Bash %q = %v; want deny COMMAND_UNPARSEABLE", c, ran)
		}
		ex := rtExplain(t, env, e.home, e.ws, "--tool", "Bash", "--input", `{"command":`+jsonQuote(c)+`}`)
		if ex["decision"] != "approval_required" || ex["reason"] != "COMMAND_UNPARSEABLE" {
			t.Errorf("explain Bash %q = %v %v; want approval_required COMMAND_UNPARSEABLE", c, ex["decision"], ex["reason"])
		}
	}
	if c := got["control"]; c == nil || c["decision"] != "allow" {
		t.Errorf("control call = %v; want allowed", c)
	}
	if b, err := os.ReadFile(filepath.Join(e.ws, "control.txt")); err != nil || string(b) != "control\n" {
		t.Errorf("the control command did not run: %q %v", b, err)
	}
	if _, err := os.Lstat(filepath.Join(e.ws, "marker")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a hidden-code attack ran: the marker exists")
	}
}
