// Package fakeapi is a scripted HTTP server for provider tests: it answers
// requests with canned replies (status, headers, a testdata file or body),
// streams bodies in small flushed pieces as a real SSE server does, and
// records every request it received.
package fakeapi

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// Reply is one canned answer.
type Reply struct {
	Status int               // zero means 200
	Header map[string]string // extra response headers
	File   string            // body file under testdata/
	Body   string            // body used when File is empty
}

// Request is one request the server received.
type Request struct {
	Header http.Header
	Path   string
	Body   map[string]any
}

// Server serves replies in order.
type Server struct {
	*httptest.Server
	t       *testing.T
	mu      sync.Mutex
	replies []Reply
	got     []Request
}

// New starts a server closed at the end of the test.
func New(t *testing.T, replies ...Reply) *Server {
	t.Helper()
	s := &Server{t: t, replies: replies}
	s.Server = httptest.NewServer(s)
	t.Cleanup(s.Close)
	return s
}

// Requests returns what the server received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.got...)
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	raw, _ := io.ReadAll(r.Body)
	var body map[string]any
	if err := json.Unmarshal(raw, &body); err != nil {
		s.t.Errorf("request body is not JSON: %v\n%s", err, raw)
	}
	s.got = append(s.got, Request{Header: r.Header.Clone(), Path: r.URL.Path, Body: body})
	if len(s.replies) == 0 {
		s.t.Errorf("unexpected request %d", len(s.got))
		http.Error(w, `{"error":{"type":"api_error","message":"no more replies"}}`, http.StatusInternalServerError)
		return
	}
	rep := s.replies[0]
	s.replies = s.replies[1:]
	data := []byte(rep.Body)
	if rep.File != "" {
		var err error
		if data, err = os.ReadFile(filepath.Join("testdata", rep.File)); err != nil {
			s.t.Errorf("reading fixture: %v", err)
		}
	}
	ct := "text/event-stream"
	if rep.Status != 0 && rep.Status != http.StatusOK {
		ct = "application/json"
	}
	w.Header().Set("Content-Type", ct)
	w.Header().Set("request-id", "req_test")
	for k, v := range rep.Header {
		w.Header().Set(k, v)
	}
	if rep.Status != 0 {
		w.WriteHeader(rep.Status)
	}
	for len(data) > 0 {
		n := min(len(data), 97)
		w.Write(data[:n])
		if fl, ok := w.(http.Flusher); ok {
			fl.Flush()
		}
		data = data[n:]
	}
}
