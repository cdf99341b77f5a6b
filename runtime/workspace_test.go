package runtime_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/norma-run/norma/audit"
	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/gate"
	"github.com/norma-run/norma/manifest"
	"github.com/norma-run/norma/policy"
	"github.com/norma-run/norma/runtime"
	"github.com/norma-run/norma/sandbox/sandboxtest"
)

func TestMain(m *testing.M) { sandboxtest.Main(m) }

type nopSink struct{}

func (nopSink) Record(context.Context, audit.Event) error { return nil }

func newWorkspace(t *testing.T, policy string) string {
	t.Helper()
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, ".norma"), 0o755)
	os.WriteFile(filepath.Join(dir, ".env"), []byte("TOKEN=x\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "notes.md"), []byte("n\n"), 0o644)
	if policy != "" {
		if err := os.WriteFile(filepath.Join(dir, runtime.PolicyFile), []byte(policy), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

const webPolicy = `schema_version: 2
kind: workspace
permissions:
  network:
    requests:
      - {origin: "https://docs.example.com", methods: [GET], paths: ["/guide"]}
  filesystem:
    deny: ["workspace://private/**"]
`

// TestExplainIsTheRunsDecision: Explain goes through the gate the session
// would use, with the workspace policy as ceiling and as the web tools'
// destinations, in the runtime's mode.
func TestExplainIsTheRunsDecision(t *testing.T) {
	dir := newWorkspace(t, webPolicy)
	for _, tc := range []struct {
		name, tool, input string
		mode              gate.Mode
		want              capability.Mode
		reason            capability.Reason
	}{
		{"read", "Read", `{"path":"notes.md"}`, gate.ModeDefault, capability.Allow, capability.ReasonAllowed},
		{"env", "Read", `{"path":".env"}`, gate.ModeDefault, capability.Deny, capability.ReasonFilesystemReadDenied},
		{"workspace deny", "Read", `{"path":"private/x"}`, gate.ModeDefault, capability.Deny, capability.ReasonFilesystemReadDenied},
		{"listed destination", "WebFetch", `{"url":"https://docs.example.com/guide"}`, gate.ModeDefault, capability.Allow, capability.ReasonAllowed},
		{"other path", "WebFetch", `{"url":"https://docs.example.com/admin"}`, gate.ModeDefault, capability.Deny, capability.ReasonNetworkPathDenied},
		{"other origin", "WebFetch", `{"url":"https://evil.example/"}`, gate.ModeDefault, capability.Deny, capability.ReasonNetworkDestinationDenied},
		{"write asks", "Write", `{"path":"a.md","content":"x"}`, gate.ModeDefault, capability.ApprovalRequired, capability.ReasonApprovalRequired},
		{"write in dontAsk", "Write", `{"path":"a.md","content":"x"}`, gate.ModeDontAsk, capability.Deny, capability.ReasonModeDenied},
		{"write in acceptEdits", "Write", `{"path":"a.md","content":"x"}`, gate.ModeAcceptEdits, capability.Allow, capability.ReasonAllowed},
		{"schema", "Read", `{"file_path":"notes.md"}`, gate.ModeDefault, capability.Deny, capability.ReasonSchemaInvalid},
		{"unknown", "Nope", `{}`, gate.ModeDefault, capability.Deny, capability.ReasonToolUnknown},
		{"subagent", "Task", `{"description":"d","prompt":"p"}`, gate.ModeDefault, capability.Allow, capability.ReasonAllowed},
		{"delegated denial", "ExecuteExtraTool", `{"tool":"Read","input":{"path":".env"}}`, gate.ModeDefault, capability.Deny, capability.ReasonFilesystemReadDenied},
		{"delegated approval", "ExecuteExtraTool", `{"tool":"Write","input":{"path":"a.md","content":"x"}}`, gate.ModeDefault, capability.ApprovalRequired, capability.ReasonApprovalRequired},
		{"delegated allow", "ExecuteExtraTool", `{"tool":"Read","input":{"path":"notes.md"}}`, gate.ModeDefault, capability.Allow, capability.ReasonAllowed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt, err := runtime.Open(t.Context(), runtime.Options{Dir: dir, Mode: tc.mode, Audit: nopSink{}})
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close()
			e, err := rt.Explain(t.Context(), tc.tool, json.RawMessage(tc.input))
			if err != nil {
				t.Fatal(err)
			}
			if e.Decision.Mode != tc.want || e.Decision.Reason != tc.reason {
				t.Errorf("Explain(%s %s) = %v %s, want %v %s", tc.tool, tc.input, e.Decision.Mode, e.Decision.Reason, tc.want, tc.reason)
			}
			// A session may still start after Explain, and Explain then
			// asks it, deciding the same.
			s, err := rt.Session(t.Context())
			if err != nil {
				t.Fatalf("Session after Explain: %v", err)
			}
			defer s.Close()
			if e2, err := rt.Explain(t.Context(), tc.tool, json.RawMessage(tc.input)); err != nil || e2.Decision.Mode != e.Decision.Mode || e2.Decision.Reason != e.Decision.Reason {
				t.Errorf("Explain beside the session = %v %s, %v; want %v %s", e2.Decision.Mode, e2.Decision.Reason, err, e.Decision.Mode, e.Decision.Reason)
			}
		})
	}
}

// TestOnePolicyValue: the built-in policy is compiled once; the same value
// is what Explain decided with (its manifest digest) and what Policy
// returns.
func TestOnePolicyValue(t *testing.T) {
	rt, err := runtime.Open(t.Context(), runtime.Options{Dir: newWorkspace(t, webPolicy), Audit: nopSink{}})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	e, err := rt.Explain(t.Context(), "Read", json.RawMessage(`{"path":"notes.md"}`))
	if err != nil {
		t.Fatal(err)
	}
	if e.Decision.ManifestDigest == "" || e.Decision.ManifestDigest != rt.Policy().ManifestDigest() {
		t.Errorf("decided with manifest %q, the runtime's policy is %q", e.Decision.ManifestDigest, rt.Policy().ManifestDigest())
	}
	if len(e.Decision.Trace) == 0 {
		t.Error("Explain gave no per-layer trace")
	}
}

func TestOpenRefusesABadPolicy(t *testing.T) {
	dir := newWorkspace(t, "schema_version: 2\nkind: workspace\npermisions: {}\n")
	_, err := runtime.Open(t.Context(), runtime.Options{Dir: dir, Audit: nopSink{}})
	if err == nil {
		t.Fatal("Open accepted a policy with an unknown field")
	}
	want := filepath.Join(dir, runtime.PolicyFile) + ":3:1"
	if got := err.Error(); len(got) < len(want) || got[:len(want)] != want {
		t.Errorf("Open error = %q, want it to start with %q", got, want)
	}
}

// TestExplainRefusesWhatARunCannotDo: for a call that runs outside the
// sandbox (gate.Call.Unconfined: another agent's, through agenthook), a command
// that names a file the policy denies reading is refused; a fetch of a
// literal private address is refused in every decision, as the dialer
// would. An allow rule does not lift either. A confined explain leaves the
// named file to the sandbox.
func TestExplainRefusesWhatARunCannotDo(t *testing.T) {
	sandboxtest.Require(t)
	const pol = `schema_version: 2
kind: workspace
permissions:
  network:
    requests:
      - {origin: "http://127.0.0.1:8080", methods: [GET], paths: ["/page"]}
      - {origin: "http://10.1.2.3", methods: [GET], paths: ["/page"]}
    allow_private: ["10.1.2.3/32"]
`
	dir := newWorkspace(t, "")
	os.Symlink(".env", filepath.Join(dir, "env-link"))
	layer, err := manifest.ParseLayer("policy.yaml", []byte(pol))
	if err != nil {
		t.Fatal(err)
	}
	rules := policy.Rules{Allow: []string{"Bash(cat:*)", "Bash(grep:*)", "Bash(cp:*)", "WebFetch"}}
	for _, tc := range []struct {
		name, tool, input string
		want              capability.Mode
		reason            capability.Reason
	}{
		{"cat .env", "Bash", `{"command":"cat .env"}`, capability.Deny, capability.ReasonFilesystemReadDenied},
		{"cat by absolute path", "Bash", `{"command":"cat ` + dir + `/.env"}`, capability.Deny, capability.ReasonFilesystemReadDenied},
		{"cat through a link", "Bash", `{"command":"cat env-link"}`, capability.Deny, capability.ReasonFilesystemReadDenied},
		{"an option's value", "Bash", `{"command":"grep --file=.env notes.md"}`, capability.Deny, capability.ReasonFilesystemReadDenied},
		{"in a pipeline", "Bash", `{"command":"cat notes.md | cp .env copy.txt"}`, capability.Deny, capability.ReasonFilesystemReadDenied},
		{"quoted", "Bash", `{"command":"cat '.e'\"nv\""}`, capability.Deny, capability.ReasonFilesystemReadDenied},
		{"an allowed file", "Bash", `{"command":"cat notes.md"}`, capability.Allow, capability.ReasonAllowed},
		{"a name that is no file", "Bash", `{"command":"cat .env.example"}`, capability.Allow, capability.ReasonAllowed},
		{"loopback", "WebFetch", `{"url":"http://127.0.0.1:8080/page"}`, capability.Deny, capability.ReasonNetworkPrivateAddress},
		{"admitted private", "WebFetch", `{"url":"http://10.1.2.3/page"}`, capability.Allow, capability.ReasonAllowed},
		{"not a listed destination", "WebFetch", `{"url":"http://169.254.169.254/page"}`, capability.Deny, capability.ReasonNetworkDestinationDenied},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt, err := runtime.Open(t.Context(), runtime.Options{Dir: dir, Audit: nopSink{}, Rules: rules, Policy: layer})
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close()
			e, err := rt.ExplainUnconfined(t.Context(), tc.tool, json.RawMessage(tc.input), envShell())
			if err != nil {
				t.Fatal(err)
			}
			if e.Decision.Mode != tc.want || e.Decision.Reason != tc.reason {
				t.Errorf("Explain(%s %s) = %v %s (%s), want %v %s", tc.tool, tc.input, e.Decision.Mode, e.Decision.Reason, e.Decision.Rule, tc.want, tc.reason)
			}
			if tc.tool != "Bash" {
				return
			}
			// Confined (a run's own Bash): the sandbox hides the file.
			// cp's destination is a write no rule allows: asked.
			want := capability.Allow
			if strings.Contains(tc.input, "cp ") {
				want = capability.ApprovalRequired
			}
			e, err = rt.Explain(t.Context(), tc.tool, json.RawMessage(tc.input))
			if err != nil || e.Decision.Mode != want {
				t.Errorf("confined Explain(%s) = %v %s %v, want %v", tc.input, e.Decision.Mode, e.Decision.Reason, err, want)
			}
		})
	}
}
