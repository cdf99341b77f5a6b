package fakeopenai

import (
	"encoding/json"
	"fmt"
	"github.com/norma-run/norma/internal/fakeapi"
	"net/http"
	"strconv"
	"strings"
)

// Item is one output item of a scripted answer: a function call when
// Tool is set, else an assistant message with Text.
type Item struct {
	// Text is a message's text.
	Text string
	// Tool and Input make a function call; Input is marshalled to the
	// call's JSON arguments (nil is {}).
	Tool  string
	Input any
}

// Turn is one scripted response: its output items, in order.
type Turn []Item

// Request is one request the server received.
type Request = fakeapi.Request

// Server is a running fake. Its methods are safe for concurrent use.
type Server struct {
	// URL is the base URL to give a client, ending in /v1 (a Codex model
	// provider's base_url).
	URL string

	turns []Turn
	*fakeapi.Recorder
}

// New starts a fake on a loopback port that answers with turns.
func New(turns ...Turn) (*Server, error) {
	s := &Server{turns: turns}
	rec, err := fakeapi.Listen("fakeopenai", func(w http.ResponseWriter, r *http.Request, body []byte) { s.serve(w, r, body) })
	if err != nil {
		return nil, err
	}
	s.Recorder, s.URL = rec, "http://"+rec.Addr+"/v1"
	return s, nil
}

// CallID is the call_id the fake gives the function call at index i of
// turn t.
func CallID(t, i int) string { return fmt.Sprintf("call_fake_%d_%d", t, i) }

// Outputs returns the function_call_output items the client sent back,
// by call_id: each one's output as text (a string output, or its text
// parts joined). A later request's copy of an output replaces an earlier
// one's.
func (s *Server) Outputs() map[string]string {
	out := map[string]string{}
	for _, r := range s.Requests() {
		var req request
		if json.Unmarshal(r.Body, &req) != nil {
			continue
		}
		for _, it := range req.items() {
			if it.Type == "function_call_output" {
				out[it.CallID] = it.outputText()
			}
		}
	}
	return out
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request, body []byte) {
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/responses") {
		writeError(w, http.StatusNotFound, "not_found", "not served by the fake")
		return
	}
	var req request
	if err := json.Unmarshal(body, &req); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "body is not JSON")
		return
	}
	resp := s.respond(req, len(body))
	if !req.Stream {
		writeJSON(w, resp.object("completed", true))
		return
	}
	resp.stream(w)
}

// request is the part of a Responses API request the fake reads.
type request struct {
	Model  string            `json:"model"`
	Stream bool              `json:"stream"`
	Tools  []json.RawMessage `json:"tools"`
	// Input is a string (one user message) or a list of items.
	Input json.RawMessage `json:"input"`
}

// items are the input's items (none for a string input).
func (r request) items() []inputItem {
	var its []inputItem
	json.Unmarshal(r.Input, &its)
	return its
}

type inputItem struct {
	Type   string          `json:"type"`
	ID     string          `json:"id"`
	CallID string          `json:"call_id"`
	Output json.RawMessage `json:"output"`
}

