package gate_test

import (
	"context"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/gate"
	"github.com/norma-run/norma/guard/fsguard"
	"github.com/norma-run/norma/policy"
)

type hostTable map[string][]netip.Addr

func (h hostTable) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := h[host]; ok {
		return a, nil
	}
	return nil, errors.New("no such host")
}

// TestUnconfinedExplain: the gate's unconfined decision of commands and
// fetches, against files on disk and a resolver: words found after cd,
// host paths outside what the sandbox shows, redirections where they land,
// host names resolved. The same calls explained confined are left to the
// sandbox and the guard; Execute never sees Unconfined.
func TestUnconfinedExplain(t *testing.T) {
	root := t.TempDir()
	ws, other := filepath.Join(root, "ws"), filepath.Join(root, "other")
	for _, d := range []string{filepath.Join(ws, "src"), other} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{filepath.Join(ws, ".env"), filepath.Join(ws, "README.md"), filepath.Join(other, "key")} {
		if err := os.WriteFile(f, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("HOME", other)
	t.Setenv("CDPATH", "")
	res := hostTable{"api.example.invalid": {netip.MustParseAddr("10.1.1.1")}}
	f := newFixture(t, withRules(policy.Rules{Allow: []string{"Bash(cat:*)", "Bash(cd:*)", "Bash(echo:*)", "Bash(ls:*)", "WebFetch"}}),
		func(o *gate.Options, f *fixture) {
			fs, err := fsguard.New(ws, f.pol)
			if err != nil {
				t.Fatal(err)
			}
			o.Workspace, o.Resolve, o.Resolver = ws, fs.Resolve, res
		})
	for _, tc := range []struct {
		call           gate.Call
		want, confined capability.Mode
		reason         capability.Reason
	}{
		{bash("cd src && cat ../.env"), capability.Deny, capability.Allow, capability.ReasonFilesystemReadDenied},
		{bash("cd src && cat ../README.md"), capability.Allow, capability.Allow, capability.ReasonAllowed},
		{bash("cd $D && cat README.md"), capability.ApprovalRequired, capability.Allow, capability.ReasonCommandUnparseable},
		{bash("cat ../other/key"), capability.Deny, capability.Allow, capability.ReasonPathEscape},
		{bash("cat ~/key"), capability.Deny, capability.Allow, capability.ReasonPathEscape},
		{bash("ls /usr/bin"), capability.Allow, capability.Allow, capability.ReasonAllowed},
		{bash("cd src && echo x > ../../other/f"), capability.Deny, capability.Deny, capability.ReasonPathEscape},
		{bash("cd src && echo x > ../.env"), capability.Deny, capability.Deny, capability.ReasonFilesystemWriteDenied},
		// Confined, the write is judged at the workspace root (denied there);
		// unconfined, in src, where it lands (writable: asked, as any write).
		{bash("cd src && echo x > f.go"), capability.ApprovalRequired, capability.Deny, capability.ReasonApprovalRequired},
		{fetch("https://api.example.invalid/repos/a/issues"), capability.Deny, capability.Allow, capability.ReasonNetworkPrivateAddress},
	} {
		in := string(tc.call.Input)
		u := tc.call
		u.Unconfined = &gate.AgentShell{Home: other}
		e := f.g.Explain(t.Context(), u)
		if e.Decision.Mode != tc.want || e.Decision.Reason != tc.reason {
			t.Errorf("unconfined %s = %v %s (%s), want %v %s", in, e.Decision.Mode, e.Decision.Reason, e.Decision.Rule, tc.want, tc.reason)
		}
		if c := f.g.Explain(t.Context(), tc.call); c.Decision.Mode != tc.confined {
			t.Errorf("confined %s = %v %s, want %v", in, c.Decision.Mode, c.Decision.Reason, tc.confined)
		}
	}
	if f.calls.Load() != 0 {
		t.Errorf("%d tool calls ran", f.calls.Load())
	}
	if _, err := os.Lstat(filepath.Join(other, "f")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("other/f exists (%v)", err)
	}
}

func fetch(url string) gate.Call { return call("WebFetch", `{"url":"`+url+`"}`) }
