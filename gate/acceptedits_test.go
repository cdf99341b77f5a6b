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
