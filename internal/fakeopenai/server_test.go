package fakeopenai_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/norma-run/norma/internal/fakeopenai"
)

// start runs a fake for the test.
func start(t *testing.T, turns ...fakeopenai.Turn) *fakeopenai.Server {
	t.Helper()
	s, err := fakeopenai.New(turns...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

const apiKey = "sk-fake-key-must-not-be-recorded"

var shellTool = map[string]any{"type": "function", "name": "exec_command",
	"parameters": map[string]any{"type": "object", "properties": map[string]any{"cmd": map[string]any{"type": "string"}}}}

// response is the part of a Responses API response the tests read.
type response struct {
	Status string `json:"status"`
	Output []struct {
		Type      string `json:"type"`
		Name      string `json:"name"`
		CallID    string `json:"call_id"`
		Arguments string `json:"arguments"`
		Content   []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	} `json:"output"`
	Usage struct {
		TotalTokens int64 `json:"total_tokens"`
	} `json:"usage"`
}

// outputText is the text of the response's messages, joined.
func (r response) outputText() string {
	var b strings.Builder
	for _, it := range r.Output {
		for _, c := range it.Content {
			if it.Type == "message" && c.Type == "output_text" {
				b.WriteString(c.Text)
			}
		}
	}
	return b.String()
}

// post sends a Responses API request as a client does (a bearer key, a
// JSON body) and returns the answer.
func post(t *testing.T, ctx context.Context, s *fakeopenai.Server, body map[string]any) *http.Response {
	t.Helper()
	raw, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL+"/responses", bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+apiKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /responses = %s", resp.Status)
	}
	return resp
}

// turn is what a streamed answer held, read event by event: each event's
// "event:" name must match its data's type.
type turn struct {
	types    []string
	text     string // the output_text deltas, joined
	args     string // the function_call_arguments deltas, joined
	response response
}

func stream(t *testing.T, ctx context.Context, s *fakeopenai.Server, input []any) turn {
	t.Helper()
	resp := post(t, ctx, s, map[string]any{"model": "gpt-fake", "stream": true, "input": input, "tools": []any{shellTool}})
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("Content-Type = %q, want text/event-stream", ct)
	}
	var tr turn
	seq := int64(-1)
	name := ""
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "event: "); ok {
			name = v
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		var ev struct {
			Type           string   `json:"type"`
			SequenceNumber int64    `json:"sequence_number"`
			Delta          string   `json:"delta"`
			Response       response `json:"response"`
		}
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatalf("event %q: %v", data, err)
		}
		if name != ev.Type {
			t.Errorf("event: %q carries a %q", name, ev.Type)
		}
		if ev.SequenceNumber != seq+1 {
			t.Errorf("event %s has sequence_number %d after %d", ev.Type, ev.SequenceNumber, seq)
		}
		seq = ev.SequenceNumber
		tr.types = append(tr.types, ev.Type)
		switch ev.Type {
		case "response.output_text.delta":
			tr.text += ev.Delta
		case "response.function_call_arguments.delta":
			tr.args += ev.Delta
		case "response.completed":
			tr.response = ev.Response
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return tr
}

// userMessage is a user message input item.
func userMessage(text string) map[string]any {
	return map[string]any{"type": "message", "role": "user", "content": text}
}

// callOutput is a function_call_output input item.
func callOutput(callID, output string) map[string]any {
	return map[string]any{"type": "function_call_output", "call_id": callID, "output": output}
}

