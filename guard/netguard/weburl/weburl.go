// Package weburl normalizes http and https URLs and origins into the one
// canonical spelling that policy rules are written against, so that two
// spellings of one destination can never get two decisions.
//
// It is a leaf: it imports net/netip, golang.org/x/net/idna and
// [capability] (for its reason codes), and nothing that dials or speaks
// HTTP, so that manifest and policy can use it without pulling in net/http
// (deps_test.go keeps it so). Sending a request to a normalized URL is the
// job of package netguard, whose Transport is the one place that turns a
// [URL] into a request on the wire.
package weburl

import (
	"net/netip"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/idna"

	"github.com/norma-run/norma/capability"
)

// hostProfile is the IDNA profile used for every host name: UTS #46 lookup
// mapping (non-transitional), STD3 ASCII rules, label validation including
// the hyphen and joiner rules, the Bidi rule, and DNS length limits. It is
// immutable after construction and safe for concurrent use.
var hostProfile = idna.New(
	idna.MapForLookup(),
	idna.Transitional(false),
	idna.BidiRule(),
	idna.VerifyDNSLength(true),
	idna.CheckHyphens(true),
	idna.CheckJoiners(true),
)

// maxURLLen bounds the input accepted by [Normalize] and [NormalizeOrigin].
const maxURLLen = 8192

// URL is a normalized absolute http or https URL, as produced by
// [Normalize]. The fields are already in canonical form; building a URL by
// hand skips normalization, so guards only trust values returned by
// Normalize.
type URL struct {
	// Scheme is "http" or "https".
	Scheme string
	// Host is the lower-case ASCII (IDNA) host name, the dotted-decimal IPv4
	// address, or the canonical IPv6 address WITHOUT brackets ("::1").
	Host string
	// Port is the explicit or default port, never 0.
	Port uint16
	// Origin is scheme://host:port with IPv6 hosts in brackets.
	Origin string
	// Path is the escaped, dot-segment-free path; it always starts with "/".
	// Percent-encodings of unreserved characters are decoded, every other
	// percent-encoding is kept with upper-case hex (so an encoded "/" stays
	// "%2F" inside its segment), and characters that may not appear raw in a
	// path are percent-encoded.
	Path string
	// RawQuery is the query string without "?", kept verbatim; it is not part
	// of policy matching.
	RawQuery string
}

// String returns Origin + Path, followed by "?" + RawQuery when the query is
// not empty. Normalize(u.String()) returns u again.
func (u URL) String() string {
	if u.RawQuery == "" {
		return u.Origin + u.Path
	}
	return u.Origin + u.Path + "?" + u.RawQuery
}

// RequestURI returns the request target in origin form: Path, followed by
// "?" + RawQuery when the query is not empty. It is exactly what a request
// for u must carry on its request line.
func (u URL) RequestURI() string {
	if u.RawQuery == "" {
		return u.Path
	}
	return u.Path + "?" + u.RawQuery
}

// HostPort returns host:port suitable for dialing ("[::1]:443" for IPv6).
func (u URL) HostPort() string {
	return hostPort(u.Host, u.Port)
}

func hostPort(host string, port uint16) string {
	var buf [5]byte
	p := portBytes(&buf, port)
	if strings.IndexByte(host, ':') >= 0 {
		return "[" + host + "]:" + string(p)
	}
	return host + ":" + string(p)
}

// portBytes formats port into buf without allocating.
func portBytes(buf *[5]byte, port uint16) []byte {
	return strconv.AppendUint(buf[:0], uint64(port), 10)
}

// makeOrigin builds scheme://host:port with a single allocation.
func makeOrigin(scheme, host string, port uint16) string {
	var buf [5]byte
	p := portBytes(&buf, port)
	if strings.IndexByte(host, ':') >= 0 {
		return scheme + "://[" + host + "]:" + string(p)
	}
	return scheme + "://" + host + ":" + string(p)
}

