package broker

import (
	"bytes"
	"crypto/x509"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCA(t *testing.T) {
	dir := t.TempDir()
	ca, err := LoadOrCreateCA(dir)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]os.FileMode{CAKeyFile: 0o600, CACertFile: 0o644} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s mode = %v, %v; want %v", name, fi.Mode().Perm(), err, want)
		}
	}
	again, err := LoadOrCreateCA(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(ca.CertPEM(), again.CertPEM()) {
		t.Error("reloading created a new CA")
	}
	if !ca.cert.IsCA || !ca.cert.MaxPathLenZero {
		t.Error("CA certificate is not path-length-0 CA")
	}

	tests := []struct {
		host string
	}{{"api.example.invalid"}, {"127.0.0.1"}, {"::1"}}
	for _, tt := range tests {
		t.Run(tt.host, func(t *testing.T) {
			c, err := ca.leaf(tt.host)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.Leaf.Verify(x509.VerifyOptions{DNSName: tt.host, Roots: ca.Pool()}); err != nil {
				t.Errorf("leaf for %s does not verify: %v", tt.host, err)
			}
			if _, err := c.Leaf.Verify(x509.VerifyOptions{DNSName: "other.example.invalid", Roots: ca.Pool()}); err == nil {
				t.Error("leaf verifies for another name")
			}
			c2, _ := ca.leaf(tt.host)
			if c2 != c {
				t.Error("leaf not cached")
			}
		})
	}
	ca.max = 2
	for _, h := range []string{"a.invalid", "b.invalid", "c.invalid"} {
		ca.leaf(h)
	}
	if len(ca.leaves) != 2 || ca.lru.Len() != 2 {
		t.Errorf("cache holds %d leaves, want 2", len(ca.leaves))
	}
}

func TestCARefuses(t *testing.T) {
	tests := []struct {
		name  string
		setup func(dir string)
		want  string
	}{
		{"key readable by others", func(dir string) { os.Chmod(filepath.Join(dir, CAKeyFile), 0o644) }, "mode"},
		{"key missing", func(dir string) { os.Remove(filepath.Join(dir, CAKeyFile)) }, "incomplete"},
		{"cert missing", func(dir string) { os.Remove(filepath.Join(dir, CACertFile)) }, "incomplete"},
		{"key of another CA", func(dir string) {
			other := filepath.Join(dir, "other")
			LoadOrCreateCA(other)
			k, _ := os.ReadFile(filepath.Join(other, CAKeyFile))
			os.WriteFile(filepath.Join(dir, CAKeyFile), k, 0o600)
		}, "do not belong"},
		{"key is a symlink", func(dir string) {
			p := filepath.Join(dir, CAKeyFile)
			os.Rename(p, p+".real")
			os.Symlink(p+".real", p)
		}, "open CA key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if _, err := LoadOrCreateCA(dir); err != nil {
				t.Fatal(err)
			}
			tt.setup(dir)
			_, err := LoadOrCreateCA(dir)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("LoadOrCreateCA = %v, want an error about %q", err, tt.want)
			}
		})
	}
}
