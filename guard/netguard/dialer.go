package netguard

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strconv"
	"syscall"
	"time"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/guard/netguard/weburl"
)

// Resolver looks up the IP addresses of a host. *net.Resolver satisfies it;
// tests pass a fake.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

var _ Resolver = (*net.Resolver)(nil)

// PortMapper is implemented by a [Resolver] that also chooses the port the
// connections to a name go to: a test or demo network whose stand-in for
// https://api.example.invalid listens on a high loopback port, so that it
// needs no privilege. The policy has decided the URL as written (port
// 443); [Dialer.DialContext] then connects to the addresses the name
// resolved to, checked as always, at the port MapPort returns. It is
// consulted only for names the Resolver answered, never for IP literals.
type PortMapper interface {
	MapPort(host string, port uint16) uint16
}

// DefaultDialTimeout is the connect timeout used when Dialer.Timeout is zero.
const DefaultDialTimeout = 30 * time.Second

// Dialer dials TCP connections only to addresses that [CheckAddr] admits.
//
// DialContext resolves a host name exactly once, refuses the connection if
// ANY resolved address is refused, and then dials the checked addresses
// themselves, never the name, so a DNS answer that changes between check and
// use (DNS rebinding) cannot switch the target. The address the socket
// actually connects to is checked a second time in net.Dialer.ControlContext,
// just before connect(2).
//
// Why deny when any address is refused, rather than dial a good one: a name
// that resolves to both a public and a private address is the shape of a
// rebinding or split-horizon attack, and which address gets used would
// otherwise depend on ordering and on which connect happens to fail. Denying
// makes the decision a property of the whole answer.
//
// The zero Dialer uses a fresh net.Resolver (the system configuration),
// admits no private address and uses [DefaultDialTimeout]. A Dialer is safe
// for concurrent use once its fields are no longer modified. It does not
// protect against a permitted server that forwards the connection elsewhere.
type Dialer struct {
	// Resolver resolves host names; nil means a new net.Resolver.
	Resolver Resolver
	// AllowPrivate lists prefixes of otherwise refused addresses that may be
	// dialed (the policy's network.allow_private); see [CheckAddr].
	AllowPrivate []netip.Prefix
	// Timeout bounds each connect; zero means DefaultDialTimeout.
	Timeout time.Duration
	// KeepAlive is passed to net.Dialer; zero means the net package default.
	KeepAlive time.Duration
}

