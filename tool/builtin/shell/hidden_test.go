package shell

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/gate"
	"github.com/norma-run/norma/policy"
)

// hiddenAttacks write ./marker from code bash runs without showing it as
// a command; every command they show is allowed by hiddenRules.
var hiddenAttacks = []string{
	`x='a[$(echo ran >marker)]'; (( x ))`,
	`x='a[$(echo ran >marker)]'; echo $(( x ))`,
	`x='a[$(echo ran >marker)]'; echo ${y[x]}`,
	`x='$(echo ran >marker)'; echo ${x@P}`,
	`r='a[$(echo ran >marker)]'; echo ${!r}`,
	`x='a[$(echo ran >marker)]'; [[ -v $x ]]`,
	`x='a[$(echo ran >marker)]'; [[ $x -eq 1 ]]`,
	`x='a[$(echo ran >marker)]'; printf -v "$x" 1`,
	`x='a[$(echo ran >marker)]'; read "$x" <<< 1`,
	`x='a[$(echo ran >marker)]'; declare "$x=1"`,
	`declare -i y; y='a[$(echo ran >marker)]'`,
	`let 'y=a[$(echo ran >marker)]'`,
	`for OPTIND in 'a[$(echo ran >marker)]'; do echo; done`,
	`read RANDOM <<< 'a[$(echo ran >marker)]'`,
	`printf -v SRANDOM %s 'a[$(echo ran >marker)]'`,
	"echo hi && [[ x == @($(echo ran >marker)) ]]",
	`PS4='$(echo ran >marker)'; set -x; true`,
	`x='echo ran >marker'; trap "$x" EXIT`,
	`x='echo ran >marker'; eval "$x"`,
	`echo 'echo ran >marker' >s.sh; f=s.sh; source "$f"`,
	`echo 'echo ran >marker' >s.sh; BASH_ENV=./s.sh bash -c true`,
	`printf '#!/bin/sh\necho ran >marker\n' >cat; chmod +x cat; export PATH=.; cat`,
}

var hiddenRules = policy.Rules{Allow: []string{"Bash(echo:*)", "Bash(printf:*)", "Bash(read:*)", "Bash(declare:*)",
	"Bash(export:*)", "Bash(trap:*)", "Bash(eval:*)", "Bash(source:*)", "Bash(set:*)", "Bash(true)", "Bash(bash:*)",
	"Bash(let:*)", "Bash(chmod:*)", "Bash(cat)", "Bash(bash -i)", "Write(workspace://**)"}}

// TestHiddenCodeNeverRuns performs each attack twice: with real bash
// alone, where it writes the marker (the attack is real), and through the
// gate in dontAsk with allow rules covering every command it shows, where
// it is denied with COMMAND_UNPARSEABLE and the marker is never written.
func TestHiddenCodeNeverRuns(t *testing.T) {
	requireSandbox(t)
	f := newFixture(t, fixtureOpts{rules: hiddenRules, mode: gate.ModeDontAsk})
	marker := filepath.Join(f.ws, "marker")
	for _, cmd := range hiddenAttacks {
		dir := t.TempDir()
		c := exec.Command("/bin/bash", "-c", cmd)
		c.Dir, c.Env = dir, []string{"PATH=/usr/bin:/bin"}
		out, _ := c.CombinedOutput()
		if _, err := os.Stat(filepath.Join(dir, "marker")); err != nil {
			t.Fatalf("control: bash -c %q wrote no marker (%s): the attack is not real", cmd, out)
		}
		r := f.exec(t, "Bash", map[string]any{"command": cmd})
		if r.Reason != capability.ReasonCommandUnparseable || !r.IsError || r.Decision.Mode != capability.Deny {
			t.Errorf("Bash(%q) in dontAsk = %s (decision %s) %q; want COMMAND_UNPARSEABLE", cmd, r.Reason, r.Decision.Mode, r.Content)
		}
		if _, err := os.Lstat(marker); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("Bash(%q) ran: the marker exists", cmd)
		}
	}
	// The same rules let the plain commands through: the sandbox is used.
	if got := f.mustExec(t, "Bash", map[string]any{"command": `x=1; echo "plain-$x"`}); !strings.Contains(got, "plain-1") {
		t.Fatalf("plain echo = %q", got)
	}
}

