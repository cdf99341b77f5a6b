package policy

import (
	"context"
	"fmt"
	"testing"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/manifest"
)

func mustManifest(t testing.TB, path string) *manifest.Manifest {
	t.Helper()
	m, err := manifest.ParseFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func mustLayer(t testing.TB, path string) *manifest.Layer {
	t.Helper()
	l, err := manifest.ParseLayerFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func issueHelperSet(t testing.TB, run string) *Set {
	t.Helper()
	in := Inputs{
		Manifest:  mustManifest(t, "../examples/plugins/issue-helper/manifest.yaml"),
		Grant:     mustLayer(t, "testdata/layers/grant.yaml"),
		Workspace: mustLayer(t, "testdata/layers/workspace.yaml"),
		Host:      Host{Sandbox: true, OutOfProcess: true},
	}
	if run != "" {
		in.Run = mustLayer(t, "testdata/layers/"+run)
	}
	s, err := Compile(in)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestDecide(t *testing.T) {
	for _, tc := range []struct {
		op     string
		run    string
		mode   capability.Mode
		reason capability.Reason
		layer  capability.Layer
		rule   string
	}{
		{"fs.read workspace://docs/intro.md", "run.yaml", capability.Allow, capability.ReasonAllowed, "", "plugin:permissions.filesystem.read[0]"},
		{"fs.read docs", "run.yaml", capability.Allow, capability.ReasonAllowed, "", "plugin:permissions.filesystem.read[0]"},
		{"fs.read src/main.go", "run.yaml", capability.Deny, capability.ReasonFilesystemReadDenied, "plugin", ""},
		{"fs.read docs/.env", "run.yaml", capability.Deny, capability.ReasonFilesystemReadDenied, "plugin", "plugin:permissions.filesystem.deny[0]"},
		{"fs.read docs/sub/.env.local", "", capability.Deny, capability.ReasonFilesystemReadDenied, "plugin", "plugin:permissions.filesystem.deny[0]"},
		{"fs.read docs/.git/config", "", capability.Deny, capability.ReasonFilesystemReadDenied, "plugin", "plugin:permissions.filesystem.deny[1]"},
		{"fs.read docs/key.pem", "", capability.Deny, capability.ReasonFilesystemReadDenied, "workspace", "workspace:permissions.filesystem.deny[0]"},
		// The manifest asks for .agent-output/**, the grant narrowed it to reports/**.
		{"fs.write .agent-output/reports/r.md", "", capability.Allow, capability.ReasonAllowed, "", "plugin:permissions.filesystem.write[0]"},
		{"fs.write .agent-output/other.md", "", capability.Deny, capability.ReasonFilesystemWriteDenied, "grant", ""},
		{"fs.write .agent-output/reports/r.md", "run-readonly.yaml", capability.Deny, capability.ReasonFilesystemWriteDenied, "run", ""},
		{"fs.write docs/intro.md", "", capability.Deny, capability.ReasonFilesystemWriteDenied, "plugin", ""},
		{"net.request GET https://api.example.invalid/repos/acme/issues", "", capability.Allow, capability.ReasonAllowed, "", "plugin:permissions.network.requests[0]"},
		{"net.request GET https://API.example.invalid:443/repos/acme/issues/42?x=1", "", capability.Allow, capability.ReasonAllowed, "", "plugin:permissions.network.requests[0]"},
		{"net.request POST https://api.example.invalid/repos/acme/issues/42/comments", "", capability.ApprovalRequired, capability.ReasonApprovalRequired, "plugin", "plugin:permissions.network.requests[1]"},
		{"net.request POST https://api.example.invalid/repos/acme/issues/42/comments", "run-readonly.yaml", capability.Deny, capability.ReasonNetworkDestinationDenied, "run", ""},
		{"net.request DELETE https://api.example.invalid/repos/acme/issues/42", "", capability.Deny, capability.ReasonNetworkMethodDenied, "plugin", ""},
		{"net.request GET https://api.example.invalid/repos/acme/pulls", "", capability.Deny, capability.ReasonNetworkPathDenied, "plugin", ""},
		{"net.request GET https://api.example.invalid/repos/a%2Fb/issues", "", capability.Deny, capability.ReasonNetworkPathDenied, "plugin", ""},
		{"net.request GET https://api.example.invalid/repos/acme/x/../issues", "", capability.Allow, capability.ReasonAllowed, "", "plugin:permissions.network.requests[0]"},
		{"net.request GET https://api.example.invalid//issues", "", capability.Deny, capability.ReasonNetworkPathDenied, "plugin", ""},
		{"net.request GET http://api.example.invalid/repos/acme/issues", "", capability.Deny, capability.ReasonNetworkDestinationDenied, "plugin", ""},
		{"net.request GET https://api.example.invalid:8443/repos/acme/issues", "", capability.Deny, capability.ReasonNetworkDestinationDenied, "plugin", ""},
		{"net.request GET https://api.example.invalid.attacker.test/repos/acme/issues", "", capability.Deny, capability.ReasonNetworkDestinationDenied, "plugin", ""},
		{"net.request POST https://hooks.example.invalid/notify/x", "", capability.Deny, capability.ReasonNetworkDestinationDenied, "plugin", ""},
		{"secret.use issue_api_token https://api.example.invalid", "", capability.Allow, capability.ReasonAllowed, "", "plugin:permissions.secrets[0]"},
		{"secret.use issue_api_token https://evil.example.invalid", "", capability.Deny, capability.ReasonSecretOriginMismatch, "plugin", "plugin:permissions.secrets[0]"},
		{"secret.use other_token https://api.example.invalid", "", capability.Deny, capability.ReasonSecretUndeclared, "plugin", ""},
		{"process.spawn sh -c id", "", capability.Deny, capability.ReasonProcessSpawnDenied, "plugin", "plugin:permissions.process.spawn"},
		{"external.write issues.comment acme/demo#42", "", capability.ApprovalRequired, capability.ReasonApprovalRequired, "plugin", "plugin:permissions.external_writes.default"},
		{"external.write issues.comment acme/demo#42", "run-readonly.yaml", capability.Deny, capability.ReasonExternalWriteDenied, "run", "run:permissions.external_writes.default"},
		{"external.write issues.summarize acme/demo", "", capability.Deny, capability.ReasonExternalWriteDenied, "plugin", "plugin:tools[1].approval"},
		{"external.write issues.delete acme/demo", "", capability.Deny, capability.ReasonToolUndeclared, "plugin", ""},
	} {
		t.Run(tc.op+"/"+tc.run, func(t *testing.T) {
			s := issueHelperSet(t, tc.run)
			req, err := ParseOp(tc.op, nil)
			if err != nil {
				t.Fatal(err)
			}
			d := s.Decide(context.Background(), req)
			if d.Mode != tc.mode || d.Reason != tc.reason || d.Layer != tc.layer || d.Rule != tc.rule {
				t.Errorf("Decide(%s) = %s %s layer=%q rule=%q; want %s %s layer=%q rule=%q",
					tc.op, d.Mode, d.Reason, d.Layer, d.Rule, tc.mode, tc.reason, tc.layer, tc.rule)
			}
			e := s.Explain(context.Background(), req)
			if e.Mode != d.Mode || e.Reason != d.Reason || e.Layer != d.Layer || e.Rule != d.Rule {
				t.Errorf("Explain disagrees with Decide: %+v vs %+v", e, d)
			}
			if len(e.Trace) != len(s.layers) {
				t.Errorf("trace has %d entries, want %d", len(e.Trace), len(s.layers))
			}
			if d.ManifestDigest == "" || d.ManifestDigest != s.ManifestDigest() {
				t.Errorf("decision lacks the manifest digest")
			}
		})
	}
}

// TestDecideRefusesInvalidUTF8: a path that is not UTF-8 is refused even
// where every glob would allow it (docs/** allows docs/anything), because no
// glob can be relied on to say what it names (FuzzGlobMatch excludes it).
func TestDecideRefusesInvalidUTF8(t *testing.T) {
	s := issueHelperSet(t, "")
	for _, p := range []string{"docs/\xff.md", "docs/\xd6", "docs/a\x81/b.md"} {
		for _, k := range []capability.Kind{capability.FSRead, capability.FSWrite} {
			d := s.Decide(context.Background(), capability.Request{Kind: k, Path: p})
			if d.Mode != capability.Deny || d.Reason != capability.ReasonInvalidRequest {
				t.Errorf("Decide(%s %q) = %s %s, want deny %s", k, p, d.Mode, d.Reason, capability.ReasonInvalidRequest)
			}
		}
	}
	if d := s.Decide(context.Background(), capability.Request{Kind: capability.FSRead, Path: "docs/é.md"}); d.Mode != capability.Allow {
		t.Errorf("valid UTF-8 docs/é.md: %s %s", d.Mode, d.Reason)
	}
}

func TestSandboxLayer(t *testing.T) {
	m, err := manifest.Parse("m.yaml", []byte(`schema_version: 2
id: org.acme.spawner
version: 1.0.0
entrypoint: x
tools: [{name: t, risk: read}]
permissions:
  process: {spawn: allow}
  network:
    requests: [{origin: "https://a.example", methods: [GET], paths: ["/"]}]
`))
	if err != nil {
		t.Fatal(err)
	}
	spawn := capability.Request{Kind: capability.ProcessSpawn, Argv: []string{"true"}}
	get := capability.Request{Kind: capability.NetRequest, Method: "GET", Origin: "https://a.example:443", Path: "/"}
	for _, tc := range []struct {
		host        Host
		spawn, netw capability.Mode
	}{
		{Host{Sandbox: true, OutOfProcess: true}, capability.Allow, capability.Allow},
		{Host{Sandbox: false, OutOfProcess: true}, capability.Deny, capability.Deny},
		{Host{Sandbox: false, OutOfProcess: false}, capability.Deny, capability.Allow},
		{Host{Sandbox: false, Unsafe: true, OutOfProcess: true}, capability.Allow, capability.Allow},
	} {
		s, err := Compile(Inputs{Manifest: m, Host: tc.host})
		if err != nil {
			t.Fatal(err)
		}
		if d := s.Decide(context.Background(), spawn); d.Mode != tc.spawn || (d.Mode == capability.Deny && d.Reason != capability.ReasonSandboxUnavailable) {
			t.Errorf("%+v spawn: %+v", tc.host, d)
		}
		if d := s.Decide(context.Background(), get); d.Mode != tc.netw {
			t.Errorf("%+v net: %+v", tc.host, d)
		}
	}
}

func TestCacheKey(t *testing.T) {
	c := NewCache(0)
	m := mustManifest(t, "../examples/plugins/issue-helper/manifest.yaml")
	g := mustLayer(t, "testdata/layers/grant.yaml")
	in := Inputs{Manifest: m, Grant: g, ConsentGeneration: 1, PolicyGeneration: 1}
	a, _ := c.Get(in)
	b, _ := c.Get(in)
	if a != b {
		t.Fatal("same inputs compiled twice")
	}
	for name, mut := range map[string]func(*Inputs){
		"consent generation": func(i *Inputs) { i.ConsentGeneration = 2 },
		"policy generation":  func(i *Inputs) { i.PolicyGeneration = 2 },
		"manifest":           func(i *Inputs) { i.Manifest = mustManifest(t, "../examples/plugins/issue-helper-1.5.0/manifest.yaml") },
		"grant content":      func(i *Inputs) { i.Grant = mustLayer(t, "testdata/bench/grant.yaml") },
		"run layer":          func(i *Inputs) { i.Run = mustLayer(t, "testdata/layers/run.yaml") },
		"host":               func(i *Inputs) { i.Host.Sandbox = true },
	} {
		x := in
		mut(&x)
		s, err := c.Get(x)
		if err != nil {
			t.Fatal(err)
		}
		if s == a {
			t.Errorf("%s changed but the old compile was returned", name)
		}
	}
}

func TestAllowPrivateIntersection(t *testing.T) {
	ws, _ := manifest.ParseLayer("w", []byte("schema_version: 2\nkind: workspace\npermissions:\n  network:\n    allow_private: [10.0.0.0/8, 127.0.0.0/8]\n"))
	run, _ := manifest.ParseLayer("r", []byte("schema_version: 2\nkind: run\npermissions:\n  network:\n    allow_private: [10.1.0.0/16]\n"))
	s, err := Compile(Inputs{Manifest: mustManifest(t, "../examples/plugins/issue-helper/manifest.yaml"), Workspace: ws, Run: run})
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(s.AllowPrivate()); got != "[10.1.0.0/16]" {
		t.Errorf("AllowPrivate = %s", got)
	}
	s2, _ := Compile(Inputs{Manifest: mustManifest(t, "../examples/plugins/issue-helper/manifest.yaml")})
	if len(s2.AllowPrivate()) != 0 {
		t.Errorf("default must admit no private range")
	}
}

func TestWrongLayerKind(t *testing.T) {
	_, err := Compile(Inputs{Manifest: mustManifest(t, "../examples/plugins/issue-helper/manifest.yaml"), Grant: mustLayer(t, "testdata/layers/workspace.yaml")})
	if err == nil {
		t.Fatal("a workspace file passed as a grant was accepted")
	}
}
