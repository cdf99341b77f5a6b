// Package netguard is Norma's network guard: everything a tool sends out of
// the process passes through it.
//
// It has three layers, each usable on its own. [NormalizeURL] and
// [NormalizeOrigin] turn a URL into the one canonical spelling that policy
// rules are written against (lower-case scheme and host, IDNA, explicit
// port, inet_aton IPv4 forms rewritten in dotted decimal, dot segments
// resolved, an encoded "/" kept as %2F inside its segment, userinfo refused),
// so that two spellings of one destination can never get two decisions.
// [CheckAddr] classifies an IP address and refuses every address that is not
// a public unicast address (loopback, RFC 1918, link-local, CGNAT,
// unique-local, multicast, documentation and reserved ranges, the cloud
// metadata endpoints, and IPv4 addresses embedded in IPv6 forms) unless an
// allow_private prefix admits it. [Dialer] resolves a name once, checks every
// resolved address, dials the checked address itself (so DNS rebinding cannot
// switch the target between check and use) and re-checks the peer at connect
// time; [Transport] is an http.RoundTripper that asks a capability.Checker
// about every request, redirect hops included, before a single byte is sent,
// and [NewClient] wraps it in an http.Client whose redirect policy refuses
// downgrades and strips credentials across origins.
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
