// Package issueapi is a small issue-tracker API over TLS, served on loopback
// for the demo and the plugin host tests. It stands in for
// https://api.example.invalid: it has its own CA, a certificate for the
// names it is given, and it records what it received (comments with their
// Idempotency-Key, the Authorization values it saw) so tests can assert
// exactly what reached the "remote" system.
package issueapi

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"
)

// Comment is one posted comment.
type Comment struct {
	ID             int    `json:"id"`
	Owner          string `json:"owner"`
	Number         string `json:"number"`
	Body           string `json:"body"`
	IdempotencyKey string `json:"-"`
}

// Server is a running fake API.
type Server struct {
	// Addr is the host:port it listens on.
	Addr string
	// Pool trusts its certificate.
	Pool *x509.CertPool
	// Token is the bearer token it requires; empty accepts any.
	Token string

	srv *http.Server
	ln  net.Listener

	mu       sync.Mutex
	comments []Comment
	byKey    map[string]int
	auth     []string
	requests int
}

// Start serves on addr (e.g. "127.0.0.1:0", a port the kernel chooses;
// Server.Addr says which) with a certificate for names. Point a
// [Resolver] at Server.Addr to reach it as https://NAME.
func Start(addr, token string, names ...string) (*Server, error) {
	cert, pool, err := selfSigned(names)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	s := &Server{Addr: ln.Addr().String(), Pool: pool, Token: token, ln: ln, byKey: map[string]int{}}
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 5 * time.Second,
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}}
	go s.srv.ServeTLS(ln, "", "")
	return s, nil
}

// Close stops the server.
func (s *Server) Close() error { return s.srv.Close() }

// Comments returns the comments posted so far.
func (s *Server) Comments() []Comment {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Comment(nil), s.comments...)
}

// AuthSeen returns every Authorization header value received.
func (s *Server) AuthSeen() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.auth...)
}

// Requests counts the requests received.
func (s *Server) Requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.requests++
	s.auth = append(s.auth, r.Header.Get("Authorization"))
	s.mu.Unlock()
	if s.Token != "" && r.Header.Get("Authorization") != "Bearer "+s.Token {
		http.Error(w, `{"message":"bad credentials"}`, http.StatusUnauthorized)
		return
	}
	seg := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.Method == "GET" && len(seg) == 3 && seg[0] == "repos" && seg[2] == "issues":
		json.NewEncoder(w).Encode([]map[string]any{
			{"number": 41, "title": "Crash when the config file is empty", "state": "open"},
			{"number": 42, "title": "Document the --home flag", "state": "open"},
			{"number": 7, "title": "Old bug", "state": "closed"},
		})
	case r.Method == "POST" && len(seg) == 5 && seg[0] == "repos" && seg[2] == "issues" && seg[4] == "comments":
		var in struct{ Body string }
		if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&in); err != nil {
			http.Error(w, `{"message":"bad json"}`, http.StatusBadRequest)
			return
		}
		key := r.Header.Get("Idempotency-Key")
		s.mu.Lock()
		if id, ok := s.byKey[key]; ok && key != "" {
			s.mu.Unlock()
			json.NewEncoder(w).Encode(map[string]any{"id": id, "replayed": true})
			return
		}
		c := Comment{ID: len(s.comments) + 1, Owner: seg[1], Number: seg[3], Body: in.Body, IdempotencyKey: key}
		s.comments = append(s.comments, c)
		if key != "" {
			s.byKey[key] = c.ID
		}
		s.mu.Unlock()
		w.WriteHeader(http.StatusCreated)
		json.NewEncoder(w).Encode(map[string]any{"id": c.ID})
	default:
		http.Error(w, `{"message":"not found"}`, http.StatusNotFound)
	}
}

func selfSigned(names []string) (tls.Certificate, *x509.CertPool, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "issueapi test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: names[0]}, DNSNames: names,
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pool, nil
}

// Resolver maps host names to fixed addresses (the demo's and tests' DNS);
// unknown names fail. An address may carry a port ("127.0.0.1:41234",
// "[::1]:41234"): the connections to that name then go to that port,
// whatever port the URL names, so a server on a high loopback port stands
// in for https://api.example.invalid (:443) without privilege. It
// satisfies netguard.Resolver and netguard.PortMapper.
type Resolver map[string][]string

// LookupNetIP implements netguard.Resolver.
func (r Resolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	addrs, ok := r[canonHost(host)]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	var out []netip.Addr
	for _, a := range addrs {
		ap, err := parseEntry(a)
		if err != nil {
			return nil, err
		}
		out = append(out, ap.Addr())
	}
	return out, nil
}

// MapPort implements netguard.PortMapper: the port of the name's first
// address that has one, else port.
func (r Resolver) MapPort(host string, port uint16) uint16 {
	for _, a := range r[canonHost(host)] {
		if ap, err := parseEntry(a); err == nil && ap.Port() != 0 {
			return ap.Port()
		}
	}
	return port
}

func canonHost(host string) string { return strings.TrimSuffix(strings.ToLower(host), ".") }

// parseEntry parses an address, with or without a port (port 0: none).
func parseEntry(a string) (netip.AddrPort, error) {
	if ip, err := netip.ParseAddr(a); err == nil {
		return netip.AddrPortFrom(ip, 0), nil
	}
	ap, err := netip.ParseAddrPort(a)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("issueapi: resolver: %q is not an address or address:port", a)
	}
	return ap, nil
}
