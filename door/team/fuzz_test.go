package team

import (
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzAuthenticate: whatever the Authorization header holds, the only
// principal ever returned is the one whose token it carries exactly.
func FuzzAuthenticate(f *testing.F) {
	tk := OpenTokens(filepath.Join(f.TempDir(), TokenFile))
	sec, _, err := tk.Add("alice", RoleApprover, now)
	if err != nil {
		f.Fatal(err)
	}
	tok := sec.Reveal()
	for _, seed := range []string{
		"Bearer " + tok,              // the token
		"bearer  " + tok + "  ",      // case and spaces around it
		"Bearer " + tok[:len(tok)-1], // one character short
		"Bearer " + tok + "A",        // one character long
		"Bearer " + strings.ToUpper(tok),
		"Bearer " + digest(tok), // its stored hash
		"Bearer norma_team_",    // the prefix alone
		"Basic " + tok,          // another scheme
		"Bearer\t" + tok,        // a tab, not a space
		"",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, header string) {
		r := httptest.NewRequest("GET", "/api/v1/whoami", nil)
		r.Header["Authorization"] = []string{header}
		p, err := tk.Authenticate(r)
		scheme, rest, _ := strings.Cut(header, " ")
		exact := strings.EqualFold(scheme, "Bearer") && strings.TrimSpace(rest) == tok
		if err == nil && (!exact || p != (Principal{"alice", RoleApprover})) {
			t.Fatalf("Authenticate(%q) = %+v", header, p)
		}
		if exact && err != nil {
			t.Fatalf("Authenticate(%q): %v", header, err)
		}
	})
}
