// Package capability defines the vocabulary every other Norma package shares:
// the kinds of capability request a tool can make (fs.read, fs.write,
// net.request, secret.use, process.spawn, external.write), the modes a layer
// can answer with (deny < approval_required < allow), stable reason codes, and
// the Decision that the policy engine returns and the gate, guards, audit log
// and `norma policy explain` all print the same way.
//
// The package is a leaf: it imports nothing from Norma, so guards, policy,
// gate and audit can depend on it without cycles. The zero value of Mode and of
// Decision is a denial, so a decision that was never filled in fails closed.
package capability
