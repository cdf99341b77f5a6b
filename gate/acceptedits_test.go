package gate_test

import (
	"testing"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/gate"
	"github.com/norma-run/norma/policy"
)

// TestAcceptEditsFileCommands: in acceptEdits, the file-system commands
// Claude Code's mode runs without asking (mkdir, touch, rm, rmdir, mv,
// cp, sed) run without asking when every path they touch is below the
// workspace and no rule or policy stops one of them; anything else asks,
// and in the default mode they ask. The files a command writes by its
// arguments are decided by the rules and the policy in a confined call
// too: a deny of Edit denies rm, an ask rule asks.
func TestAcceptEditsFileCommands(t *testing.T) {
	rules := policy.Rules{Ask: []string{"Edit(./src/private/**)"}, Deny: []string{"Edit(./src/locked/**)"}}
	for _, tt := range []struct {
		mode gate.Mode
		cmd  string
		want capability.Reason
	}{
		{gate.ModeAcceptEdits, "mkdir -p src/new", capability.ReasonAllowed},
		{gate.ModeAcceptEdits, "touch src/a.go && cp src/a.go src/b.go", capability.ReasonAllowed},
		{gate.ModeAcceptEdits, "mv src/a.go src/c.go", capability.ReasonAllowed},
		{gate.ModeAcceptEdits, "rm -rf src/old && rmdir src/empty", capability.ReasonAllowed},
		{gate.ModeAcceptEdits, "sed -i s/a/b/ src/a.go", capability.ReasonAllowed},
		{gate.ModeAcceptEdits, "ls src && mkdir src/x", capability.ReasonAllowed},
		// A rule or the policy on what the command writes.
		{gate.ModeAcceptEdits, "rm src/private/k", capability.ReasonApprovalDenied},
		{gate.ModeAcceptEdits, "rm -rf src/locked", capability.ReasonRuleDenied},
		{gate.ModeAcceptEdits, "rm -rf SRC/LOCKED/x", capability.ReasonRuleDenied},
		{gate.ModeAcceptEdits, "rm docs/a.md", capability.ReasonFilesystemWriteDenied},
		{gate.ModeAcceptEdits, "cp docs/a.md ../x", capability.ReasonPathEscape},
		// Elsewhere, or not a command of the mode.
		{gate.ModeAcceptEdits, "rm /tmp/x", capability.ReasonApprovalDenied},
		{gate.ModeAcceptEdits, "cd src && rm a.go", capability.ReasonApprovalDenied},
		{gate.ModeAcceptEdits, "rm src/*.go", capability.ReasonApprovalDenied},
		{gate.ModeAcceptEdits, "rm $F", capability.ReasonApprovalDenied},
		{gate.ModeAcceptEdits, "sudo rm src/a.go", capability.ReasonApprovalDenied},
		{gate.ModeAcceptEdits, "chmod +x src/a.go", capability.ReasonApprovalDenied},
		{gate.ModeAcceptEdits, "sed -i 's/a/b/w src/out' src/a.go", capability.ReasonApprovalDenied},
		{gate.ModeAcceptEdits, "make", capability.ReasonApprovalDenied},
		{gate.ModeAcceptEdits, "mkdir src/x && curl -s example.com", capability.ReasonApprovalDenied},
		// A path under what an earlier command wrote (the red team's R20:
		// src/d/l may be a link that mv brings along).
		{gate.ModeAcceptEdits, "mv src/d src/e && cp src/a.go src/e/l/x", capability.ReasonApprovalDenied},
		{gate.ModeAcceptEdits, "cp -r src/d src/e && rm -rf src/e/l/", capability.ReasonApprovalDenied},
		{gate.ModeAcceptEdits, "mkdir -p src/e && touch src/e/x", capability.ReasonAllowed},
		{gate.ModeDefault, "mkdir -p src/new", capability.ReasonApprovalDenied},
		{gate.ModeDefault, "rm -rf src/locked", capability.ReasonRuleDenied},
	} {
		t.Run(tt.mode.String()+"/"+tt.cmd, func(t *testing.T) {
			f := newFixture(t, withRules(rules), withMode(tt.mode))
			wantReason(t, f.g.Execute(t.Context(), bash(tt.cmd)), tt.want)
		})
	}
	// An ask rule on the file tools asks for what a command writes too
	// (the starter settings' ask: [Write, Edit, MultiEdit]).
	f := newFixture(t, withRules(policy.Rules{Ask: []string{"Edit"}}), withMode(gate.ModeAcceptEdits))
	wantReason(t, f.g.Execute(t.Context(), bash("rm src/a.go")), capability.ReasonApprovalDenied)
	wantReason(t, f.g.Execute(t.Context(), bash("ls src")), capability.ReasonAllowed)
}

