package metrics

import (
	"github.com/norma-run/norma/audit"
	"github.com/norma-run/norma/capability"
)

// Label values that are not taken from an event.
const (
	none  = "-"     // no such thing: a built-in tool has no plugin
	other = "other" // a value outside the closed set, or beyond a cap
	// kindTool is the kind of a decision on a tool call that makes no
	// capability request (a built-in tool's own check, a tool the
	// manifest does not declare, a refused schema).
	kindTool = "tool"
)

// kinds are the capability kinds, as written in manifests.
var kinds = func() map[string]bool {
	m := map[string]bool{}
	for k := capability.FSRead; k <= capability.ExternalWrite; k++ {
		m[k.String()] = true
	}
	return m
}()

// undeclaredReasons are the reason codes of a request for a tool or a
// secret that the plugin's manifest does not declare.
var undeclaredReasons = map[string]bool{
	string(capability.ReasonToolUndeclared):   true,
	string(capability.ReasonSecretUndeclared): true,
}

func kindLabel(e audit.Event) string {
	switch {
	case e.CapabilityKind == "":
		return kindTool
	case kinds[e.CapabilityKind]:
		return e.CapabilityKind
	}
	return other
}

func decisionLabel(e audit.Event) string {
	switch e.Decision {
	case "allow", "deny", "approval_required":
		return e.Decision
	case "":
		// The gate leaves the decision empty when it refused the call
		// before the policy step (an unknown tool, a schema violation).
		return "deny"
	}
	return other
}

func reasonLabel(r string) string {
	switch {
	case r == "":
		return none
	case reasons[r]:
		return r
	}
	return other
}

func runKindLabel(k string) string {
	switch k {
	case audit.RunInteractive, audit.RunBackground:
		return k
	}
	return other
}

// maxLabelLen bounds a plugin id or version used as a label value.
const maxLabelLen = 128

// labelSafe reports whether s may be a label value as is: short, and
// only the characters of plugin ids and versions.
func labelSafe(s string) bool {
	if s == "" || len(s) > maxLabelLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '-' || c == '_' || c == '+' || c == '@' || c == '/') {
			return false
		}
	}
	return true
}
