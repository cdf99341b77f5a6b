package broker

import (
	"container/list"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// File names of the per-install CA inside its directory.
const (
	CACertFile = "broker-ca.crt"
	CAKeyFile  = "broker-ca.key"
)

// Leaf certificate parameters.
const (
	leafValidity   = 24 * time.Hour
	leafRenewAfter = 12 * time.Hour
	defaultLeaves  = 1024
)

// CA is the per-install certificate authority with which the broker
// terminates a plugin's TLS. Its certificate is given to plugins (through
// [Broker.Env]: SSL_CERT_FILE and friends); its private key stays in the
// state directory (mode 0600) and never enters a sandbox.
//
// The CA certificate is limited to path length 0 (it can only sign
// leaves). Leaves are minted per host name on demand, valid for 24 hours,
// and cached (LRU, 1024 entries); they share one P-256 key generated when
// the CA is loaded. A CA is safe for concurrent use.
//
// What it does not protect against: a process that can read the key file
// can mint certificates that every plugin of this install trusts; that is
// why the key never leaves the host side.
type CA struct {
	cert     *x509.Certificate
	certPEM  []byte
	key      crypto.Signer
	certPath string
	leafKey  *ecdsa.PrivateKey
	now      func() time.Time

	mu     sync.Mutex
	leaves map[string]*list.Element
	lru    *list.List
	max    int
}

type leafEntry struct {
	host string
	cert *tls.Certificate
}

// LoadOrCreateCA loads the CA from dir, or creates one there (directory
// 0700, key 0600, certificate 0644) when neither file exists. It refuses a
// key file that group or others can access, is not a regular file or is
// not owned by the current user, and a half-present pair.
func LoadOrCreateCA(dir string) (*CA, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("broker: CA directory: %w", err)
	}
	certPath, keyPath := filepath.Join(dir, CACertFile), filepath.Join(dir, CAKeyFile)
	_, cerr := os.Lstat(certPath)
	_, kerr := os.Lstat(keyPath)
	switch {
	case errors.Is(cerr, fs.ErrNotExist) && errors.Is(kerr, fs.ErrNotExist):
		if err := createCA(certPath, keyPath); err != nil {
			return nil, err
		}
	case errors.Is(cerr, fs.ErrNotExist) || errors.Is(kerr, fs.ErrNotExist):
		return nil, fmt.Errorf("broker: CA in %s is incomplete (one of %s, %s is missing); remove both to create a new one", dir, CACertFile, CAKeyFile)
	}
	return loadCA(certPath, keyPath)
}

func createCA(certPath, keyPath string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("broker: CA key: %w", err)
	}
	serial, err := randSerial()
	if err != nil {
		return err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "Norma broker CA " + serial.Text(16)[:8], Organization: []string{"Norma (this install only)"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.AddDate(10, 0, 0),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLen:            0,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return fmt.Errorf("broker: CA certificate: %w", err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return fmt.Errorf("broker: CA key: %w", err)
	}
	if err := writeExclusive(keyPath, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		return err
	}
	return writeExclusive(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
}

func writeExclusive(path string, data []byte, mode os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, mode)
	if err != nil {
		return fmt.Errorf("broker: create %s: %w", path, err)
	}
	_, werr := f.Write(data)
	serr := f.Sync()
	if err := errors.Join(werr, serr, f.Close()); err != nil {
		os.Remove(path)
		return fmt.Errorf("broker: write %s: %w", path, err)
	}
	return nil
}

func loadCA(certPath, keyPath string) (*CA, error) {
	kf, err := os.OpenFile(keyPath, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, fmt.Errorf("broker: open CA key: %w", err)
	}
	defer kf.Close()
	fi, err := kf.Stat()
	if err != nil {
		return nil, fmt.Errorf("broker: stat CA key: %w", err)
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("broker: CA key %s has mode %v; refusing a key that group or others can access (chmod 600 it)", keyPath, fi.Mode())
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); !ok || int(st.Uid) != os.Geteuid() {
		return nil, fmt.Errorf("broker: CA key %s is not owned by the current user", keyPath)
	}
	kraw := make([]byte, 16<<10)
	n, _ := kf.Read(kraw)
	kb, _ := pem.Decode(kraw[:n])
	if kb == nil || kb.Type != "PRIVATE KEY" {
		return nil, fmt.Errorf("broker: CA key %s is not a PEM PRIVATE KEY", keyPath)
	}
	k, err := x509.ParsePKCS8PrivateKey(kb.Bytes)
	if err != nil {
		return nil, fmt.Errorf("broker: CA key: %w", err)
	}
	signer, ok := k.(crypto.Signer)
	if !ok {
		return nil, errors.New("broker: CA key cannot sign")
	}
	craw, err := os.ReadFile(certPath)
	if err != nil {
		return nil, fmt.Errorf("broker: read CA certificate: %w", err)
	}
	cb, _ := pem.Decode(craw)
	if cb == nil || cb.Type != "CERTIFICATE" {
		return nil, fmt.Errorf("broker: %s is not a PEM CERTIFICATE", certPath)
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, fmt.Errorf("broker: CA certificate: %w", err)
	}
	if !cert.IsCA || !publicKeysEqual(cert.PublicKey, signer.Public()) {
		return nil, errors.New("broker: CA certificate and key do not belong together")
	}
	if time.Now().After(cert.NotAfter) {
		return nil, fmt.Errorf("broker: CA certificate expired on %s; remove %s and %s to create a new one", cert.NotAfter.Format(time.DateOnly), certPath, keyPath)
	}
	leafKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("broker: leaf key: %w", err)
	}
	return &CA{
		cert: cert, certPEM: craw, key: signer, certPath: certPath, leafKey: leafKey, now: time.Now,
		leaves: map[string]*list.Element{}, lru: list.New(), max: defaultLeaves,
	}, nil
}