// NormalizeOrigin returns the canonical form scheme://host:port of an origin,
// e.g. "HTTPS://API.Example.invalid." becomes "https://api.example.invalid:443".
//
// Only http and https are accepted. The host is lower-cased, one trailing dot
// is removed, and it is converted to ASCII with a strict IDNA lookup profile;
// IPv4 hosts written in any inet_aton form (2130706433, 0x7f.1, 017.0.0.1) are
// rewritten in dotted decimal; IPv6 hosts are written in canonical form inside
// brackets. The default port is made explicit. Userinfo, a path other than
// "" or "/", a query, a fragment, wildcards, an empty host, an IPv6 zone and
// bad ports are refused.
//
// Errors are of type *capability.Error with reason NETWORK_INVALID_URL.
func NormalizeOrigin(s string) (string, error) {
	p, err := parse(s, true)
	if err != nil {
		return "", err
	}
	return p.Origin, nil
}

// Normalize parses an absolute http or https URL and returns it in the
// canonical form described on [URL]. Dot segments ("." and "..", including
// their percent-encoded spellings) are resolved and never climb above the
// root. A fragment is dropped (it is never sent). Userinfo, raw backslashes,
// control characters, invalid percent-encodings and everything refused by
// [NormalizeOrigin] in the authority are refused.
//
// Errors are of type *capability.Error with reason NETWORK_INVALID_URL.
func Normalize(raw string) (URL, error) {
	u, err := parse(raw, false)
	if err != nil {
		return URL{}, err
	}
	return u, nil
}

func invalid(raw, detail string) error {
	return capability.Denied(capability.ReasonNetworkInvalidURL, Redact(raw), detail)
}

// Redact returns raw for use in an error or a log line: truncated to 256
// bytes, with any userinfo replaced by "REDACTED" and invalid UTF-8
// replaced, so that credentials never reach logs or the model. raw need
// not be a valid URL.
func Redact(raw string) string {
	if len(raw) > 256 {
		raw = raw[:256] + "…"
	}
	if i := strings.Index(raw, "//"); i >= 0 {
		rest := raw[i+2:]
		end := strings.IndexAny(rest, "/?#")
		if end < 0 {
			end = len(rest)
		}
		if at := strings.LastIndexByte(rest[:end], '@'); at >= 0 {
			raw = raw[:i+2] + "REDACTED@" + rest[at+1:]
		}
	}
	if !utf8.ValidString(raw) {
		raw = strings.ToValidUTF8(raw, "\uFFFD")
	}
	return raw
}

func parse(raw string, originOnly bool) (URL, error) {
	var u URL
	if len(raw) > maxURLLen {
		return u, invalid(raw, "URL too long")
	}
	for i := 0; i < len(raw); i++ {
		if c := raw[i]; c <= ' ' || c == 0x7f {
			return u, invalid(raw, "control character or space in URL")
		}
	}
	// Scheme.
	colon := strings.IndexByte(raw, ':')
	if colon < 0 {
		return u, invalid(raw, "missing scheme")
	}
	switch {
	case strings.EqualFold(raw[:colon], "https"):
		u.Scheme, u.Port = "https", 443
	case strings.EqualFold(raw[:colon], "http"):
		u.Scheme, u.Port = "http", 80
	default:
		return u, invalid(raw, "scheme must be http or https")
	}
	rest := raw[colon+1:]
	if !strings.HasPrefix(rest, "//") {
		return u, invalid(raw, "URL must be absolute (scheme://host)")
	}
	rest = rest[2:]
	end := strings.IndexAny(rest, "/?#\\")
	if end < 0 {
		end = len(rest)
	}
	authority := rest[:end]
	rest = rest[end:]
	if strings.IndexByte(authority, '@') >= 0 {
		return u, invalid(raw, "userinfo is not allowed")
	}
	if err := parseAuthority(raw, authority, &u); err != nil {
		return u, err
	}
	u.Origin = makeOrigin(u.Scheme, u.Host, u.Port)

	// Path, query, fragment.
	var path, query string
	hasQuery, hasFrag := false, false
	if i := strings.IndexByte(rest, '#'); i >= 0 {
		rest, hasFrag = rest[:i], true
	}
	if i := strings.IndexByte(rest, '?'); i >= 0 {
		path, query, hasQuery = rest[:i], rest[i+1:], true
	} else {
		path = rest
	}
	if strings.IndexByte(path, '\\') >= 0 {
		return u, invalid(raw, "backslash in path")
	}
	if originOnly {
		if path != "" && path != "/" {
			return u, invalid(raw, "origin must not have a path")
		}
		if hasQuery {
			return u, invalid(raw, "origin must not have a query")
		}
		if hasFrag {
			return u, invalid(raw, "origin must not have a fragment")
		}
		u.Path = "/"
		return u, nil
	}
	if err := checkQuery(query); err != nil {
		return u, invalid(raw, err.Error())
	}
	p, err := normalizePath(path)
	if err != nil {
		return u, invalid(raw, err.Error())
	}
	u.Path = p
	u.RawQuery = query
	if len(u.String()) > maxURLLen {
		// Escaping may triple a byte (\x82 is %82): a URL accepted here
		// must be one Normalize accepts again, as it prints it.
		return URL{}, invalid(raw, "URL too long once normalized")
	}
	return u, nil
}

