package gate

import (
	"github.com/norma-run/norma/capability"
)

// egress is the content check at the exits (issue 29), after the
// capability layers allowed the call's destinations: what the call sends
// out — its whole input — is scanned by the detector engine
// (secret.Redactor.CheckEgress, the redactor's own engine and values)
// when the call leaves the machine: when it makes a network request
// (WebFetch, and a shell command whose analysis sees a URL: the whole
// command, whose headers and data go with it), or when it is a plugin's
// (an MCP server's) tool that is not read-only by its manifest (it sends
// data or writes outside). A finding denies the call with SECRET_EGRESS
// or SENSITIVE_DATA_EGRESS, its rule naming the detector, never the
// value; the settings' egress rules (Options.Egress) may make a class ask
// instead, or allow a value toward a named origin or tool. An ask stands
// even where rules allow the call; in dontAsk it is a deny with the same
// reason. ok is false when the check lets the call on.
func (x *exec) egress() (capability.Decision, bool) {
	to := x.egressTo()
	if len(to) == 0 {
		return capability.Decision{}, false
	}
	d, _ := x.g.red.CheckEgress(x.g.egress, to, x.in.Raw())
	if d.Mode == capability.Allow {
		return capability.Decision{}, false
	}
	d.Request = firstReq(x.reqs, x.entry.Name())
	if x.trace != nil {
		*x.trace = append(*x.trace, capability.LayerResult{Layer: d.Layer, Mode: d.Mode, Reason: d.Reason})
	}
	return d, true
}

// egressTo returns where the call sends what it sends: the origin of each
// network request, and "tool:NAME" for a plugin tool that is not
// read-only; nil for a call that stays on the machine.
func (x *exec) egressTo() []string {
	var to []string
	for i := range x.reqs {
		if x.reqs[i].Kind == capability.NetRequest {
			to = append(to, x.reqs[i].Origin)
		}
	}
	if x.entry.Plugin().ID != "" && !x.entry.ReadOnly(x.in) {
		to = append(to, "tool:"+x.entry.Name())
	}
	return to
}
