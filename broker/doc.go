// Package broker is the egress proxy of a plugin process: the only way its
// traffic leaves the sandbox, and the only component that ever holds a
// secret value.
//
// One [Broker] serves one plugin process (so every request is attributed)
// on a listener the sandbox hands it: a loopback TCP listener inside the
// plugin's network namespace or a unix socket. It speaks the forward-proxy
// protocol every HTTP client knows (absolute-form requests and CONNECT);
// [Broker.Env] gives the plugin the proxy variables, the per-install [CA]
// certificate (SSL_CERT_FILE, NODE_EXTRA_CA_CERTS, REQUESTS_CA_BUNDLE, …)
// and, for unmodified plugins, a placeholder in the variable each secret
// names.
//
// HTTPS tunnels are terminated with a leaf certificate minted for the
// CONNECT target, so the broker sees method, path and headers. The SNI
// and every Host header must name that target (BROKER_TARGET_MISMATCH).
//
// Each request then goes through one pipeline, in this order:
//
//  1. rate limit (BROKER_RATE_LIMITED), normalization with
//     [weburl.Normalize], Host and target checks, size cap
//     (NETWORK_REQUEST_TOO_LARGE); hop-by-hop headers and
//     Proxy-Authorization are dropped;
//  2. placeholder scan: a placeholder (or its random token, which survives
//     URL encoding) in the URL, the body, or a header toward another
//     origin than its secret's purpose is SECRET_ORIGIN_MISMATCH; one this
//     broker did not issue is SECRET_UNDECLARED;
//  3. policy decision on (method, origin, path), and a secret.use
//     decision for every secret whose purpose is this origin;
//  4. the secret values, from the vault (SECRET_UNAVAILABLE when missing);
//  5. approval through the approver ([Config.Approver], an
//     approval.Authorizer such as *approval.Service) when the decision is
//     approval_required, bound to [ActionHash] (identity, method, URL and
//     body digest), so a changed body is a new action (a ticket for
//     another action is APPROVAL_MISMATCH);
//  6. an audit event, durable before anything is sent (AUDIT_UNAVAILABLE
//     otherwise);
//  7. injection (placeholders replaced in headers, the declared header
//     set), Idempotency-Key from the approval, and the request handed to
//     [netguard.Transport], the same egress path the built-in web tools
//     use: it normalizes the URL again, rebuilds the request from it and
//     refuses it unless the request-URI on the wire is exactly the checked
//     path (NETWORK_INVALID_URL), sends it only if what it checked is the
//     request decided in step 3 (NETWORK_DESTINATION_DENIED otherwise),
//     and dials through [netguard.Dialer] (one lookup, every address
//     checked, the checked address dialed and re-checked at connect time:
//     no rebinding, NETWORK_PRIVATE_ADDRESS) with full TLS verification;
//  8. the response relayed as is, never decompressed (redirects included:
//     the client's next hop is a new request through this whole pipeline,
//     so every hop is checked like the first, and credentials are only
//     ever added toward their purpose), hop-by-hop headers dropped, secret
//     values masked, body capped by the Transport
//     (NETWORK_RESPONSE_TOO_LARGE).
//
// A request the plugin spells differently from its normal form (dot
// segments, needless percent-encodings) is decided and sent in the normal
// form: the upstream receives exactly the path that was checked.
//
// Denials are JSON bodies {"reason", "message", …} with an HTTP status
// (see [Broker]) and an audit event; nothing is sent upstream for a
// denied request.
package broker