func parseAuthority(raw, authority string, u *URL) error {
	host := authority
	portStr, hasPort := "", false
	if strings.HasPrefix(authority, "[") {
		rb := strings.IndexByte(authority, ']')
		if rb < 0 {
			return invalid(raw, "unterminated IPv6 literal")
		}
		host = authority[1:rb]
		after := authority[rb+1:]
		if after != "" {
			if after[0] != ':' {
				return invalid(raw, "garbage after IPv6 literal")
			}
			portStr, hasPort = after[1:], true
		}
		if strings.IndexByte(host, '%') >= 0 {
			return invalid(raw, "IPv6 zone is not allowed")
		}
		a, err := netip.ParseAddr(host)
		if err != nil || !a.Is6() {
			return invalid(raw, "bad IPv6 literal")
		}
		u.Host = a.String()
	} else {
		if i := strings.IndexByte(authority, ':'); i >= 0 {
			host, portStr, hasPort = authority[:i], authority[i+1:], true
		}
		h, err := normalizeHost(host)
		if err != "" {
			return invalid(raw, err)
		}
		u.Host = h
	}
	if hasPort {
		p, ok := parsePort(portStr)
		if !ok {
			return invalid(raw, "bad port")
		}
		u.Port = p
	}
	return nil
}

// parsePort accepts 1 to 5 decimal digits with a value in 1..65535.
func parsePort(s string) (uint16, bool) {
	if s == "" || len(s) > 5 {
		return 0, false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	if n == 0 || n > 65535 {
		return 0, false
	}
	return uint16(n), true
}

// NormalizeHost returns the canonical form of a host name as [Normalize]
// writes it in [URL.Host]: a lower-case ASCII (IDNA) domain name without a
// trailing dot, or a dotted-decimal IPv4 address for any inet_aton
// spelling. IPv6 literals (with or without brackets), wildcards,
// percent-encoding and empty names are refused.
//
// Errors are of type *capability.Error with reason NETWORK_INVALID_URL.
func NormalizeHost(host string) (string, error) {
	h, detail := normalizeHost(host)
	if detail != "" {
		return "", capability.Denied(capability.ReasonNetworkInvalidURL, Redact(host), detail)
	}
	return h, nil
}

// normalizeHost returns the canonical host (a lower-case ASCII domain name or
// a dotted-decimal IPv4 address) or a non-empty error detail.
func normalizeHost(host string) (string, string) {
	if host == "" {
		return "", "empty host"
	}
	if strings.IndexByte(host, '*') >= 0 {
		return "", "wildcards are not allowed in a host"
	}
	if strings.IndexByte(host, '%') >= 0 {
		return "", "percent-encoding is not allowed in a host"
	}
	host = strings.TrimSuffix(host, ".")
	if host == "" {
		return "", "empty host"
	}
	h, ok := asciiFast(host)
	if !ok {
		if !utf8.ValidString(host) {
			return "", "host is not valid UTF-8"
		}
		var err error
		h, err = hostProfile.ToASCII(host)
		if err != nil {
			return "", "invalid host name"
		}
		// The result must itself be a valid lookup name that maps to itself;
		// otherwise the canonical form would not be stable.
		if again, err := hostProfile.ToASCII(h); err != nil || again != h {
			return "", "invalid host name"
		}
		if strings.HasSuffix(h, ".") {
			return "", "invalid host name" // e.g. a trailing U+3002 after a trailing dot
		}
	}
	if h == "" {
		return "", "empty host"
	}
	// A host whose last label is a number is an IPv4 address in one of the
	// inet_aton spellings (as in the WHATWG URL standard), or it is refused.
	last := h
	if i := strings.LastIndexByte(h, '.'); i >= 0 {
		last = h[i+1:]
	}
	if isNumberLabel(last) {
		a, ok := parseIPv4(h)
		if !ok {
			return "", "invalid IPv4 address"
		}
		return a.String(), ""
	}
	return h, ""
}

// asciiFast handles the common case of a host made only of ASCII letters,
// digits, hyphens and dots with well-formed labels and no "xn--" label:
// IDNA lookup mapping reduces to lower-casing for such names, so the result
// equals hostProfile.ToASCII (the fuzz test checks this). It returns ok=false
// when the general path is needed.
func asciiFast(host string) (string, bool) {
	h := host
	if len(h) == 0 || len(h) > 253 {
		return "", false
	}
	upper := false
	labelStart := 0
	for i := 0; i <= len(h); i++ {
		if i == len(h) || h[i] == '.' {
			l := h[labelStart:i]
			if len(l) == 0 || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
				return "", false
			}
			if len(l) >= 4 && l[2] == '-' && l[3] == '-' {
				return "", false // xn-- and other reserved hyphen forms
			}
			labelStart = i + 1
			continue
		}
		c := h[i]
		switch {
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '-':
		case 'A' <= c && c <= 'Z':
			upper = true
		default:
			return "", false
		}
	}
	if upper {
		h = strings.ToLower(h)
	}
	return h, true
}