// outputText is a function_call_output's output as text.
func (it inputItem) outputText() string {
	var s string
	if json.Unmarshal(it.Output, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	json.Unmarshal(it.Output, &parts)
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

// turnOf is the scripted turn an item the fake sent belongs to, from its
// id (msg_fake_T, fc_fake_T_I) or call_id (call_fake_T_I).
func turnOf(it inputItem) (int, bool) {
	for _, id := range []string{it.CallID, it.ID} {
		for _, p := range []string{"call_fake_", "msg_fake_", "fc_fake_"} {
			rest, ok := strings.CutPrefix(id, p)
			if !ok {
				continue
			}
			t, _, _ := strings.Cut(rest, "_")
			if n, err := strconv.Atoi(t); err == nil {
				return n, true
			}
		}
	}
	return 0, false
}

// response is one answer of the fake.
type response struct {
	id, model string
	items     []map[string]any
	usage     map[string]any
}

// respond picks the answer to req: the turn after the last one whose
// output req's input holds.
func (s *Server) respond(req request, size int) response {
	model := req.Model
	if model == "" {
		model = "gpt-fake"
	}
	r := response{model: model, usage: map[string]any{
		"input_tokens": 1 + size/4, "input_tokens_details": map[string]any{"cached_tokens": 0},
		"output_tokens": 1, "output_tokens_details": map[string]any{"reasoning_tokens": 0}, "total_tokens": 2 + size/4,
	}}
	if len(req.Tools) == 0 {
		r.id = "resp_fake_side"
		r.items = []map[string]any{message("msg_fake_side", "ok")}
		return r
	}
	n := 0
	for _, it := range req.items() {
		if t, ok := turnOf(it); ok && t+1 > n {
			n = t + 1
		}
	}
	r.id = fmt.Sprintf("resp_fake_%d", n)
	if n >= len(s.turns) {
		r.items = []map[string]any{message(fmt.Sprintf("msg_fake_%d", n), "done")}
		return r
	}
	for i, it := range s.turns[n] {
		if it.Tool == "" {
			r.items = append(r.items, message(fmt.Sprintf("msg_fake_%d_%d", n, i), it.Text))
			continue
		}
		in := it.Input
		if in == nil {
			in = map[string]any{}
		}
		args, _ := json.Marshal(in)
		r.items = append(r.items, map[string]any{"type": "function_call", "id": fmt.Sprintf("fc_fake_%d_%d", n, i),
			"call_id": CallID(n, i), "name": it.Tool, "arguments": string(args), "status": "completed"})
	}
	return r
}

func message(id, text string) map[string]any {
	return map[string]any{"type": "message", "id": id, "role": "assistant", "status": "completed",
		"content": []any{map[string]any{"type": "output_text", "text": text, "annotations": []any{}}}}
}

// object is the response object in status, with its output when full.
func (r response) object(status string, full bool) map[string]any {
	o := map[string]any{"id": r.id, "object": "response", "created_at": 0, "status": status, "model": r.model,
		"output": []any{}, "parallel_tool_calls": true, "tool_choice": "auto", "tools": []any{}}
	if full {
		items := make([]any, len(r.items))
		for i, it := range r.items {
			items[i] = it
		}
		o["output"], o["usage"] = items, r.usage
	}
	return o
}

// stream writes r as the Responses API's SSE events.
func (r response) stream(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	seq := 0
	ev := func(typ string, data map[string]any) {
		data["type"], data["sequence_number"] = typ, seq
		seq++
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ, b)
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
	}
	ev("response.created", map[string]any{"response": r.object("in_progress", false)})
	ev("response.in_progress", map[string]any{"response": r.object("in_progress", false)})
	for i, it := range r.items {
		id := it["id"]
		switch it["type"] {
		case "message":
			text := it["content"].([]any)[0].(map[string]any)["text"].(string)
			ev("response.output_item.added", map[string]any{"output_index": i,
				"item": map[string]any{"type": "message", "id": id, "role": "assistant", "status": "in_progress", "content": []any{}}})
			ev("response.content_part.added", map[string]any{"item_id": id, "output_index": i, "content_index": 0,
				"part": map[string]any{"type": "output_text", "text": "", "annotations": []any{}}})
			ev("response.output_text.delta", map[string]any{"item_id": id, "output_index": i, "content_index": 0, "delta": text})
			ev("response.output_text.done", map[string]any{"item_id": id, "output_index": i, "content_index": 0, "text": text})
			ev("response.content_part.done", map[string]any{"item_id": id, "output_index": i, "content_index": 0,
				"part": map[string]any{"type": "output_text", "text": text, "annotations": []any{}}})
		case "function_call":
			args := it["arguments"].(string)
			ev("response.output_item.added", map[string]any{"output_index": i, "item": map[string]any{"type": "function_call", "id": id,
				"call_id": it["call_id"], "name": it["name"], "arguments": "", "status": "in_progress"}})
			// Two deltas, as the real API splits a call's arguments.
			half := len(args) / 2
			for _, part := range []string{args[:half], args[half:]} {
				ev("response.function_call_arguments.delta", map[string]any{"item_id": id, "output_index": i, "delta": part})
			}
			ev("response.function_call_arguments.done", map[string]any{"item_id": id, "output_index": i, "arguments": args})
		}
		ev("response.output_item.done", map[string]any{"output_index": i, "item": it})
	}
	ev("response.completed", map[string]any{"response": r.object("completed", true)})
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"type": code, "code": code, "message": msg, "param": nil}})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}
