package netguard

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/guard/netguard/weburl"
)

// Checked is a URL that this package normalized itself ([Check]). A caller
// that decides on a URL before it sends it (the broker: policy, secrets,
// approval, audit) checks it once with Check, decides on [Checked.URL], and
// sends [NewRequest]'s request: [Transport.RoundTrip] then knows that
// request's URL is the wire URL it built from that very normalization and
// does not normalize it again. Any other request, or one whose URL was
// changed since, is normalized as always. Only Check makes a Checked (its
// fields are unexported), so the shortcut cannot be handed a URL this
// package did not normalize.
type Checked struct {
	u weburl.URL
}

// Check normalizes raw with [weburl.Normalize].
func Check(raw string) (Checked, error) {
	u, err := weburl.Normalize(raw)
	if err != nil {
		return Checked{}, err
	}
	return Checked{u: u}, nil
}

// URL returns the normalized URL.
func (c Checked) URL() weburl.URL { return c.u }

// checkedCtx marks the context of a request NewRequest made: u is the
// normalization, wire the URL built from it (req.URL) and snap its value
// then.
type checkedCtx struct {
	context.Context
	u    weburl.URL
	wire *url.URL
	snap url.URL
}

type checkedKey struct{}

func (c *checkedCtx) Value(key any) any {
	if key == (checkedKey{}) {
		return c
	}
	return c.Context.Value(key)
}

// NewRequest returns a request of method for c on ctx, with header h (not
// nil) and body (none when empty; its length is the Content-Length and
// redirects and retries can replay it). Its URL is the wire URL of c and
// its Host empty (the Host header is the wire URL's); RoundTrip checks it
// like any other request, without normalizing it a second time.
func NewRequest(ctx context.Context, method string, c Checked, h http.Header, body []byte) (*http.Request, error) {
	if !validMethod(method) {
		return nil, capability.Denied(capability.ReasonNetworkInvalidURL, method+" "+c.u.Origin+c.u.Path, "netguard: invalid method")
	}
	wire, err := wireURL(c.u)
	if err != nil {
		return nil, capability.Denied(capability.ReasonNetworkInvalidURL, method+" "+c.u.Origin+c.u.Path, err.Error())
	}
	m := &checkedCtx{Context: ctx, u: c.u, wire: wire, snap: *wire}
	req := &http.Request{
		Method: method, URL: wire, Header: h,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
	}
	if len(body) > 0 {
		req.ContentLength = int64(len(body))
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	}
	return req.WithContext(m), nil
}

// checked returns the normalization of req's URL when NewRequest made req
// and its URL is still the one built then, pointer and value.
func checked(req *http.Request) (weburl.URL, bool) {
	m, ok := req.Context().Value(checkedKey{}).(*checkedCtx)
	if !ok || req.URL != m.wire || *req.URL != m.snap {
		return weburl.URL{}, false
	}
	return m.u, true
}
