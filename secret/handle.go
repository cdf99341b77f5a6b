package secret

import (
	"fmt"
	"net/textproto"
	"slices"
	"strings"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/guard/netguard/weburl"
	"github.com/norma-run/norma/manifest"
)

// InjectBrokeredHeader is the only injection mode: the broker puts the
// value in a request header toward the purpose origin.
const InjectBrokeredHeader = "brokered_header"

// Handle is a reference to a secret bound to a purpose: the secret name,
// the normalized origin it may be sent to, its scopes, and the header that
// carries it. A Handle holds no value; only the broker resolves it, and
// only for a request to exactly [Handle.Purpose]. It is immutable and
// comparable by [Handle.String]; the zero Handle is invalid and every
// consumer refuses it.
type Handle struct {
	name    string
	purpose string
	scopes  []string
	header  string
	bearer  bool
	env     string
}

// forbiddenHeaders may never carry a secret: they frame the message or
// address the proxy.
var forbiddenHeaders = []string{
	"Host", "Content-Length", "Content-Type", "Transfer-Encoding", "Connection", "Keep-Alive",
	"Proxy-Authorization", "Proxy-Authenticate", "Proxy-Connection", "Te", "Trailer", "Upgrade",
	"Idempotency-Key",
}

// NewHandle validates a manifest secrets entry and returns its handle. The
// purpose is normalized again (a hand-built manifest.Secret is not
// trusted), inject_as must be "brokered_header", and the header defaults
// to Authorization with the "Bearer " scheme. Errors have reason
// SECRET_INVALID.
func NewHandle(s manifest.Secret) (Handle, error) {
	if err := CheckName(s.Name); err != nil {
		return Handle{}, err
	}
	bad := func(format string, args ...any) (Handle, error) {
		return Handle{}, newErr(capability.ReasonSecretInvalid, s.Name, fmt.Sprintf(format, args...), nil)
	}
	if s.InjectAs != InjectBrokeredHeader {
		return bad("secret %q: inject_as %q is not supported (want %s)", s.Name, s.InjectAs, InjectBrokeredHeader)
	}
	purpose, err := weburl.NormalizeOrigin(s.Purpose)
	if err != nil {
		return bad("secret %q: purpose is not an origin", s.Name)
	}
	h := Handle{name: s.Name, purpose: purpose, scopes: slices.Clone(s.Scopes), env: s.Env}
	slices.Sort(h.scopes)
	switch {
	case s.Header == "":
		h.header, h.bearer = "Authorization", true
	case !validToken(s.Header):
		return bad("secret %q: header %q is not a valid header name", s.Name, s.Header)
	default:
		h.header = textproto.CanonicalMIMEHeaderKey(s.Header)
		h.bearer = h.header == "Authorization"
	}
	if slices.Contains(forbiddenHeaders, h.header) {
		return bad("secret %q: header %s cannot carry a secret", s.Name, h.header)
	}
	if s.Env != "" && !validEnv(s.Env) {
		return bad("secret %q: env %q is not a valid variable name", s.Name, s.Env)
	}
	return h, nil
}

// Handles returns the handles of every secret a manifest declares.
func Handles(m *manifest.Manifest) ([]Handle, error) {
	if m == nil {
		return nil, nil
	}
	out := make([]Handle, 0, len(m.Permissions.Secrets))
	for _, s := range m.Permissions.Secrets {
		h, err := NewHandle(s)
		if err != nil {
			return nil, err
		}
		out = append(out, h)
	}
	return out, nil
}

// Valid reports whether h came from [NewHandle].
func (h Handle) Valid() bool { return h.name != "" && h.purpose != "" && h.header != "" }

// Name returns the secret name.
func (h Handle) Name() string { return h.name }

// Purpose returns the normalized origin (scheme://host:port) the secret may
// be sent to.
func (h Handle) Purpose() string { return h.purpose }

// Scopes returns a copy of the declared scopes, sorted.
func (h Handle) Scopes() []string { return slices.Clone(h.scopes) }

// Header returns the canonical name of the header that carries the value.
func (h Handle) Header() string { return h.header }

// Bearer reports whether the value is sent as "Bearer VALUE" (the
// Authorization header) rather than verbatim.
func (h Handle) Bearer() bool { return h.bearer }

// Env returns the environment variable that receives the placeholder, or "".
func (h Handle) Env() string { return h.env }

// HeaderValue returns the header value for v: "Bearer " + v or v itself.
// The result is secret; the broker writes it to the upstream request and
// nowhere else.
func (h Handle) HeaderValue(v Value) string {
	if h.bearer {
		return "Bearer " + string(v.Reveal())
	}
	return string(v.Reveal())
}

// String describes the handle; it holds no value.
func (h Handle) String() string {
	if !h.Valid() {
		return "secret(invalid)"
	}
	return "secret " + h.name + " for " + h.purpose + " in " + h.header + " scopes [" + strings.Join(h.scopes, " ") + "]"
}

func validToken(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

func validEnv(s string) bool {
	if s == "" || len(s) > 128 || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}
