package gate

import (
	"github.com/norma-run/norma/agentfiles"
	"github.com/norma-run/norma/capability"
)

// agentFloor is the decision of the agent-file catalogue on the call's
// file writes: a write of a file an agent loads as code is denied
// (AGENT_FILE_PROTECTED), one of an instruction file needs approval
// (INSTRUCTION_FILE_WRITE), whatever the policy, the rules and the mode
// say. Each write request is asked about by the name the call gave and by
// the name its links resolve to (see fsRequests), so either matching
// protects.
func (x *exec) agentFloor() (capability.Decision, bool) {
	var ask capability.Decision
	asked := false
	for i := range x.reqs {
		r := &x.reqs[i]
		if r.Kind != capability.FSWrite {
			continue
		}
		m, ok := agentfiles.Lookup(r.Path, x.g.home)
		if !ok {
			continue
		}
		rule := "agentfiles:" + m.Glob + " (" + m.Agent + ")"
		if m.Class == agentfiles.Code {
			return deny(capability.ReasonAgentFileProtected, capability.LayerGate, rule, r.String()), true
		}
		if !asked {
			ask = capability.Decision{Mode: capability.ApprovalRequired, Reason: capability.ReasonInstructionFile, Layer: capability.LayerGate, Rule: rule, Request: r.String()}
			asked = true
		}
	}
	if asked && x.trace != nil {
		*x.trace = append(*x.trace, capability.LayerResult{Layer: ask.Layer, Mode: ask.Mode, Reason: ask.Reason, Rule: ask.Rule})
	}
	return ask, asked
}
