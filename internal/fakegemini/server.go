package fakegemini

import (
	"encoding/json"
	"fmt"
	"github.com/norma-run/norma/internal/fakeapi"
	"net/http"
	"strings"
)

// Part is one part of a scripted answer: a functionCall when Tool is set,
// else a text part.
type Part struct {
	// Text is a text part's text.
	Text string
	// Tool and Args make a functionCall; Args is marshalled to the call's
	// JSON args (nil is {}).
	Tool string
	Args any
}

// Turn is one scripted model content: its parts, in order.
type Turn []Part

// Request is one request the server received.
type Request = fakeapi.Request

// Server is a running fake. Its methods are safe for concurrent use.
type Server struct {
	// URL is the base URL to give a client (GOOGLE_GEMINI_BASE_URL): the
	// client adds the API version and the method.
	URL string

	turns []Turn
	*fakeapi.Recorder
}

// New starts a fake on a loopback port that answers with turns.
func New(turns ...Turn) (*Server, error) {
	s := &Server{turns: turns}
	rec, err := fakeapi.Listen("fakegemini", func(w http.ResponseWriter, r *http.Request, body []byte) { s.serve(w, r, body) })
	if err != nil {
		return nil, err
	}
	s.Recorder, s.URL = rec, "http://"+rec.Addr
	return s, nil
}

// CallID is the id the fake gives the functionCall at index i of turn t.
func CallID(t, i int) string { return fmt.Sprintf("call_fake_%d_%d", t, i) }

// FunctionResponse is one functionResponse part a client sent back.
type FunctionResponse struct {
	// ID is the id as the client sent it, Name the tool's name.
	ID, Name string
	// Response is the response object as sent: Gemini CLI puts a
	// tool's result under "output" and a refusal under "error".
	Response json.RawMessage
}

// Text is the response's "output" and "error" strings, joined by a
// newline; the raw object when it has neither.
func (f FunctionResponse) Text() string {
	var m map[string]any
	json.Unmarshal(f.Response, &m)
	var out []string
	for _, k := range []string{"output", "error"} {
		if s, ok := m[k].(string); ok {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return string(f.Response)
	}
	return strings.Join(out, "\n")
}

// FunctionResponses returns the functionResponse parts the client sent
// back, keyed by the fake's [CallID] when the id holds one (Gemini CLI
// sends NAME__call_fake_T_I), else by the id as sent. A later request's
// copy replaces an earlier one's.
func (s *Server) FunctionResponses() map[string]FunctionResponse {
	out := map[string]FunctionResponse{}
	for _, r := range s.Requests() {
		var req request
		if json.Unmarshal(r.Body, &req) != nil {
			continue
		}
		for _, c := range req.Contents {
			for _, p := range c.Parts {
				if fr := p.FunctionResponse; fr != nil {
					key := fr.ID
					if i := strings.Index(key, "call_fake_"); i >= 0 {
						key = key[i:]
					}
					out[key] = FunctionResponse{ID: fr.ID, Name: fr.Name, Response: fr.Response}
				}
			}
		}
	}
	return out
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request, body []byte) {
	// /v1beta/models/MODEL:METHOD
	_, rest, ok := strings.Cut(r.URL.Path, "/models/")
	i := strings.LastIndexByte(rest, ':')
	if r.Method != http.MethodPost || !ok || i < 0 {
		writeError(w, http.StatusNotFound, "NOT_FOUND", "not served by the fake")
		return
	}
	model, method := rest[:i], rest[i+1:]
	switch method {
	case "countTokens":
		writeJSON(w, map[string]any{"totalTokens": 1 + len(body)/4})
		return
	case "generateContent", "streamGenerateContent":
	default:
		writeError(w, http.StatusNotFound, "NOT_FOUND", "not served by the fake")
		return
	}
	var req request
	if err := json.Unmarshal(body, &req); err != nil {
		writeError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "body is not JSON")
		return
	}
	a := s.answerTo(req)
	switch {
	case method == "generateContent":
		writeJSON(w, a.response(model, a.parts, true, len(body)))
	case r.URL.Query().Get("alt") == "sse":
		a.stream(w, model, len(body))
	default:
		var all []any
		for i, p := range a.parts {
			all = append(all, a.response(model, []any{p}, i == len(a.parts)-1, len(body)))
		}
		writeJSON(w, all)
	}
}

// request is the part of a generateContent request the fake reads.
type request struct {
	Contents []struct {
		Role  string `json:"role"`
		Parts []struct {
			FunctionResponse *struct {
				ID       string          `json:"id"`
				Name     string          `json:"name"`
				Response json.RawMessage `json:"response"`
			} `json:"functionResponse"`
		} `json:"parts"`
	} `json:"contents"`
	Tools []json.RawMessage `json:"tools"`
}

// answer is one model content the fake sends.
type answer struct {
	id    string
	parts []any
}

// answerTo picks the answer to req: the script's turn at the number of
// model contents in its conversation.
func (s *Server) answerTo(req request) answer {
	if len(req.Tools) == 0 {
		return answer{id: "resp_fake_side", parts: []any{map[string]any{"text": "ok"}}}
	}
	n := 0
	for _, c := range req.Contents {
		if c.Role == "model" {
			n++
		}
	}
	a := answer{id: fmt.Sprintf("resp_fake_%d", n)}
	if n >= len(s.turns) {
		a.parts = []any{map[string]any{"text": "done"}}
		return a
	}
	for i, p := range s.turns[n] {
		if p.Tool == "" {
			a.parts = append(a.parts, map[string]any{"text": p.Text})
			continue
		}
		args := p.Args
		if args == nil {
			args = map[string]any{}
		}
		a.parts = append(a.parts, map[string]any{"functionCall": map[string]any{"id": CallID(n, i), "name": p.Tool, "args": args}})
	}
	return a
}

// response is one GenerateContentResponse holding parts; the final one
// has the finish reason and the usage.
func (a answer) response(model string, parts []any, final bool, size int) map[string]any {
	cand := map[string]any{"content": map[string]any{"role": "model", "parts": parts}, "index": 0}
	r := map[string]any{"candidates": []any{cand}, "modelVersion": model, "responseId": a.id}
	if final {
		cand["finishReason"] = "STOP"
		in := 1 + size/4
		r["usageMetadata"] = map[string]any{"promptTokenCount": in, "candidatesTokenCount": len(a.parts), "totalTokenCount": in + len(a.parts)}
	}
	return r
}

// stream writes a as server-sent events, one response per part.
func (a answer) stream(w http.ResponseWriter, model string, size int) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	for i, p := range a.parts {
		b, _ := json.Marshal(a.response(model, []any{p}, i == len(a.parts)-1, size))
		fmt.Fprintf(w, "data: %s\r\n\r\n", b)
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
	}
}

// writeError writes the API's error object.
func writeError(w http.ResponseWriter, code int, status, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"code": code, "message": msg, "status": status}})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}