func publicKeysEqual(a, b crypto.PublicKey) bool {
	ea, ok := a.(interface{ Equal(crypto.PublicKey) bool })
	return ok && ea.Equal(b)
}

func randSerial() (*big.Int, error) {
	s, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("broker: serial: %w", err)
	}
	return s.Add(s, big.NewInt(1)), nil
}

// CertPath returns the path of the CA certificate (PEM), the file plugins
// trust. The key's path is not exported.
func (ca *CA) CertPath() string { return ca.certPath }

// CertPEM returns the CA certificate in PEM.
func (ca *CA) CertPEM() []byte { return append([]byte(nil), ca.certPEM...) }

// Pool returns a new pool holding only the CA certificate (for clients in
// tests and for the host's own use).
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.cert)
	return p
}

// leaf returns a certificate for host (a normalized DNS name or an IP
// literal without brackets), minted on first use and cached.
func (ca *CA) leaf(host string) (*tls.Certificate, error) {
	now := ca.now()
	ca.mu.Lock()
	if el, ok := ca.leaves[host]; ok {
		e := el.Value.(*leafEntry)
		if now.Before(e.cert.Leaf.NotBefore.Add(leafRenewAfter)) {
			ca.lru.MoveToFront(el)
			ca.mu.Unlock()
			return e.cert, nil
		}
		ca.lru.Remove(el)
		delete(ca.leaves, host)
	}
	ca.mu.Unlock()

	serial, err := randSerial()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: host},
		NotBefore:    now.Add(-5 * time.Minute),
		NotAfter:     now.Add(leafValidity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		tmpl.IPAddresses = append(tmpl.IPAddresses, ip.AsSlice())
	} else {
		tmpl.DNSNames = []string{host}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &ca.leafKey.PublicKey, ca.key)
	if err != nil {
		return nil, fmt.Errorf("broker: mint certificate for %s: %w", host, err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	c := &tls.Certificate{Certificate: [][]byte{der, ca.cert.Raw}, PrivateKey: ca.leafKey, Leaf: leaf}

	ca.mu.Lock()
	defer ca.mu.Unlock()
	if el, ok := ca.leaves[host]; ok { // minted concurrently
		return el.Value.(*leafEntry).cert, nil
	}
	ca.leaves[host] = ca.lru.PushFront(&leafEntry{host: host, cert: c})
	for ca.lru.Len() > ca.max {
		old := ca.lru.Back()
		ca.lru.Remove(old)
		delete(ca.leaves, old.Value.(*leafEntry).host)
	}
	return c, nil
}
