// Package httpclient builds the HTTP client the model providers use when the
// caller supplies none: its own transport (never http.DefaultTransport), no
// proxy taken from the environment, no redirects (a redirect would carry the
// x-api-key header, which net/http does not strip, to another host), and
// bounded connection set-up. Whole
// requests are bounded by the caller's context, not by a client timeout,
// because a streamed turn may legitimately last minutes.
package httpclient

import (
	"net"
	"net/http"
	"time"
)

// New returns a fresh client. A caller that needs a proxy passes its own
// *http.Client to the provider instead.
func New() *http.Client {
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	t := &http.Transport{
		Proxy:                 nil,
		DialContext:           d.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          10,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   15 * time.Second,
		ResponseHeaderTimeout: 5 * time.Minute,
		ExpectContinueTimeout: time.Second,
	}
	return &http.Client{
		Transport: t,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}
