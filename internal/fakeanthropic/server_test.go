package fakeanthropic_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/norma-run/norma/internal/fakeanthropic"
	"github.com/norma-run/norma/provider"
	"github.com/norma-run/norma/provider/anthropic"
)

// start runs a fake for the test.
func start(t *testing.T, turns ...fakeanthropic.Turn) *fakeanthropic.Server {
	t.Helper()
	s, err := fakeanthropic.New(turns...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// client is Norma's own Messages API client (the SDK's streaming decoder
// underneath): a second implementation of the wire format that the fake's
// stream must satisfy.
func client(t *testing.T, s *fakeanthropic.Server) *anthropic.Provider {
	t.Helper()
	p, err := anthropic.New(anthropic.Options{APIKey: provider.NewAPIKey("sk-fake-key-must-not-be-recorded"), BaseURL: s.URL})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

var tools = []provider.ToolSpec{{Name: "Bash", InputSchema: json.RawMessage(`{"type":"object"}`)}}

// TestScriptStreams drives a two-turn script through a real streaming
// client: a tool_use turn (stop_reason tool_use, input rebuilt from the
// input_json_delta parts), then, with the tool result in the
// conversation, a text turn; past the script the fake ends the turn.
func TestScriptStreams(t *testing.T) {
	s := start(t,
		fakeanthropic.Turn{{Text: "running"}, {Tool: "Bash", Input: map[string]any{"command": "git status"}, ID: "toolu_1"}},
		fakeanthropic.Turn{{Text: "all good"}},
	)
	p := client(t, s)
	user := provider.Message{Role: provider.RoleUser, Blocks: []provider.Block{{Type: provider.BlockText, Text: "go"}}}
	var streamed strings.Builder
	r1, err := p.Complete(t.Context(), provider.Request{Model: "m", Messages: []provider.Message{user}, Tools: tools}, func(s string) { streamed.WriteString(s) })
	if err != nil {
		t.Fatal(err)
	}
	if r1.StopReason != provider.StopToolUse || len(r1.Blocks) != 2 || r1.Blocks[1].Name != "Bash" || r1.Blocks[1].ID != "toolu_1" {
		t.Fatalf("turn 1 = %+v, want text then tool_use Bash toolu_1", r1)
	}
	var in map[string]string
	if err := json.Unmarshal(r1.Blocks[1].Input, &in); err != nil || in["command"] != "git status" {
		t.Fatalf("turn 1 input = %s (%v), want {command: git status}", r1.Blocks[1].Input, err)
	}
	if streamed.String() != "running" {
		t.Errorf("streamed text = %q, want running", streamed.String())
	}
	result := provider.Message{Role: provider.RoleUser, Blocks: []provider.Block{{Type: provider.BlockToolResult, ToolUseID: "toolu_1", Content: "refused by norma", IsError: true}}}
	conv := []provider.Message{user, {Role: provider.RoleAssistant, Blocks: r1.Blocks}, result}
	r2, err := p.Complete(t.Context(), provider.Request{Model: "m", Messages: conv, Tools: tools}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r2.StopReason != provider.StopEndTurn || len(r2.Blocks) != 1 || r2.Blocks[0].Text != "all good" {
		t.Fatalf("turn 2 = %+v, want end_turn all good", r2)
	}
	// Asked again with the same conversation (a retry), the fake answers
	// the same turn; one turn further, the script is over.
	if again, err := p.Complete(t.Context(), provider.Request{Model: "m", Messages: conv, Tools: tools}, nil); err != nil || again.Blocks[0].Text != "all good" {
		t.Fatalf("retry = %+v, %v; want the same turn", again, err)
	}
	conv = append(conv, provider.Message{Role: provider.RoleAssistant, Blocks: r2.Blocks}, user)
	if r3, err := p.Complete(t.Context(), provider.Request{Model: "m", Messages: conv, Tools: tools}, nil); err != nil || r3.StopReason != provider.StopEndTurn || r3.Blocks[0].Text != "done" {
		t.Fatalf("past the script = %+v, %v; want end_turn done", r3, err)
	}

	got := s.ToolResults()["toolu_1"]
	if got.Text != "refused by norma" || !got.IsError {
		t.Errorf("ToolResults()[toolu_1] = %+v, want the error result the client sent", got)
	}
	for _, r := range s.Requests() {
		if r.Header.Get("X-Api-Key") != "" || r.Header.Get("Authorization") != "" || strings.Contains(string(r.Body), "sk-fake") {
			t.Errorf("request %s recorded the API key", r.Path)
		}
	}
	if n := len(s.Requests()); n != 4 {
		t.Errorf("recorded %d requests, want 4", n)
	}
}

// TestSideQueries: a request that offers no tools takes no turn, a
// non-streaming request gets the message as JSON, count_tokens answers,
// and an unknown path is a 404.
func TestSideQueries(t *testing.T) {
	s := start(t, fakeanthropic.Turn{{Tool: "Bash", Input: map[string]any{"command": "ls"}}})
	post := func(path, body string) (int, map[string]any) {
		t.Helper()
		resp, err := http.Post(s.URL+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var m map[string]any
		json.Unmarshal(b, &m)
		return resp.StatusCode, m
	}
	msgs := `"messages":[{"role":"user","content":"hi"}]`
	if code, m := post("/v1/messages", `{"model":"m",`+msgs+`}`); code != 200 || m["stop_reason"] != "end_turn" {
		t.Errorf("side query = %d %v, want 200 end_turn", code, m)
	}
	code, m := post("/v1/messages", `{"model":"m","tools":[{"name":"Bash"}],`+msgs+`}`)
	content, _ := m["content"].([]any)
	if code != 200 || m["stop_reason"] != "tool_use" || len(content) != 1 {
		t.Fatalf("scripted non-stream = %d %v, want the tool_use turn", code, m)
	}
	if b := content[0].(map[string]any); b["id"] != "toolu_fake_0_0" || b["name"] != "Bash" {
		t.Errorf("tool_use block = %v, want Bash with a derived id", b)
	}
	if code, m := post("/v1/messages/count_tokens", `{"model":"m",`+msgs+`}`); code != 200 || m["input_tokens"] == nil {
		t.Errorf("count_tokens = %d %v", code, m)
	}
	if code, _ := post("/v1/other", `{}`); code != 404 {
		t.Errorf("unknown path = %d, want 404", code)
	}
	if code, _ := post("/v1/messages", `not json`); code != 400 {
		t.Errorf("bad body = %d, want 400", code)
	}
}
