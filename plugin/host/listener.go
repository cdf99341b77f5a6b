package host

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"

	"github.com/norma-run/norma/approval"
	"github.com/norma-run/norma/broker"
	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/secret"
)

// newBroker returns the plugin's egress broker, serving the connections
// the sandbox hands to ln. It holds only the secrets the policy lets this
// plugin use toward their purpose.
func (p *Plugin) newBroker(ctx context.Context, ln *connListener) (*broker.Broker, error) {
	cfg := p.h.cfg
	handles, err := secret.Handles(p.m)
	if err != nil {
		return nil, err
	}
	handles = slices.DeleteFunc(handles, func(h secret.Handle) bool {
		return p.set.Decide(ctx, capability.Request{Kind: capability.SecretUse, Secret: h.Name(), Origin: h.Purpose()}).Mode != capability.Allow
	})
	ws, err := approval.WorkspaceID(cfg.Workspace)
	if err != nil {
		return nil, err
	}
	return broker.New(ln, broker.Config{
		Identity: broker.Identity{Plugin: p.m.ID, Version: p.m.Version, ManifestDigest: p.m.Digest(), RunID: cfg.RunID,
			Workspace: ws, Process: fmt.Sprint(p.started + 1)},
		Policy:          p.set,
		AllowPrivate:    p.set.AllowPrivate(),
		Resolver:        cfg.Resolver,
		CA:              p.h.ca,
		UpstreamRootCAs: cfg.UpstreamRootCAs,
		Secrets:         handles,
		Vault:           cfg.Vault,
		Redactor:        cfg.Redactor,
		Approver:        creditAuthorizer{p},
		Audit:           cfg.Audit,
	})
}

// creditAuthorizer is the approval.Authorizer of a plugin's broker. A
// request made while an approved external-write tool call is in flight
// spends that call's credit: one approved call, one write, under the
// call's idempotency key (the ticket's approval id is "call:" + that key).
// Any other request goes to the host's configured approver, or is refused.
type creditAuthorizer struct{ p *Plugin }

// creditPrefix starts the approval id of a ticket paid with a credit.
const creditPrefix = "call:"

var (
	_ approval.Authorizer = creditAuthorizer{}
	_ approval.Finisher   = creditAuthorizer{}
)

func (a creditAuthorizer) Authorize(ctx context.Context, req approval.Request) (approval.Ticket, error) {
	select {
	case key := <-a.p.credits:
		return approval.Ticket{ApprovalID: creditPrefix + key, IdempotencyKey: key}, nil
	default:
	}
	if in := a.p.h.cfg.Approver; in != nil {
		return in.Authorize(ctx, req)
	}
	return approval.Ticket{}, capability.Denied(capability.ReasonApprovalRequired, req.Target, "no approved tool call covers this request")
}

// Finish tells the configured approver that the exchange of one of its
// tickets is over; a credit's call is finished by the gate.
func (a creditAuthorizer) Finish(ctx context.Context, t approval.Ticket) error {
	if strings.HasPrefix(t.ApprovalID, creditPrefix) {
		return nil
	}
	if f, ok := a.p.h.cfg.Approver.(approval.Finisher); ok {
		return f.Finish(ctx, t)
	}
	return nil
}

// drainCredit removes key if the call ended without spending it.
func (p *Plugin) drainCredit(key string) {
	for {
		select {
		case k := <-p.credits:
			if k == key {
				return
			}
			p.credits <- k
			return
		default:
			return
		}
	}
}

// connListener turns the sandbox's per-connection broker callback into a
// net.Listener for the broker's HTTP server.
type connListener struct {
	ch     chan net.Conn
	done   chan struct{}
	closed sync.Once
}

func newConnListener() *connListener {
	return &connListener{ch: make(chan net.Conn), done: make(chan struct{})}
}

func (l *connListener) serve(ctx context.Context, c net.Conn) {
	select {
	case l.ch <- c:
	case <-ctx.Done():
		c.Close()
	case <-l.done:
		c.Close()
	}
}

func (l *connListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ch:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *connListener) Close() error {
	l.closed.Do(func() { close(l.done) })
	return nil
}

func (l *connListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 3128} }