func isNumberLabel(l string) bool {
	if l == "" {
		return false
	}
	if strings.HasPrefix(l, "0x") {
		for i := 2; i < len(l); i++ {
			if !isHex(l[i]) {
				return false
			}
		}
		return true
	}
	for i := 0; i < len(l); i++ {
		if l[i] < '0' || l[i] > '9' {
			return false
		}
	}
	return true
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// parseIPv4 parses the inet_aton forms: 1 to 4 dot-separated parts, each
// decimal, octal (leading 0) or hexadecimal (0x); the last part fills the
// remaining bytes. h is already lower-case.
func parseIPv4(h string) (netip.Addr, bool) {
	var parts [4]uint64
	n := 0
	for len(h) > 0 || n == 0 {
		if n == 4 {
			return netip.Addr{}, false
		}
		part := h
		if i := strings.IndexByte(h, '.'); i >= 0 {
			part, h = h[:i], h[i+1:]
			if h == "" {
				return netip.Addr{}, false
			}
		} else {
			h = ""
		}
		v, ok := parseIPv4Part(part)
		if !ok {
			return netip.Addr{}, false
		}
		parts[n] = v
		n++
	}
	for i := 0; i < n-1; i++ {
		if parts[i] > 255 {
			return netip.Addr{}, false
		}
	}
	if parts[n-1] >= 1<<(8*(5-n)) {
		return netip.Addr{}, false
	}
	v := parts[n-1]
	for i := 0; i < n-1; i++ {
		v |= parts[i] << (8 * (3 - i))
	}
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), true
}

func parseIPv4Part(s string) (uint64, bool) {
	if s == "" {
		return 0, false
	}
	base := uint64(10)
	switch {
	case strings.HasPrefix(s, "0x"):
		base, s = 16, s[2:]
		if s == "" {
			return 0, false
		}
	case len(s) > 1 && s[0] == '0':
		base, s = 8, s[1:]
	}
	if len(s) > 12 {
		// Longer than any valid value in any base (leading zeros included):
		// refuse rather than risk overflow.
		return 0, false
	}
	var v uint64
	for i := 0; i < len(s); i++ {
		c := s[i]
		var d uint64
		switch {
		case '0' <= c && c <= '9':
			d = uint64(c - '0')
		case base == 16 && 'a' <= c && c <= 'f':
			d = uint64(c-'a') + 10
		default:
			return 0, false
		}
		if d >= base {
			return 0, false
		}
		v = v*base + d
	}
	return v, true
}

