package plugin

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/manifest"
	"github.com/norma-run/norma/policy"
)

// isCode reports whether err is a refusal of this package with code.
func isCode(err error, code capability.Reason) bool {
	return errors.Is(err, newErr(code, "", "", "", nil))
}

func parseGrant(t *testing.T, text string) *manifest.Layer {
	t.Helper()
	l, err := manifest.ParseLayer("grant.yaml", []byte("schema_version: 2\nkind: grant\npermissions:\n"+text))
	if err != nil {
		t.Fatalf("grant fixture does not parse: %v\n%s", err, text)
	}
	return l
}

const api = "https://api.example.invalid:443"

// grantProbes are the requests on which a stored grant must decide as the
// grant file it came from: every dimension of the issue-helper manifest,
// inside and outside what it requests.
var grantProbes = []capability.Request{
	{Kind: capability.FSRead, Path: "docs/guide.md"},
	{Kind: capability.FSRead, Path: "docs/private/keys.md"},
	{Kind: capability.FSRead, Path: "docs/.env"},
	{Kind: capability.FSRead, Path: "src/main.go"},
	{Kind: capability.FSWrite, Path: ".agent-output/reports/r.md"},
	{Kind: capability.FSWrite, Path: ".agent-output/scratch.txt"},
	{Kind: capability.FSWrite, Path: "docs/guide.md"},
	{Kind: capability.NetRequest, Method: "GET", Origin: api, Path: "/repos/acme/issues"},
	{Kind: capability.NetRequest, Method: "GET", Origin: api, Path: "/repos/acme/issues/7"},
	{Kind: capability.NetRequest, Method: "POST", Origin: api, Path: "/repos/acme/issues/7/comments"},
	{Kind: capability.NetRequest, Method: "DELETE", Origin: api, Path: "/repos/acme/issues/7"},
	{Kind: capability.NetRequest, Method: "GET", Origin: "https://other.example.invalid:443", Path: "/repos/acme/issues"},
	{Kind: capability.SecretUse, Secret: "issue_api_token", Origin: api},
	{Kind: capability.SecretUse, Secret: "issue_api_token", Origin: "https://other.example.invalid:443"},
	{Kind: capability.ProcessSpawn, Argv: []string{"/bin/sh"}},
	{Kind: capability.ExternalWrite, Tool: "issues.comment", Target: api},
	{Kind: capability.ExternalWrite, Tool: "issues.summarize", Target: api},
}

// TestInstallGrantFileExact: `plugin install --yes --grant FILE` stores
// FILE (normalized) intersected with what the manifest requests: with the
// stored grant, policy.Compile decides every probe exactly as with FILE,
// so `policy explain --grant FILE` tells the truth about `norma run`, and
// the stored grant is neither wider than FILE nor than the manifest.
func TestInstallGrantFileExact(t *testing.T) {
	tests := []struct {
		name, file string
	}{
		{"deny glob and per-action approval (red-team B3)", `  filesystem:
    read: [workspace://docs/**]
    deny: [workspace://docs/private/**]
  network:
    requests:
      - origin: https://api.example.invalid
        methods: [GET]
        paths: ["/repos/{owner}/issues"]
        approval: per_action
`},
		{"everything requested", `  filesystem:
    read: [workspace://docs/**]
    write: [workspace://.agent-output/**]
  network:
    requests:
      - origin: https://api.example.invalid
        methods: [GET]
        paths: ["/repos/{owner}/issues", "/repos/{owner}/issues/{number}"]
      - origin: https://api.example.invalid
        methods: [POST]
        paths: ["/repos/{owner}/issues/{number}/comments"]
        approval: per_action
  secrets:
    - name: issue_api_token
      purpose: https://api.example.invalid
      scopes: [issues:read, comments:write]
      inject_as: brokered_header
      env: ISSUE_API_TOKEN
  external_writes:
    default: approval_required
`},
		{"narrowed: one scope, no external writes, reports only, both reads per action", `  filesystem:
    read: [workspace://docs/**]
    write: [workspace://.agent-output/reports/**]
    deny: [workspace://docs/drafts/**]
  network:
    requests:
      - origin: https://api.example.invalid
        methods: [GET]
        paths: ["/repos/{owner}/issues", "/repos/{owner}/issues/{number}"]
        approval: per_action
  secrets:
    - name: issue_api_token
      purpose: https://api.example.invalid
      scopes: [issues:read]
      inject_as: brokered_header
      env: ISSUE_API_TOKEN
  external_writes:
    default: deny
`},
		{"file drops the approval the manifest asks", `  network:
    requests:
      - origin: https://api.example.invalid
        methods: [POST]
        paths: ["/repos/{owner}/issues/{number}/comments"]
`},
		{"empty grant", "  {}\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := t.Context()
			e := newEnv(t)
			base := baseManifest(t)
			file := parseGrant(t, tt.file)
			m := e.manager(t, never(t), nil)
			if _, err := m.Install(ctx, e.pkgOf(t, base, true), InstallOptions{Grant: file}); err != nil {
				t.Fatal(err)
			}
			stored, _, err := m.Grant(helper)
			if err != nil {
				t.Fatal(err)
			}
			mf := parseText(t, base)
			want, err := policy.Compile(policy.Inputs{Manifest: mf, Grant: file})
			if err != nil {
				t.Fatal(err)
			}
			got, err := policy.Compile(policy.Inputs{Manifest: mf, Grant: stored})
			if err != nil {
				t.Fatal(err)
			}
			for _, req := range grantProbes {
				w, g := want.Decide(context.Background(), req), got.Decide(context.Background(), req)
				if g.Mode != w.Mode || g.Reason != w.Reason {
					t.Errorf("%s: stored grant decides %s (%s), the grant file %s (%s)", req, g.Mode, g.Reason, w.Mode, w.Reason)
				}
			}
			notWider(t, "stored vs file", file, stored)
			if d := manifest.DiffPermissions(mf.Permissions, stored.Permissions); d.NeedsConsent() {
				t.Errorf("stored grant gives more than the manifest requests: %+v", append(d.Added, d.Widened...))
			}
		})
	}
}

