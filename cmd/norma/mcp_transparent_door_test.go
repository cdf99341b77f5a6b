package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// fixtureManifest declares the fixture server's tools (internal/mcpfixture),
// each allowed without approval.
const fixtureManifest = `schema_version: 2
id: local.fixture
version: 1.0.0
entrypoint: mcpfixture
tools:
  - {name: everything, risk: read, approval: never}
  - {name: progress, risk: read, approval: never}
  - {name: invalid, risk: read, approval: never}
  - {name: fails, risk: read, approval: never}
  - {name: echo, risk: read, approval: never}
  - {name: big, risk: read, approval: never}
`

// fixturePackage builds the fixture server (static) next to its manifest
// and returns the manifest's path.
func fixturePackage(t *testing.T) string {
	t.Helper()
	return fixturePackageWith(t, fixtureManifest)
}

// fixturePackageWith is fixturePackage with the manifest text mf.
func fixturePackageWith(t testing.TB, manifestText string) string {
	t.Helper()
	pkg := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(pkg, "mcpfixture"), "./internal/mcpfixture/cmd/mcpfixture")
	build.Dir = "../.."
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the fixture: %v\n%s", err, out)
	}
	mf := filepath.Join(pkg, "manifest.yaml")
	if err := os.WriteFile(mf, []byte(manifestText), 0o644); err != nil {
		t.Fatal(err)
	}
	return mf
}

// recorder is a transport that keeps every message the client receives,
// as it came on the wire.
type recorder struct {
	mcp.Transport
	mu  sync.Mutex
	got []json.RawMessage
}

func (r *recorder) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := r.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &recConn{Connection: c, r: r}, nil
}

type recConn struct {
	mcp.Connection
	r *recorder
}

func (c *recConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	m, err := c.Connection.Read(ctx)
	if err == nil {
		if b, err := jsonrpc.EncodeMessage(m); err == nil {
			c.r.mu.Lock()
			c.r.got = append(c.r.got, b)
			c.r.mu.Unlock()
		}
	}
	return m, err
}

// fixtureTranscript drives the fixture server through cmd with one
// script (a 2025-11-25 client: logging/setLevel exists there) and returns
// every message the client received.
func fixtureTranscript(t *testing.T, cmd *exec.Cmd) []json.RawMessage {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rec := &recorder{Transport: &mcp.CommandTransport{Command: cmd, TerminateDuration: 10 * time.Second}}
	c := mcp.NewClient(&mcp.Implementation{Name: "transcript", Version: "1"}, &mcp.ClientOptions{
		LoggingMessageHandler:       func(context.Context, *mcp.LoggingMessageRequest) {},
		ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) {},
	})
	s, err := c.Connect(ctx, rec, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer s.Close()
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	must("setLevel", s.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"}))
	_, err = s.ListTools(ctx, nil)
	must("tools/list", err)
	_, err = s.CallTool(ctx, &mcp.CallToolParams{Name: "everything", Arguments: map[string]any{"word": "hi"}})
	must("everything", err)
	pp := &mcp.CallToolParams{Name: "progress", Arguments: map[string]any{}}
	pp.SetProgressToken("client-token-1")
	_, err = s.CallTool(ctx, pp)
	must("progress", err)
	if _, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "invalid", Arguments: map[string]any{}}); err == nil {
		t.Errorf("invalid: no error")
	}
	_, err = s.CallTool(ctx, &mcp.CallToolParams{Name: "fails", Arguments: map[string]any{}})
	must("fails", err)
	_, err = s.ListPrompts(ctx, nil)
	must("prompts/list", err)
	_, err = s.GetPrompt(ctx, &mcp.GetPromptParams{Name: "multi", Arguments: map[string]string{"topic": "MCP"}})
	must("prompts/get", err)
	_, err = s.ListResources(ctx, nil)
	must("resources/list", err)
	_, err = s.ListResourceTemplates(ctx, nil)
	must("resources/templates/list", err)
	for _, uri := range []string{"fixture://text", "fixture://blob", "fixture://item/7"} {
		_, err = s.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		must("resources/read "+uri, err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return rec.got
}

// withoutNorma is a message as JSON with Norma's own _meta keys
// ("norma/…") taken out, and a _meta left empty by that removed.
func withoutNorma(t *testing.T, b json.RawMessage) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if m, ok := x["_meta"].(map[string]any); ok {
				n := 0
				for k := range m {
					if strings.HasPrefix(k, "norma/") {
						delete(m, k)
						n++
					}
				}
				if n > 0 && len(m) == 0 {
					delete(x, "_meta")
				}
			}
			for _, e := range x {
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(v)
	return v
}

// TestMCPProxyTransparentDoor: the same client, with the same script,
// drives the fixture server (every content type, structured content,
// _meta, tool titles, annotations, output schemas and icons, progress
// under the client's token, logging, a -32602 error, a tool error, a
// prompt of three messages, a text and a binary resource, a template)
// directly and through the built `norma mcp proxy`: every message the
// client receives is the same, but for Norma's own _meta keys, which
// every tools/call result carries (norma/reason); the server's -32602
// error is relayed as it sent it.
func TestMCPProxyTransparentDoor(t *testing.T) {
	mf := fixturePackage(t)
	e := newRunEnv(t)
	direct := exec.Command(filepath.Join(filepath.Dir(mf), "mcpfixture"))
	want := fixtureTranscript(t, direct)

	proxied := exec.Command(normaBin(t), "--home", e.home, "mcp", "proxy", "--manifest", mf, "--", "./mcpfixture")
	proxied.Dir = e.ws
	var stderr strings.Builder
	proxied.Stderr = &stderr
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("proxy stderr:\n%s", stderr.String())
		}
	})
	got := fixtureTranscript(t, proxied)

	if len(got) != len(want) {
		t.Errorf("%d messages through the proxy, %d directly", len(got), len(want))
	}
	normaKeys := 0
	for i := range min(len(got), len(want)) {
		if strings.Contains(string(got[i]), `"norma/reason"`) {
			normaKeys++
		}
		g, w := withoutNorma(t, got[i]), withoutNorma(t, want[i])
		if !reflect.DeepEqual(g, w) {
			t.Errorf("message %d differs:\nthrough norma: %s\ndirectly:      %s", i, got[i], want[i])
		}
	}
	if normaKeys != 3 {
		t.Errorf("norma/reason on %d messages, want one per tools/call result (3; the -32602 error is the server's, as sent)", normaKeys)
	}
	// The transcript holds what the script asked for: progress under the
	// client's token, logging, the -32602 error, the blob.
	all := ""
	for _, m := range got {
		all += string(m) + "\n"
	}
	for _, s := range []string{`"progressToken":"client-token-1"`, `"method":"notifications/message"`, `"code":-32602`, `"blob":"iVBOR`, `"structuredContent"`, `"outputSchema"`} {
		if !strings.Contains(all, s) {
			t.Errorf("the transcript has no %s", s)
		}
	}
}
