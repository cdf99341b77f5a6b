package secret

import (
	"strings"

	"github.com/norma-run/norma/capability"
)

// EgressRules say what a finding of [Redactor.Detect] does at an exit
// (the broker, WebFetch, a tool whose effects leave the machine). The
// zero value denies every finding: SECRET_EGRESS for a credential,
// SENSITIVE_DATA_EGRESS for an identifier.
type EgressRules struct {
	// Secret and Sensitive are the decisions of the two classes:
	// capability.Deny (the zero value) or capability.ApprovalRequired
	// (settings: ask). Allow is refused (a class cannot be turned off;
	// an allowed value is named in Allow).
	Secret, Sensitive capability.Mode
	// Allow are the values a destination may receive.
	Allow []EgressAllow
}

// EgressAllow lets one destination receive what one detector finds: a
// token kind or detector name (Detector), a known value by name (Secret),
// or one value by the hex SHA-256 of what matched (SHA256). To is the
// normalized origin ("https://api.github.com:443") or "tool:NAME" for a
// tool call.
type EgressAllow struct {
	To       string
	Detector string
	Secret   string
	SHA256   string
	// Source names where the entry was written (file:line:col), for
	// the decision's rule.
	Source string
}

func (a *EgressAllow) allows(f Finding, to string) bool {
	if a.To != to {
		return false
	}
	switch {
	case a.Secret != "":
		return f.Secret == a.Secret
	case a.SHA256 != "":
		return f.ValueSum(a.SHA256)
	case a.Detector != "":
		return f.Detector == a.Detector
	}
	return false
}

// Reason returns the reason code of a finding's class.
func (f Finding) Reason() capability.Reason {
	if f.Class == ClassSensitive {
		return capability.ReasonSensitiveDataEgress
	}
	return capability.ReasonSecretEgress
}

// SetEgress sets the rules CheckEgress applies (nil: the zero rules,
// every finding denied). The Redactor is the one detector engine of the
// process, shared by every exit (the gate, the brokers of every plugin);
// the runtime sets its rules once, from the settings' egress section.
func (r *Redactor) SetEgress(rules *EgressRules) { r.egress.Store(rules) }

// CheckEgress decides data that would leave toward each of to (origins
// or "tool:NAME"): Allow when Detect finds nothing in any part, or each
// finding is allowed toward every destination; otherwise the decision of
// the most restrictive finding not allowed — Deny, or ApprovalRequired
// when the rules ([Redactor.SetEgress]) say ask for its class — with
// reason SECRET_EGRESS or SENSITIVE_DATA_EGRESS, layer egress, and rule
// "egress:" + the finding (detector, secret name, normalization), never
// the value. A part that is empty is skipped. A nil Redactor knows the
// token formats only and denies every finding.
func (r *Redactor) CheckEgress(to []string, parts ...[]byte) (capability.Decision, []Finding) {
	var rules *EgressRules
	if r != nil {
		rules = r.egress.Load()
	}
	if rules == nil {
		rules = &EgressRules{}
	}
	d := capability.Decision{Mode: capability.Allow, Reason: capability.ReasonAllowed}
	var found []Finding
	for _, p := range parts {
		if len(p) == 0 {
			continue
		}
		for _, f := range r.Detect(p) {
			if rules.allowed(f, to) {
				continue
			}
			found = append(found, f)
			mode := rules.Secret
			if f.Class == ClassSensitive {
				mode = rules.Sensitive
			}
			if mode != capability.ApprovalRequired {
				mode = capability.Deny // fail closed: anything else denies
			}
			if mode < d.Mode {
				d = capability.Decision{Mode: mode, Reason: f.Reason(), Layer: capability.LayerEgress, Rule: "egress:" + f.ruleName()}
			}
		}
	}
	return d, found
}

func (rules *EgressRules) allowed(f Finding, to []string) bool {
	if len(to) == 0 {
		return false
	}
	for _, t := range to {
		ok := false
		for i := range rules.Allow {
			if rules.Allow[i].allows(f, t) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

// ruleName is the finding as a rule name: "github-token",
// "known-value:gh_token", "card-number(via base64)".
func (f Finding) ruleName() string {
	s := f.Detector
	if f.Secret != "" {
		s += ":" + f.Secret
	}
	if f.Via != "" {
		s += "(via " + strings.ReplaceAll(f.Via, " ", "") + ")"
	}
	return s
}