// TestGrantFileBeyondManifest: a grant file that gives more than the
// manifest requests, on any dimension, is refused before anything is
// written.
func TestGrantFileBeyondManifest(t *testing.T) {
	secret := func(s string) string {
		return "  secrets:\n    - name: issue_api_token\n" + s
	}
	tests := []struct {
		name, file, msg string
	}{
		{"wider glob", "  filesystem: {write: [workspace://**]}\n", "filesystem.write workspace://**"},
		{"unrequested route", "  network:\n    requests:\n      - {origin: https://api.example.invalid, methods: [DELETE], paths: [\"/repos/{owner}/issues/{number}\"]}\n", "DELETE"},
		{"wider mode", "  process: {spawn: allow}\n", "process allow"},
		{"secret toward another origin", secret("      purpose: https://other.example.invalid\n      scopes: [issues:read]\n      inject_as: brokered_header\n      env: ISSUE_API_TOKEN\n"), "secret.purpose"},
		{"secret injected elsewhere", secret("      purpose: https://api.example.invalid\n      scopes: [issues:read]\n      inject_as: brokered_header\n      header: X-Other\n      env: ISSUE_API_TOKEN\n"), "secret.injection"},
		{"secret scope not requested", secret("      purpose: https://api.example.invalid\n      scopes: [admin, issues:read]\n      inject_as: brokered_header\n      env: ISSUE_API_TOKEN\n"), "secret.scope issue_api_token admin"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			m := e.manager(t, never(t), nil)
			src := e.pkgOf(t, baseManifest(t), true)
			before := snapshot(t, e.home)
			_, err := m.Install(t.Context(), src, InstallOptions{Grant: parseGrant(t, tt.file)})
			wantCode(t, "Install(--grant "+tt.name+")", err, capability.ReasonPluginGrantMismatch, tt.msg)
			if after := snapshot(t, e.home); !slices.Equal(before, after) {
				t.Errorf("refused install changed the state directory: %q", after)
			}
		})
	}
}

// TestUpdateGrantFileKeepsRestrictions: an update with --yes --grant FILE
// takes what it newly consents to from FILE with FILE's restrictions: its
// deny globs, its per-action approvals and its secret scopes, not the
// manifest's wider ones.
func TestUpdateGrantFileKeepsRestrictions(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t)
	base := baseManifest(t)
	m := e.manager(t, &script{}, nil)
	if _, err := m.Install(ctx, e.pkgOf(t, base, true), InstallOptions{}); err != nil {
		t.Fatal(err)
	}
	wide := replaceOnce(t, base, "read:  [workspace://docs/**]", "read:  [workspace://**]")
	wide = replaceOnce(t, wide, "  secrets:\n", "      - origin: https://hooks.example.invalid\n        methods: [POST]\n        paths: [\"/notify/{channel}\"]\n  secrets:\n")
	wide = replaceOnce(t, wide, "  process:\n", "    - name: hooks_token\n      purpose: https://hooks.example.invalid\n      scopes: [notify, admin]\n      inject_as: brokered_header\n  process:\n")
	file := parseGrant(t, `  filesystem:
    read: [workspace://**]
    deny: [workspace://docs/private/**]
  network:
    requests:
      - origin: https://hooks.example.invalid
        methods: [POST]
        paths: ["/notify/{channel}"]
        approval: per_action
  secrets:
    - name: hooks_token
      purpose: https://hooks.example.invalid
      scopes: [notify]
      inject_as: brokered_header
`)
	m = e.manager(t, never(t), nil)
	res, err := m.Update(ctx, e.pkgOf(t, withVersion(t, wide, "1.4.1"), true), InstallOptions{Grant: file})
	if err != nil || res.Held {
		t.Fatalf("Update(--grant) = %+v, %v; want applied", res, err)
	}
	stored, _, err := m.Grant(helper)
	if err != nil {
		t.Fatal(err)
	}
	set, err := policy.Compile(policy.Inputs{Manifest: parseText(t, withVersion(t, wide, "1.4.1")), Grant: stored})
	if err != nil {
		t.Fatal(err)
	}
	hooks := "https://hooks.example.invalid:443"
	for _, tc := range []struct {
		req  capability.Request
		want capability.Mode
	}{
		{capability.Request{Kind: capability.FSRead, Path: "src/main.go"}, capability.Allow},
		{capability.Request{Kind: capability.FSRead, Path: "docs/private/keys.md"}, capability.Deny},
		{capability.Request{Kind: capability.NetRequest, Method: "POST", Origin: hooks, Path: "/notify/ops"}, capability.ApprovalRequired},
		{capability.Request{Kind: capability.SecretUse, Secret: "hooks_token", Origin: hooks}, capability.Allow},
		// What the old grant gave is carried.
		{capability.Request{Kind: capability.NetRequest, Method: "GET", Origin: api, Path: "/repos/acme/issues"}, capability.Allow},
	} {
		if got := set.Decide(context.Background(), tc.req); got.Mode != tc.want {
			t.Errorf("%s: stored grant decides %s (%s), want %s", tc.req, got.Mode, got.Reason, tc.want)
		}
	}
	for _, s := range stored.Permissions.Secrets {
		if s.Name == "hooks_token" && (len(s.Scopes) != 1 || s.Scopes[0] != "notify") {
			t.Errorf("hooks_token scopes = %v, want the file's [notify]", s.Scopes)
		}
	}
}
