package fakegemini_test

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/norma-run/norma/internal/fakegemini"
)

// start runs a fake for the test.
func start(t *testing.T, turns ...fakegemini.Turn) *fakegemini.Server {
	t.Helper()
	s, err := fakegemini.New(turns...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

const apiKey = "AIza-fake-key-must-not-be-recorded"

var tools = []any{map[string]any{"functionDeclarations": []any{map[string]any{"name": "run_shell_command"}}}}

// post sends body to s at path (…/models/MODEL:METHOD?QUERY) as Gemini
// CLI's SDK does, with the key in x-goog-api-key.
func post(t *testing.T, s *fakegemini.Server, path string, body any) *http.Response {
	t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, s.URL+path, strings.NewReader(string(b)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-goog-api-key", apiKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// chunk is the part of a GenerateContentResponse the tests read.
type chunk struct {
	Candidates []struct {
		Content struct {
			Role  string `json:"role"`
			Parts []struct {
				Text         string `json:"text"`
				FunctionCall *struct {
					ID   string         `json:"id"`
					Name string         `json:"name"`
					Args map[string]any `json:"args"`
				} `json:"functionCall"`
			} `json:"parts"`
		} `json:"content"`
		FinishReason string `json:"finishReason"`
	} `json:"candidates"`
	UsageMetadata *struct {
		TotalTokenCount int `json:"totalTokenCount"`
	} `json:"usageMetadata"`
}

// events reads an SSE answer as the SDK does: "data: JSON" lines, each
// event ended by a blank line.
func events(t *testing.T, resp *http.Response) []chunk {
	t.Helper()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var out []chunk
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			if line != "" {
				t.Errorf("not an SSE line: %q", line)
			}
			continue
		}
		var c chunk
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			t.Fatalf("data %q: %v", data, err)
		}
		out = append(out, c)
	}
	return out
}

const stream = "/v1beta/models/gemini-fake:streamGenerateContent?alt=sse"

func user(text string) map[string]any {
	return map[string]any{"role": "user", "parts": []any{map[string]any{"text": text}}}
}

// TestScript plays a two-turn script: a text then a functionCall of
// run_shell_command (one SSE event each, the last with the finish reason
// and usage), then, with the model's content and the functionResponse in
// the conversation, a text; past the script the fake says done. The
// functionResponse is read back by the fake's call id, from the id as
// Gemini CLI sends it.
func TestScript(t *testing.T) {
	s := start(t,
		fakegemini.Turn{{Text: "looking"}, {Tool: "run_shell_command", Args: map[string]any{"command": "git status"}}},
		fakegemini.Turn{{Text: "all good"}},
	)
	cs := events(t, post(t, s, stream, map[string]any{"contents": []any{user("go")}, "tools": tools}))
	if len(cs) != 2 {
		t.Fatalf("turn 0: %d events, want 2: %+v", len(cs), cs)
	}
	if p := cs[0].Candidates[0].Content.Parts[0]; p.Text != "looking" || cs[0].Candidates[0].FinishReason != "" || cs[0].UsageMetadata != nil {
		t.Errorf("turn 0, event 0 = %+v, want the text without a finish reason", cs[0])
	}
	last := cs[1].Candidates[0]
	fc := last.Content.Parts[0].FunctionCall
	if last.Content.Role != "model" || fc == nil || fc.Name != "run_shell_command" || fc.ID != fakegemini.CallID(0, 1) || fc.Args["command"] != "git status" {
		t.Errorf("turn 0, event 1 = %+v, want the functionCall %s", last, fakegemini.CallID(0, 1))
	}
	if last.FinishReason != "STOP" || cs[1].UsageMetadata == nil || cs[1].UsageMetadata.TotalTokenCount < 1 {
		t.Errorf("turn 0 ends with %q, usage %+v; want STOP and the usage", last.FinishReason, cs[1].UsageMetadata)
	}

	model := map[string]any{"role": "model", "parts": []any{map[string]any{"text": "looking"},
		map[string]any{"functionCall": map[string]any{"id": "run_shell_command__" + fakegemini.CallID(0, 1), "name": "run_shell_command", "args": map[string]any{"command": "git status"}}}}}
	result := map[string]any{"role": "user", "parts": []any{map[string]any{"functionResponse": map[string]any{
		"id": "run_shell_command__" + fakegemini.CallID(0, 1), "name": "run_shell_command", "response": map[string]any{"error": "Tool execution blocked: NORMA X"}}}}}
	conv := []any{user("go"), model, result}
	cs = events(t, post(t, s, stream, map[string]any{"contents": conv, "tools": tools}))
	if len(cs) != 1 || cs[0].Candidates[0].Content.Parts[0].Text != "all good" || cs[0].Candidates[0].FinishReason != "STOP" {
		t.Errorf("turn 1 = %+v, want the text all good", cs)
	}
	fr, ok := s.FunctionResponses()[fakegemini.CallID(0, 1)]
	if !ok || fr.Name != "run_shell_command" || fr.Text() != "Tool execution blocked: NORMA X" {
		t.Errorf("FunctionResponses()[%s] = %+v, %v", fakegemini.CallID(0, 1), fr, ok)
	}

	conv = append(conv, map[string]any{"role": "model", "parts": []any{map[string]any{"text": "all good"}}}, user("more"))
	cs = events(t, post(t, s, stream, map[string]any{"contents": conv, "tools": tools}))
	if len(cs) != 1 || cs[0].Candidates[0].Content.Parts[0].Text != "done" {
		t.Errorf("past the script = %+v, want done", cs)
	}
}

// TestSideQueries: a request without tools gets a short text and takes
// no turn; generateContent answers one JSON response; countTokens a
// count; anything else is a 404 in the API's error shape.
func TestSideQueries(t *testing.T) {
	s := start(t, fakegemini.Turn{{Text: "first"}})
	var c chunk
	resp := post(t, s, "/v1beta/models/gemini-fake:generateContent", map[string]any{"contents": []any{user("title?")}})
	if err := json.NewDecoder(resp.Body).Decode(&c); err != nil || c.Candidates[0].Content.Parts[0].Text != "ok" || c.Candidates[0].FinishReason != "STOP" {
		t.Errorf("side query: %+v %v, want ok", c, err)
	}
	resp = post(t, s, "/v1beta/models/gemini-fake:generateContent", map[string]any{"contents": []any{user("go")}, "tools": tools})
	if err := json.NewDecoder(resp.Body).Decode(&c); err != nil || c.Candidates[0].Content.Parts[0].Text != "first" {
		t.Errorf("turn 0 after a side query: %+v %v, want first", c, err)
	}
	var n struct{ TotalTokens int }
	resp = post(t, s, "/v1beta/models/gemini-fake:countTokens", map[string]any{"contents": []any{user("go")}})
	if err := json.NewDecoder(resp.Body).Decode(&n); err != nil || n.TotalTokens < 1 {
		t.Errorf("countTokens: %+v %v", n, err)
	}
	for _, p := range []string{"/v1beta/models/gemini-fake:embedContent", "/v1beta/files", "/v1beta/models/gemini-fake"} {
		resp := post(t, s, p, map[string]any{})
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusNotFound || !strings.Contains(string(b), `"status":"NOT_FOUND"`) {
			t.Errorf("%s: %d %s, want a 404", p, resp.StatusCode, b)
		}
	}
	if resp := post(t, s, stream, "not an object"); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("a body that is not a request: %d, want 400", resp.StatusCode)
	}
}

// TestRecordsWithoutKey: every request is recorded, with neither the
// x-goog-api-key header nor a key query parameter.
func TestRecordsWithoutKey(t *testing.T) {
	s := start(t)
	post(t, s, stream+"&key="+apiKey, map[string]any{"contents": []any{user("hello")}, "tools": tools})
	rs := s.Requests()
	if len(rs) != 1 || rs[0].Method != http.MethodPost || rs[0].Path != "/v1beta/models/gemini-fake:streamGenerateContent" || rs[0].Query != "alt=sse" {
		t.Fatalf("requests = %+v", rs)
	}
	if !strings.Contains(s.Bodies(), "hello") {
		t.Errorf("Bodies() lacks the request: %s", s.Bodies())
	}
	for k, v := range rs[0].Header {
		if strings.Contains(strings.Join(v, " "), apiKey) {
			t.Errorf("header %s records the key", k)
		}
	}
}
