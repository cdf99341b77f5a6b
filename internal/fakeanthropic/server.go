package fakeanthropic

import (
	"encoding/json"
	"fmt"
	"github.com/norma-run/norma/internal/fakeapi"
	"io"
	"net/http"
	"strings"
)

// Block is one content block of a scripted answer: a tool_use block when
// Tool is set, else a text block.
type Block struct {
	// Text is a text block's text.
	Text string
	// Tool and Input make a tool_use block; Input is marshalled to JSON
	// (nil is {}).
	Tool  string
	Input any
	// ID is the tool_use id; empty means one derived from the turn and
	// the block's index ("toolu_fake_T_I").
	ID string
}

// Turn is one scripted assistant message. A turn with a tool_use block
// stops with stop_reason tool_use, any other with end_turn.
type Turn []Block

// Request is one request the server received.
type Request = fakeapi.Request

// Server is a running fake. Its methods are safe for concurrent use.
type Server struct {
	// URL is the base URL to give a client (ANTHROPIC_BASE_URL).
	URL string

	turns []Turn
	*fakeapi.Recorder
}

// New starts a fake on a loopback port that answers with turns.
func New(turns ...Turn) (*Server, error) {
	s := &Server{turns: turns}
	rec, err := fakeapi.Listen("fakeanthropic", func(w http.ResponseWriter, r *http.Request, body []byte) { s.serve(w, r, body) })
	if err != nil {
		return nil, err
	}
	s.Recorder, s.URL = rec, "http://"+rec.Addr
	return s, nil
}

// ToolResult is one tool_result block a client sent back.
type ToolResult struct {
	ToolUseID string
	IsError   bool
	// Text is the result's text (its string content, or its text blocks
	// joined).
	Text string
}

// ToolResults returns the tool_result blocks of the last request whose
// conversation holds them all (the longest one), keyed by tool_use id.
func (s *Server) ToolResults() map[string]ToolResult {
	out := map[string]ToolResult{}
	for _, r := range s.Requests() {
		var m messagesRequest
		if json.Unmarshal(r.Body, &m) != nil {
			continue
		}
		for _, msg := range m.Messages {
			for _, c := range msg.blocks() {
				if c.Type != "tool_result" {
					continue
				}
				out[c.ToolUseID] = ToolResult{ToolUseID: c.ToolUseID, IsError: c.IsError, Text: c.text()}
			}
		}
	}
	return out
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request, body []byte) {
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/v1/messages":
		s.messages(w, body)
	case r.Method == http.MethodPost && r.URL.Path == "/v1/messages/count_tokens":
		writeJSON(w, map[string]any{"input_tokens": 1 + len(body)/4})
	default:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, `{"type":"error","error":{"type":"not_found_error","message":"not served by the fake"}}`)
	}
}

// messagesRequest is the part of a Messages API request the fake reads.
type messagesRequest struct {
	Model    string            `json:"model"`
	Stream   bool              `json:"stream"`
	Tools    []json.RawMessage `json:"tools"`
	Messages []message         `json:"messages"`
}

type message struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type content struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ToolUseID string          `json:"tool_use_id"`
	IsError   bool            `json:"is_error"`
	Content   json.RawMessage `json:"content"`
}

// blocks returns a message's content blocks (none for string content).
func (m message) blocks() []content {
	var cs []content
	json.Unmarshal(m.Content, &cs)
	return cs
}

// text returns a tool_result's content as text.
func (c content) text() string {
	var s string
	if json.Unmarshal(c.Content, &s) == nil {
		return s
	}
	var parts []content
	json.Unmarshal(c.Content, &parts)
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

// answer is one assistant message the fake sends.
type answer struct {
	id     string
	blocks []map[string]any
	stop   string
}

// turnFor picks the answer to a request: the script's turn at the
// number of assistant messages in its conversation.
func (s *Server) turnFor(req messagesRequest) answer {
	if len(req.Tools) == 0 {
		return answer{id: "msg_fake_side", blocks: []map[string]any{{"type": "text", "text": "ok"}}, stop: "end_turn"}
	}
	n := 0
	for _, m := range req.Messages {
		if m.Role == "assistant" {
			n++
		}
	}
	// Each turn has its own message id: a client merges the streamed
	// parts of one message by its id, so two turns sharing one would
	// become one message (and the script would never advance).
	id := fmt.Sprintf("msg_fake_%d", n)
	if n >= len(s.turns) {
		return answer{id: id, blocks: []map[string]any{{"type": "text", "text": "done"}}, stop: "end_turn"}
	}
	a := answer{id: id, stop: "end_turn"}
	for i, b := range s.turns[n] {
		if b.Tool == "" {
			a.blocks = append(a.blocks, map[string]any{"type": "text", "text": b.Text})
			continue
		}
		tid := b.ID
		if tid == "" {
			tid = fmt.Sprintf("toolu_fake_%d_%d", n, i)
		}
		in := b.Input
		if in == nil {
			in = map[string]any{}
		}
		a.blocks = append(a.blocks, map[string]any{"type": "tool_use", "id": tid, "name": b.Tool, "input": in})
		a.stop = "tool_use"
	}
	return a
}

func (s *Server) messages(w http.ResponseWriter, body []byte) {
	var req messagesRequest
	if err := json.Unmarshal(body, &req); err != nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"type":"error","error":{"type":"invalid_request_error","message":"body is not JSON"}}`)
		return
	}
	a := s.turnFor(req)
	model := req.Model
	if model == "" {
		model = "claude-fake"
	}
	usage := map[string]any{"input_tokens": 1 + len(body)/4, "output_tokens": 1, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
	msg := map[string]any{"id": a.id, "type": "message", "role": "assistant", "model": model, "content": a.blocks, "stop_reason": a.stop, "stop_sequence": nil, "usage": usage}
	if !req.Stream {
		writeJSON(w, msg)
		return
	}
	stream(w, msg, a, usage)
}

// stream writes msg as the Messages API's SSE events.
func stream(w http.ResponseWriter, msg map[string]any, a answer, usage map[string]any) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	start := map[string]any{}
	for k, v := range msg {
		start[k] = v
	}
	start["content"], start["stop_reason"] = []any{}, nil
	event(w, "message_start", map[string]any{"type": "message_start", "message": start})
	for i, b := range a.blocks {
		switch b["type"] {
		case "text":
			event(w, "content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{"type": "text", "text": ""}})
			event(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "text_delta", "text": b["text"]}})
		case "tool_use":
			event(w, "content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{"type": "tool_use", "id": b["id"], "name": b["name"], "input": map[string]any{}}})
			in, _ := json.Marshal(b["input"])
			// Two deltas, as the real API splits a tool's input.
			half := len(in) / 2
			for _, part := range []string{string(in[:half]), string(in[half:])} {
				event(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "input_json_delta", "partial_json": part}})
			}
		}
		event(w, "content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	event(w, "message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": a.stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 1 + len(a.blocks)}})
	event(w, "message_stop", map[string]any{"type": "message_stop"})
}

func event(w http.ResponseWriter, name string, data any) {
	b, _ := json.Marshal(data)
	fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b)
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}
