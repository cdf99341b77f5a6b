package gate

import "fmt"

// Mode is the permission mode of a session.
type Mode uint8

// Permission modes.
const (
	// ModeDefault: read-only calls the tool allows run; everything else
	// needs an allow rule or approval.
	ModeDefault Mode = iota
	// ModeAcceptEdits: like default, and file reads and writes the policy
	// allows run without approval.
	ModeAcceptEdits
	// ModePlan: every mutating call is denied (MODE_DENIED).
	ModePlan
	// ModeDontAsk: every call that would need approval is denied.
	ModeDontAsk
	// ModeBypass: calls that would need the harness's approval run without
	// it. Deny rules, tool hard-denies, capability denials, a plugin's own
	// per-action approvals and unparseable commands still apply.
	ModeBypass
)

var modeNames = [...]string{"default", "acceptEdits", "plan", "dontAsk", "bypassPermissions"}

// String returns the mode's name as in settings files.
func (m Mode) String() string {
	if int(m) < len(modeNames) {
		return modeNames[m]
	}
	return fmt.Sprintf("unknown(%d)", uint8(m))
}

// ParseMode parses "default", "acceptEdits", "plan", "dontAsk" and
// "bypassPermissions" (or "bypass").
func ParseMode(s string) (Mode, error) {
	if s == "bypass" {
		return ModeBypass, nil
	}
	for i, n := range modeNames {
		if n == s {
			return Mode(i), nil
		}
	}
	return ModeDefault, fmt.Errorf("gate: unknown permission mode %q", s)
}
