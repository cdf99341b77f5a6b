package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/gate"
	"github.com/norma-run/norma/manifest"
	"github.com/norma-run/norma/policy"
	"github.com/norma-run/norma/runtime"
	"github.com/norma-run/norma/sandbox/sandboxtest"
)

// unconfinedTree lays out, under a fresh directory: the workspace ws
// (.env, ok.txt, sub/, sub/deep/, a link inside to sub, a link out to
// ws2), a sibling workspace ws2 with its own .env, and a home directory
// with an SSH key, which becomes $HOME.
func unconfinedTree(t *testing.T) (ws, ws2, home string) {
	t.Helper()
	root := t.TempDir()
	ws, ws2, home = filepath.Join(root, "ws"), filepath.Join(root, "ws2"), filepath.Join(root, "home")
	for _, d := range []string{filepath.Join(ws, ".norma"), filepath.Join(ws, "sub", "deep"), ws2, filepath.Join(home, ".ssh")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, body := range map[string]string{
		filepath.Join(ws, ".env"): "TOKEN=ws\n", filepath.Join(ws, "ok.txt"): "ok\n", filepath.Join(ws, "sub", "s.txt"): "s\n",
		filepath.Join(ws2, ".env"): "TOKEN=ws2\n", filepath.Join(home, ".ssh", "id_rsa"): "KEY\n",
	} {
		if err := os.WriteFile(name, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("sub", filepath.Join(ws, "sublink")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../ws2", filepath.Join(ws, "out")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../ws2/new", filepath.Join(ws, "dangling")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", home)
	t.Setenv("CDPATH", "")
	return ws, ws2, home
}

// TestExplainUnconfinedFollowsTheShell: for a command another agent runs
// outside the sandbox, the files it names are found where the shell finds
// them — after cd and pushd, through ~ and $HOME, through symbolic
// links — and judged as the sandbox would have shown them: a workspace
// file by the policy, a host path outside what the sandbox shows refused
// (PATH_ESCAPE), a redirect target as a write where the shell opens it.
// A cd whose target cannot be known asks. Every file is real; the
// decision runs nothing, and nothing outside is created.
func TestExplainUnconfinedFollowsTheShell(t *testing.T) {
	sandboxtest.Require(t)
	ws, ws2, _ := unconfinedTree(t)
	rules := policy.Rules{Allow: []string{"Bash(cat:*)", "Bash(cd:*)", "Bash(pushd:*)", "Bash(echo:*)", "Bash(ls:*)", "Bash(git status)", "Bash(bash:*)", "Bash(true)"}}
	const (
		allow = capability.Allow
		ask   = capability.ApprovalRequired
		deny  = capability.Deny
	)
	for _, tc := range []struct {
		name, cmd string
		want      capability.Mode
		reason    capability.Reason
		req       string // a request the call must hold
	}{
		// 1. cd is followed.
		{"cd then ..", "cd sub && cat ../.env", deny, capability.ReasonFilesystemReadDenied, ""},
		{"cd that may fail", "cd sub; cat ../.env", deny, capability.ReasonFilesystemReadDenied, ""},
		{"cd ||", "cd sub || true; cat ../.env", deny, capability.ReasonFilesystemReadDenied, ""},
		{"cd twice", "cd sub && cd deep && cat ../../.env", deny, capability.ReasonFilesystemReadDenied, ""},
		{"pushd", "pushd sub && cat ../.env", deny, capability.ReasonFilesystemReadDenied, ""},
		{"cd quoted (Gemini dir_path)", "cd 'sub' && cat ../.env", deny, capability.ReasonFilesystemReadDenied, ""},
		{"cd in a group", "{ cd sub; } && cat ../.env", deny, capability.ReasonFilesystemReadDenied, ""},
		{"cd in sh -c", "bash -c 'cd sub && cat ../.env'", deny, capability.ReasonFilesystemReadDenied, ""},
		{"cd through a link", "cd sublink && cat ../.env", deny, capability.ReasonFilesystemReadDenied, ""},
		{"a subshell keeps its cwd", "(cd sub) && cat .env", deny, capability.ReasonFilesystemReadDenied, ""},
		{"the allowed variant", "cd sub && cat ../ok.txt", allow, capability.ReasonAllowed, ""},
		{"cd to a variable", "cd $X && cat ok.txt", ask, capability.ReasonCommandUnparseable, ""},
		{"cd -", "cd - && cat ok.txt", ask, capability.ReasonCommandUnparseable, ""},
		{"cd in a loop", "for d in sub deep; do cd $d; done; cat ok.txt", ask, capability.ReasonCommandUnparseable, ""},
		{"cd to a directory made later", "cd later && cat ../ok.txt", ask, capability.ReasonCommandUnparseable, ""},
		// 2. Host paths the sandbox would not show.
		{"a sibling workspace", "cat ../ws2/.env", deny, capability.ReasonPathEscape, ""},
		{"by absolute path", "cat " + ws2 + "/.env", deny, capability.ReasonPathEscape, ""},
		{"through a link out", "cat out/.env", deny, capability.ReasonPathEscape, ""},
		{"cd out", "cd .. && cat ws2/.env", deny, capability.ReasonPathEscape, ""},
		{"tilde", "cat ~/.ssh/id_rsa", deny, capability.ReasonPathEscape, ""},
		{"$HOME", "cat $HOME/.ssh/id_rsa", deny, capability.ReasonPathEscape, ""},
		{`"$HOME"`, `cat "$HOME"/.ssh/id_rsa`, deny, capability.ReasonPathEscape, ""},
		{"cd home", "cd ~ && cat .ssh/id_rsa", deny, capability.ReasonPathEscape, ""},
		{"a redirect source", "cat < ../ws2/.env", deny, capability.ReasonPathEscape, ""},
		{"a system directory", "ls /usr", allow, capability.ReasonAllowed, ""},
		{"a workspace file", "cat ok.txt", allow, capability.ReasonAllowed, ""},
		{"a rule's command", "git status", allow, capability.ReasonAllowed, ""},
		// 4. Redirect targets are writes, where the shell opens them.
		{"write outside", "echo x > ../ws2/f", deny, capability.ReasonPathEscape, ""},
		{"write through a dangling link", "echo x > dangling", deny, capability.ReasonPathEscape, ""},
		{"write after cd", "cd sub && echo x > ../.norma/settings.yaml", deny, capability.ReasonFilesystemWriteDenied, ""},
		{"write outside after cd", "cd sub && echo x > ../../ws2/f", deny, capability.ReasonPathEscape, ""},
		{"a write after cd is asked where it lands", "cd sub && echo x > ../ok.txt", ask, capability.ReasonApprovalRequired, "fs.write workspace://ok.txt"},
		{"a write in the cd's directory", "cd sub && echo x > s.txt", ask, capability.ReasonApprovalRequired, "fs.write workspace://sub/s.txt"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt, err := runtime.Open(t.Context(), runtime.Options{Dir: ws, Audit: nopSink{}, Rules: rules})
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close()
			in, _ := json.Marshal(map[string]string{"command": tc.cmd})
			e, err := rt.ExplainUnconfined(t.Context(), "Bash", in, envShell())
			if err != nil {
				t.Fatal(err)
			}
			if e.Decision.Mode != tc.want || e.Decision.Reason != tc.reason {
				t.Errorf("unconfined Explain(%s) = %v %s (%s %s), want %v %s", tc.cmd, e.Decision.Mode, e.Decision.Reason, e.Decision.Rule, e.Decision.Request, tc.want, tc.reason)
			}
			if tc.req != "" && !slices.ContainsFunc(e.Requests, func(r capability.Request) bool { return r.String() == tc.req }) {
				t.Errorf("unconfined Explain(%s) requests %v, want %s among them", tc.cmd, e.Requests, tc.req)
			}
		})
	}
	for _, f := range []string{filepath.Join(ws2, "f"), filepath.Join(ws2, "new"), filepath.Join(ws, "sub", "later")} {
		if _, err := os.Lstat(f); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s exists after the decisions (%v)", f, err)
		}
	}
}

// TestExplainUnconfinedCDPATH: with CDPATH set in the environment the
// agent's shell inherits, cd to a relative name may go anywhere, so it
// asks; cd ./name is not looked up in CDPATH.
func TestExplainUnconfinedCDPATH(t *testing.T) {
	sandboxtest.Require(t)
	ws, ws2, _ := unconfinedTree(t)
	t.Setenv("CDPATH", filepath.Dir(ws2))
	rules := policy.Rules{Allow: []string{"Bash(cat:*)", "Bash(cd:*)"}}
	for cmd, want := range map[string]capability.Mode{
		"cd sub && cat s.txt":   capability.ApprovalRequired,
		"cd ./sub && cat s.txt": capability.Allow,
	} {
		rt, err := runtime.Open(t.Context(), runtime.Options{Dir: ws, Audit: nopSink{}, Rules: rules})
		if err != nil {
			t.Fatal(err)
		}
		in, _ := json.Marshal(map[string]string{"command": cmd})
		e, err := rt.ExplainUnconfined(t.Context(), "Bash", in, envShell())
		rt.Close()
		if err != nil || e.Decision.Mode != want {
			t.Errorf("unconfined Explain(%s) with CDPATH = %v %s %v, want %v", cmd, e.Decision.Mode, e.Decision.Reason, err, want)
		}
	}
}

// mapResolver answers from a table; a name not in it fails.
type mapResolver map[string][]netip.Addr

func (m mapResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := m[host]; ok {
		return a, nil
	}
	return nil, errors.New("no such host")
}

// TestExplainUnconfinedResolvesHosts: an unconfined fetch of a host name
// is decided on the addresses the name resolves to (the runtime's
// resolver), as the network guard would decide the dial: a private or
// metadata address refuses, unless allow_private admits it; a lookup
// that fails refuses. A confined call leaves the name to the guard.
func TestExplainUnconfinedResolvesHosts(t *testing.T) {
	sandboxtest.Require(t)
	const pol = `schema_version: 2
kind: workspace
permissions:
  network:
    requests:
      - {origin: "http://internal.example", methods: [GET], paths: ["/page"]}
      - {origin: "http://meta.example", methods: [GET], paths: ["/page"]}
      - {origin: "http://mixed.example", methods: [GET], paths: ["/page"]}
      - {origin: "http://admitted.example", methods: [GET], paths: ["/page"]}
      - {origin: "http://public.example", methods: [GET], paths: ["/page"]}
      - {origin: "http://gone.example", methods: [GET], paths: ["/page"]}
    allow_private: ["10.9.9.9/32"]
`
	res := mapResolver{
		"internal.example": {netip.MustParseAddr("10.0.0.5")},
		"meta.example":     {netip.MustParseAddr("169.254.169.254")},
		"mixed.example":    {netip.MustParseAddr("93.184.216.34"), netip.MustParseAddr("127.0.0.1")},
		"admitted.example": {netip.MustParseAddr("10.9.9.9")},
		"public.example":   {netip.MustParseAddr("93.184.216.34")},
	}
	layer, err := manifest.ParseLayer("policy.yaml", []byte(pol))
	if err != nil {
		t.Fatal(err)
	}
	dir := newWorkspace(t, "")
	for _, tc := range []struct {
		host   string
		want   capability.Mode
		reason capability.Reason
	}{
		{"internal.example", capability.Deny, capability.ReasonNetworkPrivateAddress},
		{"meta.example", capability.Deny, capability.ReasonNetworkPrivateAddress},
		{"mixed.example", capability.Deny, capability.ReasonNetworkPrivateAddress},
		{"admitted.example", capability.Allow, capability.ReasonAllowed},
		{"public.example", capability.Allow, capability.ReasonAllowed},
		{"gone.example", capability.Deny, capability.ReasonNetworkResolveFailed},
	} {
		t.Run(tc.host, func(t *testing.T) {
			rt, err := runtime.Open(t.Context(), runtime.Options{Dir: dir, Audit: nopSink{}, Policy: layer, Resolver: res,
				Rules: policy.Rules{Allow: []string{"WebFetch"}}})
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close()
			in := json.RawMessage(`{"url":"http://` + tc.host + `/page"}`)
			e, err := rt.ExplainUnconfined(t.Context(), "WebFetch", in, envShell())
			if err != nil {
				t.Fatal(err)
			}
			if e.Decision.Mode != tc.want || e.Decision.Reason != tc.reason {
				t.Errorf("unconfined WebFetch %s = %v %s (%s), want %v %s", tc.host, e.Decision.Mode, e.Decision.Reason, e.Message, tc.want, tc.reason)
			}
			e, err = rt.Explain(t.Context(), "WebFetch", in)
			if err != nil || e.Decision.Mode != capability.Allow {
				t.Errorf("confined WebFetch %s = %v %s %v, want allow (the guard resolves at connect)", tc.host, e.Decision.Mode, e.Decision.Reason, err)
			}
		})
	}
}

// envShell is the agent's shell as this test process's environment says
// (t.Setenv sets HOME and CDPATH above), as a command hook passes it.
func envShell() gate.AgentShell {
	return gate.AgentShell{Home: os.Getenv("HOME"), CDPath: os.Getenv("CDPATH") != ""}
}
