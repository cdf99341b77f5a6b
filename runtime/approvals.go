package runtime

import (
	"github.com/norma-run/norma/approval"
	"github.com/norma-run/norma/audit"
	"github.com/norma-run/norma/secret"
)

// NewApprovals is the one construction of the approval service, for
// every door (norma run, mcp proxy, the approvals command, the team
// server, the demo): what it stores and shows — previews, targets,
// reasons — passes red first, the run's redactor that knows the vault's
// values and the provider keys, or, when red is nil, one that knows the
// token formats. So an Edit's diff two lines below a token never puts the
// token in the store, in `norma approvals show` or in --json output.
// ask answers new requests (nil: nobody can now; see approval.Options).
func NewApprovals(b approval.Backend, sink audit.Sink, red *secret.Redactor, ask approval.Approver) (*approval.Service, error) {
	if red == nil {
		red = secret.NewRedactor()
	}
	return approval.NewService(b, &approval.Options{Sink: sink, Approver: ask, Redactor: red})
}