// TestScriptStreams drives a two-turn script as a streaming client reads it:
// a turn with a message and a function call (the arguments
// rebuilt from their deltas, the call in the completed response's
// output), then, with the call's output in the input, a text turn; a
// retry of a request gets the same turn, and past the script the fake
// says done.
func TestScriptStreams(t *testing.T) {
	s := start(t,
		fakeopenai.Turn{{Text: "Let me look."}, {Tool: "exec_command", Input: map[string]any{"cmd": "cat .env"}}},
		fakeopenai.Turn{{Text: "all good"}},
	)
	ctx := t.Context()
	user := userMessage("go")
	t1 := stream(t, ctx, s, []any{user})
	wantTypes := []string{"response.created", "response.in_progress",
		"response.output_item.added", "response.content_part.added", "response.output_text.delta", "response.output_text.done", "response.content_part.done", "response.output_item.done",
		"response.output_item.added", "response.function_call_arguments.delta", "response.function_call_arguments.delta", "response.function_call_arguments.done", "response.output_item.done",
		"response.completed"}
	if !slices.Equal(t1.types, wantTypes) {
		t.Errorf("turn 1 events =\n%v\nwant\n%v", t1.types, wantTypes)
	}
	if t1.text != "Let me look." || t1.args != `{"cmd":"cat .env"}` {
		t.Errorf("turn 1 deltas: text %q, arguments %q", t1.text, t1.args)
	}
	out := t1.response.Output
	if t1.response.Status != "completed" || len(out) != 2 || out[1].Type != "function_call" || out[1].Name != "exec_command" ||
		out[1].CallID != fakeopenai.CallID(0, 1) || out[1].Arguments != `{"cmd":"cat .env"}` || t1.response.Usage.TotalTokens == 0 {
		t.Fatalf("turn 1 completed response = %+v", t1.response)
	}

	conv := []any{user,
		map[string]any{"type": "function_call", "arguments": `{"cmd":"cat .env"}`, "call_id": fakeopenai.CallID(0, 1), "name": "exec_command"},
		callOutput(fakeopenai.CallID(0, 1), "refused by norma"),
	}
	if t2 := stream(t, ctx, s, conv); t2.text != "all good" {
		t.Fatalf("turn 2 text = %q, want all good", t2.text)
	}
	if again := stream(t, ctx, s, conv); again.text != "all good" {
		t.Fatalf("a retry of turn 2 = %q, want the same turn", again.text)
	}
	// An input holding the fake's turn-1 message (by its id) is past the
	// script.
	raw, _ := json.Marshal(map[string]any{"model": "m", "stream": true, "tools": []any{map[string]any{"type": "function", "name": "exec_command"}},
		"input": []any{map[string]any{"type": "message", "id": "msg_fake_1_0", "role": "assistant", "content": []any{}}}})
	resp, err := http.Post(s.URL+"/responses", "application/json", strings.NewReader(string(raw)))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `"delta":"done"`) {
		t.Errorf("past the script: %s, want a done text", body)
	}

	if got := s.Outputs()[fakeopenai.CallID(0, 1)]; got != "refused by norma" {
		t.Errorf("Outputs()[%s] = %q, want the call's output", fakeopenai.CallID(0, 1), got)
	}
	for _, r := range s.Requests() {
		if r.Header.Get("Authorization") != "" || strings.Contains(string(r.Body), apiKey) {
			t.Errorf("a request was recorded with its key: %v", r.Header)
		}
	}
	if !strings.Contains(s.Bodies(), "refused by norma") {
		t.Error("Bodies() lacks the function_call_output")
	}
}

// TestSideAndErrors: a request with no tools gets a short text and takes
// no turn; a non-streaming request gets the whole response; another path
// is a 404.
func TestSideAndErrors(t *testing.T) {
	s := start(t, fakeopenai.Turn{{Tool: "exec_command", Input: map[string]any{"cmd": "ls"}}})
	whole := func(body map[string]any) response {
		var r response
		if err := json.NewDecoder(post(t, t.Context(), s, body).Body).Decode(&r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	if side := whole(map[string]any{"model": "m", "input": "title?"}); side.outputText() != "ok" {
		t.Fatalf("side request = %+v; want ok", side)
	}
	r := whole(map[string]any{"model": "m", "input": "go", "tools": []any{shellTool}})
	if len(r.Output) != 1 || r.Output[0].Name != "exec_command" {
		t.Fatalf("non-streaming turn 0 = %+v; want the scripted call", r)
	}
	resp, err := http.Get(s.URL + "/models")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /models = %d, want 404", resp.StatusCode)
	}
}
