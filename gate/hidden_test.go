package gate_test

import (
	"context"
	"sync"
	"testing"

	"github.com/norma-run/norma/approval"
	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/gate"
	"github.com/norma-run/norma/gate/gatetest"
	"github.com/norma-run/norma/policy"
)

// hiddenAttacks run code bash does not show as a command; every command
// they show is allowed by hiddenRules.
var hiddenAttacks = []string{
	`x='a[$(rm -rf x)]'; (( x ))`,
	`x='a[$(rm -rf x)]'; echo $(( x ))`,
	`x='a[$(rm -rf x)]'; echo ${y[x]}`,
	`x='$(rm -rf x)'; echo ${x@P}`,
	`r='a[$(rm -rf x)]'; echo ${!r}`,
	`x='a[$(rm -rf x)]'; [[ -v $x ]]`,
	`x='a[$(rm -rf x)]'; [[ $x -eq 1 ]]`,
	`x='a[$(rm -rf x)]'; printf -v "$x" 1`,
	`x='a[$(rm -rf x)]'; read "$x" <<< 1`,
	`x='a[$(rm -rf x)]'; declare "$x=1"`,
	`declare -i y; y='a[$(rm -rf x)]'`,
	`let 'y=a[$(rm -rf x)]'`,
	`PS4='$(rm -rf x)'; set -x; true`,
	`x='rm -rf x'; trap "$x" EXIT`,
	`x='rm -rf x'; eval "$x"`,
	`f=s.sh; source "$f"`,
	`BASH_ENV=s.sh bash -c true`,
	`PATH=.; git status`,
	`export PATH=.; git status`,
	`GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.fsmonitor GIT_CONFIG_VALUE_0='rm -rf x' git status`,
	`hash -p ./evil git; git status`,
	`set -k; git status GIT_DIR=/tmp`,
}

var hiddenRules = policy.Rules{Allow: []string{"Bash(echo:*)", "Bash(git status:*)", "Bash(printf:*)", "Bash(read:*)",
	"Bash(declare:*)", "Bash(export:*)", "Bash(trap:*)", "Bash(eval:*)", "Bash(source:*)", "Bash(set:*)", "Bash(true)",
	"Bash(bash:*)", "Bash(let:*)", "Bash(hash:*)", "Bash(BASH_ENV=s.sh bash -c true)"}}

// TestHiddenCodeAsks: allow rules that cover every command a hidden-code
// attack shows never allow it. By default it asks (the approver is asked,
// offered no rule to remember, and denies: the tool never runs); in dontAsk
// it is denied with COMMAND_UNPARSEABLE; in plan with MODE_DENIED; Explain
// says the same; a session grant does not allow it either.
func TestHiddenCodeAsks(t *testing.T) {
	var mu sync.Mutex
	var offered [][]string
	asked := 0
	approver := gatetest.AuthorizerFunc(func(ctx context.Context, r approval.Request) (approval.Ticket, error) {
		mu.Lock()
		defer mu.Unlock()
		asked++
		offered = append(offered, approval.RulesOf(ctx))
		return approval.Ticket{}, capability.Denied(capability.ReasonApprovalDenied, "", "denied by test")
	})
	for _, mode := range []gate.Mode{gate.ModeDefault, gate.ModeAcceptEdits, gate.ModeDontAsk, gate.ModePlan, gate.ModeBypass} {
		f := newFixture(t, withRules(hiddenRules), withMode(mode), func(o *gate.Options, _ *fixture) { o.Approver = approver })
		if err := f.g.AllowForSession("Bash(echo:*)"); err != nil {
			t.Fatal(err)
		}
		for _, cmd := range hiddenAttacks {
			mu.Lock()
			asked, offered = 0, nil
			mu.Unlock()
			before := f.calls.Load()
			r := f.g.Execute(t.Context(), bash(cmd))
			ex := f.g.Explain(t.Context(), bash(cmd))
			if f.calls.Load() != before {
				t.Errorf("%s: %q ran", mode, cmd)
			}
			switch mode {
			case gate.ModeDontAsk:
				if r.Reason != capability.ReasonCommandUnparseable || ex.Decision.Mode != capability.Deny || ex.Decision.Reason != capability.ReasonCommandUnparseable {
					t.Errorf("%s: %q = %s, explain %s %s; want COMMAND_UNPARSEABLE denials", mode, cmd, r.Reason, ex.Decision.Mode, ex.Decision.Reason)
				}
			case gate.ModePlan:
				if r.Reason != capability.ReasonModeDenied || ex.Decision.Mode != capability.Deny {
					t.Errorf("%s: %q = %s, explain %s; want MODE_DENIED", mode, cmd, r.Reason, ex.Decision.Mode)
				}
			default:
				if r.Reason != capability.ReasonApprovalDenied || asked != 1 || len(offered) != 1 || len(offered[0]) != 0 {
					t.Errorf("%s: %q = %s, asked %d, offered %q; want one approval request offering no rule, denied", mode, cmd, r.Reason, asked, offered)
				}
				if ex.Decision.Mode != capability.ApprovalRequired || ex.Decision.Reason != capability.ReasonCommandUnparseable {
					t.Errorf("%s: explain %q = %s %s; want ApprovalRequired COMMAND_UNPARSEABLE", mode, cmd, ex.Decision.Mode, ex.Decision.Reason)
				}
			}
		}
	}
	// The rules do allow what they name: the attacks are refused for the
	// hidden code only.
	f := newFixture(t, withRules(hiddenRules), withMode(gate.ModeDontAsk))
	for _, cmd := range []string{`x=1; echo $x`, `git status`, `export X=1; echo "$X"`, `trap 'echo bye' EXIT`, `IFS= read -r l <<< x; printf '%s\n' "$l"`} {
		if r := f.g.Execute(t.Context(), bash(cmd)); r.Reason != capability.ReasonAllowed {
			t.Errorf("dontAsk %q = %s; want ALLOWED", cmd, r.Reason)
		}
	}
}