// TestCompoundAsks: a command line that is more than simple commands in
// lists and pipelines (a substitution, a subshell, a loop, a background
// job) is covered by no allow rule of its commands and is not read-only,
// as Claude Code asks for it; a rule on the whole tool still allows it,
// and a deny rule still denies a command inside.
func TestCompoundAsks(t *testing.T) {
	rules := policy.Rules{Allow: []string{"Bash(echo:*)", "Bash(ls:*)", "Bash(cat:*)"}, Deny: []string{"Bash(rm:*)"}}
	for _, tt := range []struct {
		cmd  string
		want capability.Reason
	}{
		{"echo a && ls | cat; echo b", capability.ReasonAllowed},
		{"echo $(ls)", capability.ReasonApprovalDenied},
		{"echo `ls`", capability.ReasonApprovalDenied},
		{`echo "$(cat README.md)"`, capability.ReasonApprovalDenied},
		{"cat <(ls)", capability.ReasonApprovalDenied},
		{"(cd docs && ls)", capability.ReasonApprovalDenied},
		{"{ ls; }", capability.ReasonApprovalDenied},
		{"for f in a b; do echo $f; done", capability.ReasonApprovalDenied},
		{"while true; do ls; done", capability.ReasonApprovalDenied},
		{"if true; then ls; fi", capability.ReasonApprovalDenied},
		{"echo a &", capability.ReasonApprovalDenied},
		{"echo $(rm -rf x)", capability.ReasonRuleDenied},
		// A command named by a variable is each literal value assigned
		// to it, for the deny rules (and is unknown: asked).
		{"x=rm; $x scratch/s1.tmp", capability.ReasonRuleDenied},
		{`x=ls; x=rm; "${x}" a`, capability.ReasonRuleDenied},
		{"x=ls; $x", capability.ReasonApprovalDenied},
	} {
		t.Run(tt.cmd, func(t *testing.T) {
			f := newFixture(t, withRules(rules))
			wantReason(t, f.g.Execute(t.Context(), bash(tt.cmd)), tt.want)
		})
	}
	f := newFixture(t, withRules(policy.Rules{Allow: []string{"Bash"}}))
	wantReason(t, f.g.Execute(t.Context(), bash("for f in a b; do echo $f; done")), capability.ReasonAllowed)
}

// TestExactRuleAsWritten: an exact allow rule covers a command written
// as its words, as Claude Code compares the command's text: more spaces,
// a quote or an escape ask (in the whole line), while a prefix rule
// still reads the words.
func TestExactRuleAsWritten(t *testing.T) {
	rules := policy.Rules{Allow: []string{"Bash(npm run lint)", "Bash(echo:*)"}}
	for _, tt := range []struct {
		cmd  string
		want capability.Reason
	}{
		{"npm run lint", capability.ReasonAllowed},
		{"npm run lint && echo ok", capability.ReasonAllowed},
		{"npm  run   lint", capability.ReasonApprovalDenied},
		{"npm run 'lint'", capability.ReasonApprovalDenied},
		{`npm run \lint`, capability.ReasonApprovalDenied},
		{"X=1 npm run lint", capability.ReasonApprovalDenied},
		{"echo 'a  b'", capability.ReasonAllowed},
	} {
		t.Run(tt.cmd, func(t *testing.T) {
			f := newFixture(t, withRules(rules))
			wantReason(t, f.g.Execute(t.Context(), bash(tt.cmd)), tt.want)
		})
	}
}
