package team

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/norma-run/norma/capability"
)

var now = time.Date(2026, 12, 1, 20, 0, 0, 0, time.UTC)

func TestTokensAddLookupRevoke(t *testing.T) {
	path := filepath.Join(t.TempDir(), TokenFile)
	tk := OpenTokens(path)
	alice, info, err := tk.Add("alice", RoleApprover, now)
	if err != nil {
		t.Fatal(err)
	}
	if info.Name != "alice" || info.Role != RoleApprover || !info.Created.Equal(now) {
		t.Errorf("Add info = %+v", info)
	}
	if !strings.HasPrefix(alice.Reveal(), tokenPrefix) || len(alice.Reveal()) != len(tokenPrefix)+43 {
		t.Errorf("token %q: want %s + 43 base64url characters", alice.Reveal(), tokenPrefix)
	}
	bob, _, err := tk.Add("bob", RoleRunner, now)
	if err != nil {
		t.Fatal(err)
	}

	// The file keeps hashes only, 0600.
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{alice.Reveal(), bob.Reveal()} {
		if bytes.Contains(b, []byte(s)) {
			t.Fatalf("the token file holds a token:\n%s", b)
		}
	}
	if !bytes.Contains(b, []byte(digest(alice.Reveal()))) {
		t.Errorf("the token file lacks alice's hash:\n%s", b)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("token file mode %v, want 0600", fi.Mode())
	}

	// A second Tokens over the same file (another process) sees both.
	other := OpenTokens(path)
	for _, c := range []struct {
		tok  string
		want Principal
	}{
		{alice.Reveal(), Principal{"alice", RoleApprover}},
		{bob.Reveal(), Principal{"bob", RoleRunner}},
	} {
		if p, err := other.Lookup(c.tok); err != nil || p != c.want {
			t.Errorf("Lookup = %+v, %v; want %+v", p, err, c.want)
		}
	}
	for _, bad := range []string{"", tokenPrefix, alice.Reveal() + "x", alice.Reveal()[:len(alice.Reveal())-1],
		strings.ToUpper(alice.Reveal()), digest(alice.Reveal())} {
		if p, err := other.Lookup(bad); !errors.Is(err, ErrUnknownToken) {
			t.Errorf("Lookup(%q) = %+v, %v; want ErrUnknownToken", bad, p, err)
		}
	}
	if _, _, err := tk.Add("alice", RoleViewer, now); !errors.Is(err, ErrTokenExists) {
		t.Errorf("second alice: %v, want ErrTokenExists", err)
	}

	// Revoked in one process, refused by the other at once.
	if _, err := other.Lookup(alice.Reveal()); err != nil {
		t.Fatal(err)
	}
	if err := tk.Revoke("alice"); err != nil {
		t.Fatal(err)
	}
	if _, err := other.Lookup(alice.Reveal()); !errors.Is(err, ErrUnknownToken) {
		t.Errorf("revoked token: %v, want ErrUnknownToken", err)
	}
	if p, err := other.Lookup(bob.Reveal()); err != nil || p.Name != "bob" {
		t.Errorf("bob after alice's revocation: %+v, %v", p, err)
	}
	if err := tk.Revoke("alice"); !errors.Is(err, ErrNoToken) {
		t.Errorf("revoke twice: %v, want ErrNoToken", err)
	}
	l, err := other.List()
	if err != nil || len(l) != 1 || l[0].Name != "bob" || l[0].Role != RoleRunner {
		t.Errorf("List = %+v, %v", l, err)
	}
}

func TestTokensAddRefuses(t *testing.T) {
	tk := OpenTokens(filepath.Join(t.TempDir(), TokenFile))
	for _, c := range []struct {
		name string
		role Role
	}{
		{"", RoleViewer}, {"Alice", RoleViewer}, {"-x", RoleViewer}, {"a b", RoleViewer},
		{"a\x1b[31m", RoleViewer}, {strings.Repeat("a", 64), RoleViewer}, {"team:x", RoleViewer},
		{"carol", "admin"}, {"carol", ""},
	} {
		if _, _, err := tk.Add(c.name, c.role, now); err == nil {
			t.Errorf("Add(%q, %q) succeeded", c.name, c.role)
		}
	}
	if _, err := os.Stat(tk.Path()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused Add wrote the file: %v", err)
	}
}

