package mcpproxy

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestPassOn: what the host's own session with the server added (the
// result type, the protocol's _meta keys) is taken out of a relayed
// result; the server's _meta, content and cache fields stay; the host's
// stored result is not changed.
func TestPassOn(t *testing.T) {
	var lt mcp.ListToolsResult
	if err := json.Unmarshal([]byte(`{"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"s"},"app/k":1},"ttlMs":5,"cacheScope":"private","tools":[{"name":"a","inputSchema":{"type":"object"}}]}`), &lt); err != nil {
		t.Fatal(err)
	}
	stored := lt.Meta
	out := lt
	passOn(&out)
	b, err := json.Marshal(uncached{&out})
	if err != nil {
		t.Fatal(err)
	}
	got := string(b)
	for _, want := range []string{`"app/k":1`, `"ttlMs":5`, `"cacheScope":"private"`, `"name":"a"`} {
		if !strings.Contains(got, want) {
			t.Errorf("lost %s: %s", want, got)
		}
	}
	for _, not := range []string{"resultType", "io.modelcontextprotocol"} {
		if strings.Contains(got, not) {
			t.Errorf("kept %s: %s", not, got)
		}
	}
	if _, ok := stored["io.modelcontextprotocol/serverInfo"]; !ok {
		t.Errorf("the stored result's _meta was changed")
	}

	var ct mcp.CallToolResult
	if err := json.Unmarshal([]byte(`{"resultType":"complete","content":[{"type":"text","text":"x"}],"structuredContent":{"n":1},"isError":true}`), &ct); err != nil {
		t.Fatal(err)
	}
	b, _ = json.Marshal(passOn(&ct))
	if got := string(b); strings.Contains(got, "resultType") || !strings.Contains(got, `"structuredContent":{"n":1}`) || !strings.Contains(got, `"isError":true`) {
		t.Errorf("tool result: %s", got)
	}
}

// FuzzUncached: a list result the server sent, however it looks, is
// passed on as valid JSON, without cache fields when the server sent no
// cacheScope and with them when it did.
func FuzzUncached(f *testing.F) {
	for _, s := range []string{`{"prompts":[]}`, `{"ttlMs":3,"cacheScope":"public","prompts":[{"name":"p"}]}`,
		`{"_meta":{"io.modelcontextprotocol/x":1,"k":"v"},"prompts":[{"name":"p","arguments":[{"name":"a"}]}],"nextCursor":"c"}`,
		`{"ttlMs":0,"prompts":null}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		var lp mcp.ListPromptsResult
		if json.Unmarshal([]byte(doc), &lp) != nil {
			return
		}
		scoped := lp.CacheScope != ""
		b, err := json.Marshal(uncached{passOn(&lp)})
		if err != nil {
			t.Fatalf("marshal: %v", err)
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("not JSON: %s", b)
		}
		_, hasScope := m["cacheScope"]
		_, hasTTL := m["ttlMs"]
		if hasScope != scoped || hasTTL != scoped {
			t.Errorf("cache fields %v/%v for a server that sent a scope: %v: %s", hasScope, hasTTL, scoped, b)
		}
		if _, ok := m["resultType"]; ok {
			t.Errorf("resultType passed on: %s", b)
		}
	})
}