// DialContext connects to address ("host:port") on network "tcp", "tcp4" or
// "tcp6". Host may be a name or an IP literal; IP literals (including the
// inet_aton spellings accepted by [weburl.NormalizeHost]) skip DNS but are
// checked, and a name is looked up in its canonical form. The port must be
// numeric.
//
// Refusals are *capability.Error with reason NETWORK_PRIVATE_ADDRESS,
// NETWORK_INVALID_URL (a malformed address or unsupported network) or
// NETWORK_RESOLVE_FAILED; connect errors are returned as net.Dialer returns
// them.
func (d *Dialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	ipNet := ""
	switch network {
	case "tcp":
		ipNet = "ip"
	case "tcp4":
		ipNet = "ip4"
	case "tcp6":
		ipNet = "ip6"
	default:
		return nil, capability.Denied(capability.ReasonNetworkInvalidURL, network+" "+address, "only tcp, tcp4 and tcp6 are supported")
	}
	host, portStr, err := net.SplitHostPort(address)
	if err != nil {
		return nil, capability.Denied(capability.ReasonNetworkInvalidURL, address, "bad address: "+err.Error())
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil || port == 0 || len(portStr) > 5 {
		return nil, capability.Denied(capability.ReasonNetworkInvalidURL, address, "bad port")
	}
	ips, name, err := d.resolveChecked(ctx, ipNet, host)
	if err != nil {
		return nil, err
	}
	if pm, ok := d.Resolver.(PortMapper); ok && name != "" {
		if p := pm.MapPort(name, uint16(port)); p != 0 {
			port = uint64(p)
		}
	}
	var firstErr error
	for _, ip := range ips {
		c, err := d.dialChecked(ctx, network, netip.AddrPortFrom(ip, uint16(port)))
		if err == nil {
			return c, nil
		}
		if capability.ReasonOf(err) != "" {
			return nil, err // a refusal, not a connect failure: stop here
		}
		if firstErr == nil {
			firstErr = err
		}
		if ctx.Err() != nil {
			break
		}
	}
	return nil, firstErr
}

// CheckHost resolves host with r (nil: the system's resolver) and checks
// every address as [Dialer.DialContext] does before it connects: the
// decision of a dial to host, made without dialing, for a connection that
// another program will make (a fetch another agent runs, see
// gate.Call.Unconfined). Refusals are *capability.Error with reason
// NETWORK_PRIVATE_ADDRESS, NETWORK_INVALID_URL or NETWORK_RESOLVE_FAILED
// (a lookup that fails or times out: fail closed). The answer holds for
// the addresses seen now; the other program looks the name up again.
func CheckHost(ctx context.Context, r Resolver, host string, allowPrivate []netip.Prefix) error {
	d := Dialer{Resolver: r, AllowPrivate: allowPrivate}
	_, _, err := d.resolveChecked(ctx, "ip", host)
	return err
}

// resolveChecked is resolve, refused when any address is (CheckAddr).
func (d *Dialer) resolveChecked(ctx context.Context, ipNet, host string) ([]netip.Addr, string, error) {
	ips, name, err := d.resolve(ctx, ipNet, host)
	if err != nil {
		return nil, "", err
	}
	for _, ip := range ips {
		if err := CheckAddr(ip, d.AllowPrivate); err != nil {
			return nil, "", err
		}
	}
	return ips, name, nil
}

// resolve returns the addresses for host: the literal itself, or the answer
// of a single lookup, with the canonical name that was looked up ("" for
// a literal).
func (d *Dialer) resolve(ctx context.Context, ipNet, host string) ([]netip.Addr, string, error) {
	if a, err := netip.ParseAddr(host); err == nil {
		if a.Zone() != "" {
			return nil, "", capability.Denied(capability.ReasonNetworkInvalidURL, host, "IPv6 zones are not allowed")
		}
		return []netip.Addr{a.Unmap()}, "", nil
	}
	canon, err := weburl.NormalizeHost(host)
	if err != nil {
		return nil, "", err
	}
	if a, err := netip.ParseAddr(canon); err == nil {
		return []netip.Addr{a}, "", nil // an inet_aton spelling of an IPv4 address
	}
	r := d.Resolver
	if r == nil {
		r = &net.Resolver{}
	}
	ips, err := r.LookupNetIP(ctx, ipNet, canon)
	if err != nil {
		return nil, "", &capability.Error{
			Decision: capability.Decision{Mode: capability.Deny, Reason: capability.ReasonNetworkResolveFailed, Layer: "guard", Request: canon},
			Detail:   "lookup failed: " + err.Error(),
		}
	}
	out := make([]netip.Addr, 0, len(ips))
	for _, ip := range ips {
		if !ip.IsValid() {
			return nil, "", capability.Denied(capability.ReasonNetworkResolveFailed, canon, "resolver returned an invalid address")
		}
		ip = ip.WithZone("").Unmap()
		switch ipNet {
		case "ip4":
			if !ip.Is4() {
				continue
			}
		case "ip6":
			if ip.Is4() {
				continue
			}
		}
		out = append(out, ip)
	}
	if len(out) == 0 {
		return nil, "", capability.Denied(capability.ReasonNetworkResolveFailed, canon, "no address")
	}
	return out, canon, nil
}

// dialChecked connects to exactly ap; ControlContext refuses the connect if
// the socket's destination is not ap or is no longer admitted.
func (d *Dialer) dialChecked(ctx context.Context, network string, ap netip.AddrPort) (net.Conn, error) {
	timeout := d.Timeout
	if timeout <= 0 {
		timeout = DefaultDialTimeout
	}
	nd := &net.Dialer{
		Timeout:        timeout,
		KeepAlive:      d.KeepAlive,
		ControlContext: d.control(ap),
	}
	c, err := nd.DialContext(ctx, network, ap.String())
	if err != nil {
		var ce *capability.Error
		if errors.As(err, &ce) {
			return nil, ce
		}
		return nil, err
	}
	return c, nil
}

// control returns the net.Dialer.ControlContext hook that re-checks the
// address the socket is about to connect to.
func (d *Dialer) control(want netip.AddrPort) func(ctx context.Context, network, address string, c syscall.RawConn) error {
	return func(_ context.Context, network, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return capability.Denied(capability.ReasonNetworkPrivateAddress, address, "connect-time address unparsable")
		}
		got := netip.AddrPortFrom(ap.Addr().WithZone("").Unmap(), ap.Port())
		if got != netip.AddrPortFrom(want.Addr().Unmap(), want.Port()) {
			return capability.Denied(capability.ReasonNetworkPrivateAddress, address,
				"connect-time address "+address+" is not the checked address "+want.String())
		}
		return CheckAddr(got.Addr(), d.AllowPrivate)
	}
}
