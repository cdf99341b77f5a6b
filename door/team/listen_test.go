package team

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// selfSigned writes a certificate for 127.0.0.1 and its key.
func selfSigned(t *testing.T) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "norma test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), 0o600)
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

func TestListenRefuses(t *testing.T) {
	cert, key, _ := selfSigned(t)
	for _, c := range []struct{ addr, cert, key, want string }{
		{":0", "", "", "not a loopback address"},
		{"0.0.0.0:0", "", "", "not a loopback address"},
		{"[::]:0", "", "", "not a loopback address"},
		{"localhost:0", "", "", "must be an IP address"},
		{"example.com:8443", cert, key, "must be an IP address"},
		{"127.0.0.1", "", "", "want host:port"},
		{"127.0.0.1:0", cert, "", "go together"},
		{"0.0.0.0:0", cert, cert, "TLS certificate"},
	} {
		ln, _, err := Listen(c.addr, c.cert, c.key)
		if err == nil {
			ln.Close()
			t.Errorf("Listen(%q) succeeded", c.addr)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("Listen(%q): %v, want %q", c.addr, err, c.want)
		}
	}
}

// A non-loopback listener speaks TLS only: a plain HTTP request carrying
// a token gets no HTTP answer.
func TestListenTLS(t *testing.T) {
	cert, key, pool := selfSigned(t)
	e := newEnv(t, nil)
	ln, isTLS, err := Listen("0.0.0.0:0", cert, key)
	if err != nil {
		t.Fatal(err)
	}
	if !isTLS {
		t.Fatal("not TLS")
	}
	go e.srv.Serve(ln)
	t.Cleanup(func() { e.srv.Shutdown(t.Context()) })
	port := ln.Addr().(*net.TCPAddr).Port
	url := "https://127.0.0.1:" + strconv.Itoa(port) + "/api/v1/whoami"
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}, Timeout: 10 * time.Second}
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("Authorization", "Bearer "+e.tok[RoleViewer])
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !strings.Contains(string(b), `"viewer"`) {
		t.Errorf("over TLS: %d %s", res.StatusCode, b)
	}
	req, _ = http.NewRequest("GET", "http://127.0.0.1:"+strconv.Itoa(port)+"/api/v1/whoami", nil)
	req.Header.Set("Authorization", "Bearer "+e.tok[RoleViewer])
	if res, err := (&http.Client{Timeout: 10 * time.Second}).Do(req); err == nil {
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if strings.Contains(string(b), `"viewer"`) {
			t.Errorf("plain HTTP was answered: %d %s", res.StatusCode, b)
		}
	}
}

// On a loopback listener a Host that names another host is refused
// before any route runs (DNS rebinding).
func TestLoopbackHost(t *testing.T) {
	e := newEnv(t, nil)
	ln, isTLS, err := Listen("127.0.0.1:0", "", "")
	if err != nil || isTLS {
		t.Fatal(err, isTLS)
	}
	go e.srv.Serve(ln)
	t.Cleanup(func() { e.srv.Shutdown(t.Context()) })
	for _, c := range []struct {
		host string
		want int
	}{{"", 200}, {"localhost", 200}, {"evil.example", 421}, {"127.0.0.1.nip.io", 421}} {
		req, _ := http.NewRequest("GET", "http://"+ln.Addr().String()+"/api/v1/whoami", nil)
		if c.host != "" {
			req.Host = c.host
		}
		req.Header.Set("Authorization", "Bearer "+e.tok[RoleViewer])
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != c.want {
			t.Errorf("Host %q: %d, want %d", c.host, res.StatusCode, c.want)
		}
	}
	// The team listener answers no hook: those stay on the daemon's own
	// listeners and their guard.
	req, _ := http.NewRequest("POST", "http://"+ln.Addr().String()+"/hooks/claude-code", strings.NewReader(`{}`))
	req.Header.Set("Authorization", "Bearer "+e.tok[RoleApprover])
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 404 {
		t.Errorf("POST /hooks/claude-code on the team listener: %d, want 404", res.StatusCode)
	}
}
