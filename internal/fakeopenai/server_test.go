package fakeopenai_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

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

var shellTool = responses.ToolUnionParam{OfFunction: &responses.FunctionToolParam{Name: "exec_command",
	Parameters: map[string]any{"type": "object", "properties": map[string]any{"cmd": map[string]any{"type": "string"}}}}}

// turn is what a streamed answer held, read by the OpenAI SDK's own
// streaming decoder: a second implementation of the wire format that the
// fake's stream must satisfy.
type turn struct {
	types    []string
	text     string // the output_text deltas, joined
	args     string // the function_call_arguments deltas, joined
	response responses.Response
}

func stream(t *testing.T, ctx context.Context, s *fakeopenai.Server, input responses.ResponseInputParam) turn {
	t.Helper()
	c := openai.NewClient(option.WithBaseURL(s.URL+"/"), option.WithAPIKey(apiKey), option.WithMaxRetries(0))
	st := c.Responses.NewStreaming(ctx, responses.ResponseNewParams{Model: "gpt-fake",
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: input}, Tools: []responses.ToolUnionParam{shellTool}})
	var tr turn
	seq := int64(-1)
	for st.Next() {
		ev := st.Current()
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
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	return tr
}

// callOutput is a function_call_output input item.
func callOutput(callID, output string) responses.ResponseInputItemUnionParam {
	it := responses.ResponseInputItemParamOfFunctionCallOutput(output)
	it.OfFunctionCallOutput.CallID = openai.String(callID)
	return it
}

// TestScriptStreams drives a two-turn script through the SDK's streaming
// client: a turn with a message and a function call (the arguments
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
	user := responses.ResponseInputItemParamOfMessage("go", responses.EasyInputMessageRoleUser)
	t1 := stream(t, ctx, s, responses.ResponseInputParam{user})
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
		out[1].CallID != fakeopenai.CallID(0, 1) || out[1].Arguments.OfString != `{"cmd":"cat .env"}` || t1.response.Usage.TotalTokens == 0 {
		t.Fatalf("turn 1 completed response = %+v", t1.response)
	}

	conv := responses.ResponseInputParam{user,
		responses.ResponseInputItemParamOfFunctionCall(`{"cmd":"cat .env"}`, fakeopenai.CallID(0, 1), "exec_command"),
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
	c := openai.NewClient(option.WithBaseURL(s.URL+"/"), option.WithAPIKey(apiKey), option.WithMaxRetries(0))
	side, err := c.Responses.New(t.Context(), responses.ResponseNewParams{Model: "m",
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("title?")}})
	if err != nil || side.OutputText() != "ok" {
		t.Fatalf("side request = %+v, %v; want ok", side, err)
	}
	r, err := c.Responses.New(t.Context(), responses.ResponseNewParams{Model: "m",
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("go")}, Tools: []responses.ToolUnionParam{shellTool}})
	if err != nil || len(r.Output) != 1 || r.Output[0].Name != "exec_command" {
		t.Fatalf("non-streaming turn 0 = %+v, %v; want the scripted call", r, err)
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
