// Package netguard is Norma's network guard: everything a tool sends out of
// the process passes through it.
//
// URLs are normalized by the leaf package [weburl] (the one canonical
// spelling that policy rules are written against; manifest and policy use
// it without pulling in this package's dialing and net/http). On top of it
// netguard has three layers, each usable on its own. [CheckAddr] classifies
// an IP address and refuses every address that is not a public unicast
// address (loopback, RFC 1918, link-local, CGNAT, unique-local, multicast,
// documentation and reserved ranges, the cloud metadata endpoints, and IPv4
// addresses embedded in IPv6 forms) unless an allow_private prefix admits
// it. [Dialer] resolves a name once, checks every resolved address, dials
// the checked address itself (so DNS rebinding cannot switch the target
// between check and use) and re-checks the peer at connect time.
// [Transport] is an http.RoundTripper, the one egress path of Norma (the
// built-in web tools and the plugins' egress broker both send through it),
// that normalizes every request, rebuilds it from the normalized URL and
// refuses it unless the request-URI on the wire is the checked path, and
// asks a capability.Decider about it, redirect hops included, before a
// single byte is sent; [NewClient] wraps it in an http.Client whose
// redirect policy refuses downgrades and strips credentials across
// origins.
//
// Every refusal is (or wraps) a *capability.Error with a stable reason code:
// NETWORK_INVALID_URL, NETWORK_PRIVATE_ADDRESS, NETWORK_RESOLVE_FAILED,
// NETWORK_REDIRECT_DENIED, NETWORK_RESPONSE_TOO_LARGE, or the reason of the
// policy decision that refused the request.
//
// What it does not protect against: a permitted server that itself proxies
// to internal networks, data sent to a permitted destination, and traffic
// that does not go through this package (the OS sandbox bounds that).
package netguard
