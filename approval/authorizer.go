package approval

import "context"

// Authorizer is Norma's one approver interface: it is asked, by the gate
// for a tool call and by the egress broker for a brokered request, whether
// one exact action (named by req.ActionHash) may run, and answers with a
// [Ticket] for exactly one execution of it. [*Service] implements it
// durably; gate.Options.Approver and broker.Config.Approver take it.
//
// An Authorizer must honour ctx and return an error, never a ticket, when
// it cannot get a yes; an error that is (or wraps) a *capability.Error
// keeps its reason code, and callers deny on any error, on a ticket
// without an ApprovalID and on a ticket whose ActionHash is set and is not
// req.ActionHash.
//
// It is a different role from [Approver]: an Authorizer owns the whole
// exchange for a caller that wants to run an action (store, ask, consume),
// while an Approver is who an Authorizer such as Service asks to decide a
// stored, pending [Record] (a terminal prompt, --yes, a [Waiter]).
type Authorizer interface {
	Authorize(ctx context.Context, req Request) (Ticket, error)
}

// Finisher is implemented by an [Authorizer] that must be told when the
// execution a ticket let through is over (successful or not), so that a
// crash between consume and finish is detectable ([Service.Unfinished]).
// Callers find it by type assertion and call it once per ticket, with a
// context that is not canceled.
type Finisher interface {
	Finish(ctx context.Context, t Ticket) error
}

var (
	_ Authorizer = (*Service)(nil)
	_ Finisher   = (*Service)(nil)
)
