package host

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/norma-run/norma/secret"
)

const relayCanary = "sk-relay-canary-5f1e9c7a2b"

func relayRedactor(t testing.TB) *secret.Redactor {
	red := secret.NewRedactor()
	if err := red.AddValue("relay_token", secret.NewValue([]byte(relayCanary))); err != nil {
		t.Fatal(err)
	}
	return red
}

// TestRedactToolResult: a relayed tool result is redacted everywhere a
// secret can ride (text, embedded text, resource link, structured
// content at any depth, _meta), and what carries none is kept as sent.
func TestRedactToolResult(t *testing.T) {
	red := relayRedactor(t)
	res := &mcp.CallToolResult{
		Meta: mcp.Meta{"k": map[string]any{"deep": []any{"x " + relayCanary}}},
		Content: []mcp.Content{
			&mcp.TextContent{Text: "token " + relayCanary, Meta: mcp.Meta{"m": relayCanary}},
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "r://1", Text: relayCanary}},
			&mcp.ResourceLink{URI: "r://" + relayCanary, Name: "n", Description: relayCanary},
			&mcp.ImageContent{Data: []byte{1, 2, 3}, MIMEType: "image/png"},
		},
		StructuredContent: map[string]any{"a": []any{map[string]any{"b": relayCanary}, 3.0, true, nil}, "keep": "plain"},
		IsError:           true,
	}
	redactToolResult(red, res)
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), relayCanary) {
		t.Errorf("the canary is relayed: %s", b)
	}
	for _, keep := range []string{`"keep":"plain"`, `"data":"AQID"`, `"isError":true`, `3`} {
		if !strings.Contains(string(b), keep) {
			t.Errorf("%s lost: %s", keep, b)
		}
	}
}

// TestRequestMeta: the client's _meta goes to the server without its
// progress token and without the protocol's own keys of the client's
// session (its version, info, capabilities), but with its logging level;
// the host's own keys win.
func TestRequestMeta(t *testing.T) {
	r := &Relay{Meta: mcp.Meta{"progressToken": "c1", "app/x": 1, mcp.MetaKeyClientCapabilities: map[string]any{"sampling": map[string]any{}},
		mcp.MetaKeyProtocolVersion: "2026-07-28", "norma/idempotency_key": "forged"}, LogLevel: "debug"}
	m := requestMeta(WithRelay(context.Background(), r), mcp.Meta{"norma/idempotency_key": "own"})
	want := mcp.Meta{"app/x": 1, mcp.MetaKeyLogLevel: mcp.LoggingLevel("debug"), "norma/idempotency_key": "own"}
	if len(m) != len(want) || m["app/x"] != 1 || m["norma/idempotency_key"] != "own" || m[mcp.MetaKeyLogLevel] != mcp.LoggingLevel("debug") {
		t.Errorf("meta = %v, want %v", m, want)
	}
	if got := requestMeta(context.Background(), nil); got != nil {
		t.Errorf("without a relay: %v", got)
	}
}

// FuzzRedactValue: whatever JSON a server sends as structured content or
// logging data, with the canary spliced into its strings, nothing of the
// redacted value holds the canary, and it still marshals.
func FuzzRedactValue(f *testing.F) {
	for _, s := range []string{`{"a":"X"}`, `["X",{"b":["X",1,null]}]`, `"X"`, `{"X":"X"}`, `[[[["X"]]]]`, `{"a":1.5e300,"b":false}`} {
		f.Add(s)
	}
	red := relayRedactor(f)
	f.Fuzz(func(t *testing.T, doc string) {
		var v any
		if json.Unmarshal([]byte(strings.ReplaceAll(doc, "X", relayCanary)), &v) != nil {
			return
		}
		out, err := json.Marshal(redactValue(red, v))
		if err != nil {
			t.Fatalf("redacted value does not marshal: %v", err)
		}
		if strings.Contains(string(out), relayCanary) {
			t.Errorf("canary in the redacted value: %s", out)
		}
		var back any
		if err := json.Unmarshal(out, &back); err != nil {
			t.Fatal(err)
		}
		var walk func(any)
		walk = func(v any) {
			switch x := v.(type) {
			case string:
				if strings.Contains(x, relayCanary) {
					t.Errorf("canary in a value: %s", out)
				}
			case map[string]any:
				for _, e := range x {
					walk(e)
				}
			case []any:
				for _, e := range x {
					walk(e)
				}
			}
		}
		walk(back)
	})
}

// BenchmarkRelayResult1MiB: what the host adds to a 1 MiB text result it
// relays (the text the gate judges, the redaction of the relayed result,
// the relay), beside the SDK's own decoding of the same result from the
// wire (the one copy a client must make). B/op of the relay: the bytes it
// copies.
//
//	go test -run '^$' -bench BenchmarkRelayResult1MiB -benchmem ./plugin/host/
func BenchmarkRelayResult1MiB(b *testing.B) {
	text := strings.Repeat("abcdefghijklmno\n", 1<<16)
	wire, err := json.Marshal(&mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(text)))
		for b.Loop() {
			var res mcp.CallToolResult
			if err := json.Unmarshal(wire, &res); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("relay", func(b *testing.B) {
		p := &Plugin{h: &Host{cfg: Config{MaxOutput: 4 << 20, Redactor: relayRedactor(b)}}}
		var res mcp.CallToolResult
		if err := json.Unmarshal(wire, &res); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		b.SetBytes(int64(len(text)))
		for b.Loop() {
			r := &Relay{}
			out, err := p.result(WithRelay(context.Background(), r), "big", &res)
			if err != nil || len(out.Content) != len(text) {
				b.Fatal(err)
			}
		}
	})
}
