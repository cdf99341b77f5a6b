package fakeapi

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
)

// Request is one request a fake received.
type Request struct {
	Method, Path string
	// Query is the URL's query without a key parameter.
	Query string
	// Header is the request's headers without the credentials
	// (Authorization, X-Api-Key, X-Goog-Api-Key).
	Header http.Header
	Body   []byte
}

// Handler answers one request whose body was read (at most 64 MiB).
type Handler func(w http.ResponseWriter, r *http.Request, body []byte)

// Recorder is a running loopback server that records what it receives.
// Its methods are safe for concurrent use.
type Recorder struct {
	// Addr is the listening address, host:port.
	Addr string

	srv  *http.Server
	mu   sync.Mutex
	reqs []Request
}

// Listen starts a Recorder on a loopback port that hands every request
// to h after recording it; name prefixes its errors.
func Listen(name string, h Handler) (*Recorder, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	r := &Recorder{Addr: ln.Addr().String()}
	r.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, err := io.ReadAll(io.LimitReader(req.Body, 64<<20))
		if err != nil {
			http.Error(w, "read body", http.StatusBadRequest)
			return
		}
		r.record(req, body)
		h(w, req, body)
	})}
	go r.srv.Serve(ln)
	return r, nil
}

// Close stops the server.
func (r *Recorder) Close() error { return r.srv.Close() }

func (r *Recorder) record(req *http.Request, body []byte) {
	h := req.Header.Clone()
	for _, k := range []string{"Authorization", "X-Api-Key", "X-Goog-Api-Key"} {
		h.Del(k)
	}
	q := req.URL.Query()
	q.Del("key")
	r.mu.Lock()
	r.reqs = append(r.reqs, Request{Method: req.Method, Path: req.URL.Path, Query: q.Encode(), Header: h, Body: body})
	r.mu.Unlock()
}

// Requests returns every request received so far, in order.
func (r *Recorder) Requests() []Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Request(nil), r.reqs...)
}

// Bodies returns the bodies of every request received so far, joined:
// what a test scans for text that must (or must not) have reached the
// model.
func (r *Recorder) Bodies() string {
	var b strings.Builder
	for _, q := range r.Requests() {
		b.Write(q.Body)
		b.WriteByte('\n')
	}
	return b.String()
}