type urlError string

func (e urlError) Error() string { return string(e) }

// checkQuery refuses bytes that are never valid in a query (the raw query is
// forwarded verbatim, so it must already be a valid escaped form).
func checkQuery(q string) error {
	for i := 0; i < len(q); i++ {
		c := q[i]
		switch {
		case c == '%':
			if i+2 >= len(q) || !isHex(q[i+1]) || !isHex(q[i+2]) {
				return urlError("invalid percent-encoding in query")
			}
		case c >= 0x80, c == '"', c == '<', c == '>', c == '\\', c == '^', c == '`', c == '{', c == '|', c == '}':
			return urlError("character must be percent-encoded in query")
		}
	}
	return nil
}

const upperHex = "0123456789ABCDEF"

// pathNeedsEscape reports whether c must be percent-encoded in a canonical
// path: everything but unreserved characters, sub-delimiters, ':', '@' and '/'.
func pathNeedsEscape(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return false
	}
	switch c {
	case '-', '.', '_', '~', // unreserved
		'!', '$', '&', '\'', '(', ')', '*', '+', ',', ';', '=', // sub-delims
		':', '@', '/':
		return false
	}
	return true
}

func isUnreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '-' || c == '.' || c == '_' || c == '~'
}

func unhex(c byte) byte {
	switch {
	case '0' <= c && c <= '9':
		return c - '0'
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10
	default:
		return c - 'A' + 10
	}
}

// normalizePath canonicalizes the escaping of p and resolves dot segments
// (RFC 3986 section 5.2.4), never climbing above the root.
func normalizePath(p string) (string, error) {
	if p == "" {
		return "/", nil
	}
	// Fast path: already canonical (no '%', no byte needing escape, no dot
	// segment) — returned without allocating.
	if isCanonicalPath(p) {
		return p, nil
	}
	var b strings.Builder
	b.Grow(len(p) + 8)
	for i := 0; i < len(p); i++ {
		c := p[i]
		if c == '%' {
			if i+2 >= len(p) || !isHex(p[i+1]) || !isHex(p[i+2]) {
				return "", urlError("invalid percent-encoding in path")
			}
			d := unhex(p[i+1])<<4 | unhex(p[i+2])
			i += 2
			if isUnreserved(d) {
				b.WriteByte(d)
			} else {
				b.WriteByte('%')
				b.WriteByte(upperHex[d>>4])
				b.WriteByte(upperHex[d&15])
			}
			continue
		}
		if pathNeedsEscape(c) {
			b.WriteByte('%')
			b.WriteByte(upperHex[c>>4])
			b.WriteByte(upperHex[c&15])
			continue
		}
		b.WriteByte(c)
	}
	return removeDotSegments(b.String()), nil
}

func isCanonicalPath(p string) bool {
	if p[0] != '/' {
		return false
	}
	segStart := 1
	for i := 1; i <= len(p); i++ {
		if i == len(p) || p[i] == '/' {
			s := p[segStart:i]
			if s == "." || s == ".." {
				return false
			}
			segStart = i + 1
			continue
		}
		if c := p[i]; c == '%' || pathNeedsEscape(c) {
			return false
		}
	}
	return true
}

// removeDotSegments resolves "." and ".." segments of an absolute path whose
// escaping is already canonical (so "%2E" can no longer occur).
func removeDotSegments(p string) string {
	if p == "" || p[0] != '/' {
		p = "/" + p
	}
	segs := strings.Split(p[1:], "/")
	out := make([]string, 0, len(segs))
	for i, s := range segs {
		last := i == len(segs)-1
		switch s {
		case ".":
			if last {
				out = append(out, "")
			}
		case "..":
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
			if last {
				out = append(out, "")
			}
		default:
			out = append(out, s)
		}
	}
	return "/" + strings.Join(out, "/")
}