// A token file others may read or write, or a link, is refused: its
// hashes may not be ours. Nobody is let in.
func TestTokensRefuseUnsafeFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, TokenFile)
	tk := OpenTokens(path)
	sec, _, err := tk.Add("alice", RoleApprover, now)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenTokens(path).Lookup(sec.Reveal()); err == nil || errors.Is(err, ErrUnknownToken) {
		t.Errorf("Lookup in a 0644 file: %v, want a refusal of the file", err)
	}
	os.Chmod(path, 0o600)
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink(path, link); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenTokens(link).Lookup(sec.Reveal()); err == nil {
		t.Error("Lookup through a symbolic link succeeded")
	}
	// Through Authenticate: TEAM_INTERNAL, not a principal.
	os.Chmod(path, 0o640)
	r := httptest.NewRequest("GET", "/", nil)
	r.Header.Set("Authorization", "Bearer "+sec.Reveal())
	if p, err := OpenTokens(path).Authenticate(r); capability.ReasonOf(err) != capability.ReasonTeamInternal {
		t.Errorf("Authenticate = %+v, %v; want TEAM_INTERNAL", p, err)
	}
}

// Concurrent adds from several Tokens (processes) lose none: the flock
// serializes the read-modify-write.
func TestTokensConcurrentAdd(t *testing.T) {
	path := filepath.Join(t.TempDir(), TokenFile)
	var wg sync.WaitGroup
	secs := make([]Secret, 16)
	for i := range secs {
		wg.Go(func() {
			s, _, err := OpenTokens(path).Add(fmt.Sprintf("u%d", i), RoleViewer, now)
			if err != nil {
				t.Error(err)
			}
			secs[i] = s
		})
	}
	wg.Wait()
	tk := OpenTokens(path)
	for i, s := range secs {
		if p, err := tk.Lookup(s.Reveal()); err != nil || p.Name != fmt.Sprintf("u%d", i) {
			t.Errorf("u%d: %+v, %v", i, p, err)
		}
	}
}

func TestSecretNeverPrints(t *testing.T) {
	sec, _, err := OpenTokens(filepath.Join(t.TempDir(), TokenFile)).Add("alice", RoleViewer, now)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	slog.New(slog.NewTextHandler(&buf, nil)).Info("made", "token", sec)
	fmt.Fprintf(&buf, "%v %s %+v", sec, sec, sec)
	if strings.Contains(buf.String(), sec.Reveal()) {
		t.Errorf("the token printed: %s", buf.String())
	}
}

func TestAuthenticate(t *testing.T) {
	tk := OpenTokens(filepath.Join(t.TempDir(), TokenFile))
	sec, _, err := tk.Add("alice", RoleViewer, now)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		header string
		want   capability.Reason // "" for alice
	}{
		{"Bearer " + sec.Reveal(), ""},
		{"bearer " + sec.Reveal(), ""},
		{"", capability.ReasonTeamUnauthenticated},
		{"Bearer", capability.ReasonTeamUnauthenticated},
		{"Basic " + sec.Reveal(), capability.ReasonTeamUnauthenticated},
		{sec.Reveal(), capability.ReasonTeamUnauthenticated},
		{"Bearer " + sec.Reveal() + "0", capability.ReasonTeamUnauthenticated},
	} {
		r := httptest.NewRequest("GET", "/api/v1/whoami", nil)
		if c.header != "" {
			r.Header.Set("Authorization", c.header)
		}
		p, err := tk.Authenticate(r)
		if capability.ReasonOf(err) != c.want || (c.want == "" && p != (Principal{"alice", RoleViewer})) {
			t.Errorf("Authenticate(%q) = %+v, %v; want %q", c.header, p, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), sec.Reveal()) {
			t.Errorf("the error names the token: %v", err)
		}
	}
}
