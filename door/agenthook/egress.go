package agenthook

import "github.com/norma-run/norma/secret"

// agentRedactor is the detector engine of one workspace's runtime: the
// token formats, and the credentials of the agent's environment as
// known values (issue 29), so that a WebFetch or a command that would
// send one of them out is denied with SECRET_EGRESS. Each runtime has
// its own: the egress rules it carries come from that workspace's
// settings.
func agentRedactor(environ []string) *secret.Redactor {
	red := secret.NewRedactor()
	red.AddEnvironment(environ)
	return red
}
