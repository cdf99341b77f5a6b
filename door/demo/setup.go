package demo

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/norma-run/norma/examples/issueapi"
	"github.com/norma-run/norma/manifest"
	"github.com/norma-run/norma/plugin"
	"github.com/norma-run/norma/runtime"
	"github.com/norma-run/norma/secret"
)

// world is what the demo sets up before the session.
type world struct {
	root, home, ws, bin string
	api                 *issueapi.Server
	token               string
	key                 ed25519.PrivateKey
	trust               *plugin.TrustStore
	vault               *secret.FileVault
	wsPolicy            *manifest.Layer
}

// buildPlugins compiles the example plugins as static binaries.
func (w *world) buildPlugins(ctx context.Context) error {
	for _, name := range []string{"issue-helper", "mallory"} {
		cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", filepath.Join(w.bin, name), "./examples/plugins/"+name)
		cmd.Dir = w.root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("build %s: %v\n%s", name, err, out)
		}
	}
	return nil
}

// pkg lays out a package (manifest + binary) and signs it.
func (w *world) pkg(ctx context.Context, name, manifestPath string) (string, error) {
	m, err := manifest.ParseFile(manifestPath)
	if err != nil {
		return "", err
	}
	dir := filepath.Join(w.home, "packages", m.ID+"-"+m.Version)
	if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(m.Entrypoint)), 0o755); err != nil {
		return "", err
	}
	data, err := os.ReadFile(manifestPath)
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "manifest.yaml"), data, 0o644); err != nil {
		return "", err
	}
	bin, err := os.ReadFile(filepath.Join(w.bin, name))
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, m.Entrypoint), bin, 0o755); err != nil {
		return "", err
	}
	if _, err := plugin.Sign(ctx, dir, w.key, nil); err != nil {
		return "", err
	}
	return dir, nil
}

// startAPI serves the issue API on a loopback port the kernel chooses, so
// the demo needs no privilege. The manifest's origin is
// https://api.example.invalid (port 443): the demo's resolver maps the
// name, and its port, to this address (issueapi.Resolver is a
// netguard.PortMapper), for the plugins' broker and the built-in HTTP
// client alike.
func (w *world) startAPI() error {
	var err error
	if w.api, err = issueapi.Start("127.0.0.1:0", w.token, "api.example.invalid", "hooks.example.invalid"); err != nil {
		return fmt.Errorf("serve the demo's issue API on loopback: %w", err)
	}
	return nil
}

// resolver is the demo's DNS: both names of the demo go to the issue API,
// whatever port their URL names.
func (w *world) resolver() issueapi.Resolver {
	return issueapi.Resolver{"api.example.invalid": {w.api.Addr}, "hooks.example.invalid": {w.api.Addr}}
}

// workspace writes the demo workspace and its policy.
func (w *world) workspace() error {
	files := map[string]string{
		"docs/intro.md":       "# Acme\n\nAcme builds rockets. Issues live at api.example.invalid.\n",
		".env":                "ISSUE_API_TOKEN=" + w.token + "\n",
		".norma/policy.yaml":  workspacePolicy,
		".agent-output/.keep": "",
		"src/main.go":         "package main\n",
	}
	for name, body := range files {
		p := filepath.Join(w.ws, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			return err
		}
	}
	l, err := manifest.ParseLayerFile(filepath.Join(w.ws, ".norma", "policy.yaml"))
	if err != nil {
		return err
	}
	w.wsPolicy = l
	// The demo wrote the policy for its user: what it wrote is accepted
	// (runtime.TrustedFiles).
	return runtime.AcceptContent(w.ws, w.home, runtime.PolicyFile, []byte(workspacePolicy), "norma demo")
}

// workspacePolicy denies secrets files to every tool and plugin and admits
// the loopback range the demo's API is served on.
const workspacePolicy = `schema_version: 2
kind: workspace
description: The demo workspace's policy.
permissions:
  filesystem:
    deny: ["workspace://**/.env*", "workspace://**/.git/**"]
  network:
    allow_private: [127.0.0.0/8]
`

// demoGrant is what the demo user consents to for issue-helper: everything
// it asks for, but writes only under .agent-output/reports/.
const demoGrant = `schema_version: 2
kind: grant
permissions:
  filesystem:
    read: ["workspace://docs/**"]
    write: ["workspace://.agent-output/reports/**"]
    deny: ["workspace://**/.env*", "workspace://**/.git/**"]
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
  process:
    spawn: deny
  external_writes:
    default: approval_required
`

func randomToken() string {
	b := make([]byte, 16)
	rand.Read(b)
	return "demo-" + hex.EncodeToString(b)
}

func newWorld(root string) (*world, error) {
	home, err := os.MkdirTemp("", "norma-demo-home-")
	if err != nil {
		return nil, err
	}
	ws, err := os.MkdirTemp("", "norma-demo-workspace-")
	if err != nil {
		return nil, err
	}
	w := &world{root: root, home: home, ws: ws, bin: filepath.Join(home, "build"), token: randomToken()}
	if err := os.MkdirAll(w.bin, 0o755); err != nil {
		return nil, err
	}
	pub, priv, err := plugin.GenerateKey()
	if err != nil {
		return nil, err
	}
	w.key = priv
	if w.trust, err = plugin.OpenTrustStore(filepath.Join(home, "trust")); err != nil {
		return nil, err
	}
	if _, err := w.trust.Add(pub, "Example Corp (demo key)", []string{"com.example"}, time.Now()); err != nil {
		return nil, err
	}
	return w, nil
}