// TestPTYHiddenCode: PTY input goes through the same analysis. State set
// by an allowed line stays in the shell, so a later line that evaluates it
// (arithmetic, a subscript, an indirect or prompt expansion) is denied in
// dontAsk, never reaches the shell, and the marker is never written.
func TestPTYHiddenCode(t *testing.T) {
	requireSandbox(t)
	f := newFixture(t, fixtureOpts{rules: hiddenRules, mode: gate.ModeDontAsk})
	id := openPTY(t, f)
	sendRead(t, f, id, `x='a[$(echo ran >marker)]'; p='$(echo ran >marker)'; echo set-"$x"`, `set-a\[`)
	for _, line := range []string{`(( x ))`, `echo $(( x ))`, `echo ${y[x]}`, `r=x; echo ${!r}`, `echo ${p@P}`,
		`[[ -v $x ]]`, `[[ x -eq 1 ]]`, `read "$x" <<< 1`, `printf -v "$x" 1`, `declare -i y=x`, `trap "$p" EXIT`,
		`PROMPT_COMMAND='echo ran >marker'`, `PS1='$(echo ran >marker)$ '`, "echo ok\n(( x ))"} {
		r := f.exec(t, "PtySend", map[string]any{"pty_id": id, "text": line})
		if r.Reason != capability.ReasonCommandUnparseable || !r.IsError {
			t.Errorf("PtySend(%q) in dontAsk = %s %q; want COMMAND_UNPARSEABLE", line, r.Reason, r.Content)
		}
	}
	// Without interactive comments the shell runs what follows #, which
	// the analysis reads as a comment: the option is refused, so the
	// line after it is only an echo.
	for _, line := range []string{`set +o interactive-comments`, `shopt -u interactive_comments`} {
		if r := f.exec(t, "PtySend", map[string]any{"pty_id": id, "text": line}); r.Reason != capability.ReasonCommandUnparseable || !r.IsError {
			t.Errorf("PtySend(%q) in dontAsk = %s %q; want COMMAND_UNPARSEABLE", line, r.Reason, r.Content)
		}
	}
	sendRead(t, f, id, `echo comment-ok # ; echo ran >marker`, `comment-ok`)
	// Everything sent was processed: the shell answers, and still holds x.
	if got := sendRead(t, f, id, `echo "still-$x"`, `still-a\[`); !strings.Contains(got, "still-a[") {
		t.Fatalf("PTY after refusals = %q", got)
	}
	if _, err := os.Lstat(filepath.Join(f.ws, "marker")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("a refused PTY line ran: the marker exists")
	}
}

// TestPTYPartialLine: text sent without Enter stays in the shell's line,
// so the next text would complete a line the gate never saw whole ("r"
// then "m -f …" is rm, which a deny rule refuses). The next text is
// refused until ^C ends the partial line; the file is still there.
func TestPTYPartialLine(t *testing.T) {
	requireSandbox(t)
	rules := policy.Rules{Allow: []string{"Bash(echo:*)", "Bash(r)", "Bash(m:*)", "Bash(bash -i)"}, Deny: []string{"Bash(rm:*)"}}
	f := newFixture(t, fixtureOpts{rules: rules, mode: gate.ModeDontAsk})
	id := openPTY(t, f)
	victim := filepath.Join(f.ws, "src/visible.txt")
	f.mustExec(t, "PtySend", map[string]any{"pty_id": id, "text": "r", "enter": false})
	r := f.exec(t, "PtySend", map[string]any{"pty_id": id, "text": "m -f src/visible.txt"})
	if !r.IsError || r.Reason == capability.ReasonAllowed {
		t.Fatalf("PtySend after a partial line = %s %q; want a refusal", r.Reason, r.Content)
	}
	f.mustExec(t, "PtySend", map[string]any{"pty_id": id, "control": "c"})
	if got := sendRead(t, f, id, "echo after-intr", "after-intr\n"); !strings.Contains(got, "after-intr") {
		t.Fatalf("after ^C = %q", got)
	}
	if _, err := os.Stat(victim); err != nil {
		t.Fatalf("the file is gone: %v", err)
	}
	// Control: the same two writes, straight to the terminal, are rm.
	other := filepath.Join(f.ws, "src/notes/a.md")
	p := f.m.ptys[id]
	if _, err := p.master.Write([]byte("r")); err != nil {
		t.Fatal(err)
	}
	if _, err := p.master.Write([]byte("m -f src/notes/a.md; echo control-done\n")); err != nil {
		t.Fatal(err)
	}
	f.mustExec(t, "PtyRead", map[string]any{"pty_id": id, "timeout_ms": 10000, "until": "control-done\n"})
	if _, err := os.Stat(other); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("control: r + m -f did not remove the file (%v): the attack is not real", err)
	}
}
