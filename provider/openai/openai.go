package openai

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/norma-run/norma/provider"
	"github.com/norma-run/norma/provider/internal/httpclient"
	"github.com/norma-run/norma/provider/internal/sse"
	"github.com/norma-run/norma/provider/internal/toolname"
)

// Name is the [provider.Provider.Name] of this provider.
const Name = "openai"

// DefaultBaseURL is used when [Options.BaseURL] is empty.
const DefaultBaseURL = "https://api.openai.com/v1/"

// Options configures [New]. The zero value of each field means its
// documented default.
type Options struct {
	// APIKey is sent as a bearer token. Optional: local servers such as
	// Ollama need none, and then no Authorization header is sent.
	APIKey provider.APIKey
	// BaseURL is the server's API root, e.g. http://localhost:11434/v1.
	// Empty means [DefaultBaseURL].
	BaseURL string
	// HTTPClient carries the requests. Nil means a dedicated client with
	// no environment proxy and no redirects.
	HTTPClient *http.Client
	// MaxCompletionTokens sends the token limit as max_completion_tokens
	// (required by OpenAI's reasoning models) instead of max_tokens
	// (understood by every compatible server).
	MaxCompletionTokens bool
	// NoStreamUsage omits stream_options.include_usage for servers that
	// refuse it; usage is then reported as zero.
	NoStreamUsage bool
	// Now is the clock used to read HTTP-date Retry-After values. Nil
	// means time.Now.
	Now func() time.Time
}

// maxErrorBody bounds how much of an error answer is read.
const maxErrorBody = 1 << 20

// Provider talks to a Chat Completions server. It is safe for concurrent
// use.
type Provider struct {
	hc   *http.Client
	url  string // the chat/completions endpoint
	key  provider.APIKey
	opts Options
	now  func() time.Time
}

var _ provider.Provider = (*Provider)(nil)

// New returns a Provider.
func New(opts Options) (*Provider, error) {
	base := opts.BaseURL
	if base == "" {
		base = DefaultBaseURL
	}
	if !strings.HasPrefix(base, "http://") && !strings.HasPrefix(base, "https://") {
		return nil, fmt.Errorf("openai: base URL %q: want http:// or https://", base)
	}
	p := &Provider{
		hc:   opts.HTTPClient,
		url:  strings.TrimRight(base, "/") + "/chat/completions",
		key:  opts.APIKey,
		opts: opts,
		now:  opts.Now,
	}
	if p.hc == nil {
		p.hc = httpclient.New()
	}
	if p.now == nil {
		p.now = time.Now
	}
	return p, nil
}

// Name returns "openai".
func (p *Provider) Name() string { return Name }

// Complete runs one streamed turn. Errors are [*provider.APIError] for API
// and transport failures, wrap [provider.ErrInvalidRequest] for requests
// that cannot be expressed, and wrap the context's error on cancellation.
func (p *Provider) Complete(ctx context.Context, req provider.Request, onText func(string)) (provider.Response, error) {
	body, names, err := p.params(req)
	if err != nil {
		return provider.Response{}, err
	}
	raw, err := json.Marshal(body)
	if err != nil {
		return provider.Response{}, fmt.Errorf("%w: %v", provider.ErrInvalidRequest, err)
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, p.url, bytes.NewReader(raw))
	if err != nil {
		return provider.Response{}, &provider.APIError{Provider: Name, Message: p.key.Redact(err.Error())}
	}
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("Accept", "text/event-stream")
	if !p.key.IsZero() {
		hr.Header.Set("Authorization", "Bearer "+p.key.Reveal())
	}
	resp, err := p.hc.Do(hr)
	if err != nil {
		return provider.Response{}, p.failure(ctx, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return provider.Response{}, p.statusError(resp)
	}

	acc := accumulator{calls: map[int64]*call{}}
	events := sse.NewReader(resp.Body)
	for {
		ev, err := events.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return provider.Response{}, p.failure(ctx, err)
		}
		if bytes.HasPrefix(ev.Data, []byte("[DONE]")) {
			break
		}
		var ch chunk
		if err := json.Unmarshal(ev.Data, &ch); err != nil {
			return provider.Response{}, &provider.APIError{Provider: Name, Message: truncate(p.key.Redact("malformed stream: " + err.Error()))}
		}
		if len(ch.Error) > 0 && string(ch.Error) != "null" {
			return provider.Response{}, p.streamError(ev.Data)
		}
		acc.add(ch, onText)
	}
	if acc.finish == "" {
		return provider.Response{}, &provider.APIError{Provider: Name, Message: "stream ended without a finish_reason", Retryable: true}
	}
	return acc.response(names)
}

// The request body of Chat Completions, as much of it as Norma sends.
type (
	chatRequest struct {
		Model               string         `json:"model"`
		Messages            []chatMessage  `json:"messages"`
		Tools               []chatTool     `json:"tools,omitempty"`
		MaxTokens           int            `json:"max_tokens,omitempty"`
		MaxCompletionTokens int            `json:"max_completion_tokens,omitempty"`
		Stream              bool           `json:"stream"`
		StreamOptions       *streamOptions `json:"stream_options,omitempty"`
	}
	streamOptions struct {
		IncludeUsage bool `json:"include_usage"`
	}
	chatTool struct {
		Type     string       `json:"type"` // "function"
		Function functionDecl `json:"function"`
	}
	functionDecl struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters"`
	}
	// chatMessage is a system, user, assistant or tool message; Content
	// is omitted only from an assistant message that only calls tools.
	chatMessage struct {
		Role       string     `json:"role"`
		Content    *string    `json:"content,omitempty"`
		ToolCalls  []toolCall `json:"tool_calls,omitempty"`
		ToolCallID string     `json:"tool_call_id,omitempty"`
	}
	toolCall struct {
		ID       string       `json:"id"`
		Type     string       `json:"type"` // "function"
		Function functionCall `json:"function"`
	}
	functionCall struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}
)

func textMessage(role, content string) chatMessage {
	return chatMessage{Role: role, Content: &content}
}

func (p *Provider) params(req provider.Request) (chatRequest, *toolname.Map, error) {
	params := chatRequest{Stream: true}
	if req.Model == "" {
		return params, nil, fmt.Errorf("%w: no model", provider.ErrInvalidRequest)
	}
	if err := provider.CheckMessages(req.Messages); err != nil {
		return params, nil, err
	}
	if len(req.Messages) == 0 {
		return params, nil, fmt.Errorf("%w: no messages", provider.ErrInvalidRequest)
	}
	names := toolname.ForRequest(req)
	params.Model = req.Model
	if req.MaxTokens > 0 {
		if p.opts.MaxCompletionTokens {
			params.MaxCompletionTokens = req.MaxTokens
		} else {
			params.MaxTokens = req.MaxTokens
		}
	}
	if !p.opts.NoStreamUsage {
		params.StreamOptions = &streamOptions{IncludeUsage: true}
	}
	for _, t := range req.Tools {
		schema := json.RawMessage(`{"type":"object","properties":{}}`)
		if len(t.InputSchema) > 0 {
			if !provider.IsJSONObject(t.InputSchema) {
				return params, nil, fmt.Errorf("%w: tool %q: input schema is not a JSON object", provider.ErrInvalidRequest, t.Name)
			}
			schema = t.InputSchema
		}
		params.Tools = append(params.Tools, chatTool{Type: "function",
			Function: functionDecl{Name: names.Wire(t.Name), Description: t.Description, Parameters: schema}})
	}
	if req.System != "" {
		params.Messages = append(params.Messages, textMessage("system", req.System))
	}
	for _, m := range req.Messages {
		var text []string
		var calls []toolCall
		for _, b := range m.Blocks {
			switch b.Type {
			case provider.BlockText:
				if b.Text != "" {
					text = append(text, b.Text)
				}
			case provider.BlockToolUse:
				args := string(b.Input)
				if args == "" {
					args = "{}"
				}
				calls = append(calls, toolCall{ID: b.ID, Type: "function", Function: functionCall{Name: names.Wire(b.Name), Arguments: args}})
			case provider.BlockToolResult:
				// Tool messages must directly follow the assistant's
				// tool_calls, before any user text.
				content := b.Content
				if b.IsError {
					content = "ERROR: " + content
				}
				tm := textMessage("tool", content)
				tm.ToolCallID = b.ToolUseID
				params.Messages = append(params.Messages, tm)
			}
		}
		joined := strings.Join(text, "\n\n")
		switch m.Role {
		case provider.RoleAssistant:
			if joined == "" && len(calls) == 0 {
				continue
			}
			am := chatMessage{Role: "assistant", ToolCalls: calls}
			if joined != "" {
				am.Content = &joined
			}
			params.Messages = append(params.Messages, am)
		case provider.RoleUser:
			if joined != "" {
				params.Messages = append(params.Messages, textMessage("user", joined))
			}
		}
	}
	return params, names, nil
}

// chunk is one streamed chat.completion.chunk, as much of it as Norma
// reads; Error is set instead when the server failed mid-stream.
type chunk struct {
	Choices []struct {
		Index int64 `json:"index"`
		Delta struct {
			Content   string `json:"content"`
			ToolCalls []struct {
				Index    int64  `json:"index"`
				ID       string `json:"id"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int64 `json:"prompt_tokens"`
		CompletionTokens int64 `json:"completion_tokens"`
	} `json:"usage"`
	Error json.RawMessage `json:"error"`
}

type call struct {
	id, name string
	args     strings.Builder
}

type accumulator struct {
	text   strings.Builder
	calls  map[int64]*call
	finish string
	usage  provider.Usage
}

func (a *accumulator) add(ch chunk, onText func(string)) {
	if ch.Usage != nil {
		a.usage = provider.Usage{InputTokens: int(ch.Usage.PromptTokens), OutputTokens: int(ch.Usage.CompletionTokens)}
	}
	for _, c := range ch.Choices {
		if c.Index != 0 {
			continue // n=1 is all we ask for
		}
		if s := c.Delta.Content; s != "" {
			a.text.WriteString(s)
			if onText != nil {
				onText(s)
			}
		}
		for _, tc := range c.Delta.ToolCalls {
			cl := a.calls[tc.Index]
			if cl == nil {
				cl = &call{}
				a.calls[tc.Index] = cl
			}
			if cl.id == "" {
				cl.id = tc.ID
			}
			if cl.name == "" {
				cl.name = tc.Function.Name
			}
			cl.args.WriteString(tc.Function.Arguments)
		}
		if c.FinishReason != "" {
			a.finish = c.FinishReason
		}
	}
}
func (a *accumulator) response(names *toolname.Map) (provider.Response, error) {
	resp := provider.Response{Usage: a.usage, StopReason: stopReason(a.finish)}
	if s := a.text.String(); s != "" {
		resp.Blocks = append(resp.Blocks, provider.Block{Type: provider.BlockText, Text: s})
	}
	idx := make([]int64, 0, len(a.calls))
	for i := range a.calls {
		idx = append(idx, i)
	}
	sort.Slice(idx, func(i, j int) bool { return idx[i] < idx[j] })
	for _, i := range idx {
		cl := a.calls[i]
		args := json.RawMessage(strings.TrimSpace(cl.args.String()))
		if len(args) == 0 {
			args = json.RawMessage(`{}`)
		}
		if !provider.IsJSONObject(args) {
			if resp.StopReason == provider.StopMaxTokens {
				continue // cut off mid-arguments: never run a guessed input
			}
			return provider.Response{}, &provider.APIError{Provider: Name, Message: fmt.Sprintf("tool call %d (%s): arguments are not a JSON object", i, cl.id)}
		}
		if cl.name == "" {
			return provider.Response{}, &provider.APIError{Provider: Name, Message: fmt.Sprintf("tool call %d has no function name", i)}
		}
		id := cl.id
		if id == "" {
			id = newCallID()
		}
		resp.Blocks = append(resp.Blocks, provider.Block{Type: provider.BlockToolUse, ID: id, Name: names.Decode(cl.name), Input: args})
	}
	if len(resp.ToolUses()) > 0 && resp.StopReason != provider.StopMaxTokens {
		resp.StopReason = provider.StopToolUse
	}
	return resp, nil
}

func newCallID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "call_norma_" + hex.EncodeToString(b[:])
}

func stopReason(finish string) string {
	switch finish {
	case "tool_calls", "function_call":
		return provider.StopToolUse
	case "length":
		return provider.StopMaxTokens
	default: // "stop", "content_filter", and anything new
		return provider.StopEndTurn
	}
}

// errorBody is the error envelope of Chat Completions servers, inside a
// response body or a stream event.
type errorBody struct {
	Error struct {
		Message string `json:"message"`
		Type    string `json:"type"`
		Code    any    `json:"code"`
	} `json:"error"`
}

// statusError reads a non-200 answer into a redacted *provider.APIError:
// the envelope's type (else its code) and message, else the body itself.
func (p *Provider) statusError(resp *http.Response) *provider.APIError {
	out := &provider.APIError{
		Provider:   Name,
		StatusCode: resp.StatusCode,
		RetryAfter: provider.ParseRetryAfter(resp.Header, p.now()),
		Retryable:  provider.RetryableStatus(resp.StatusCode),
	}
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	var body errorBody
	if json.Unmarshal(raw, &body) == nil && (body.Error.Message != "" || body.Error.Type != "") {
		out.Type = body.Error.Type
		if code, ok := body.Error.Code.(string); ok && out.Type == "" {
			out.Type = code
		}
		out.Message = body.Error.Message
	} else {
		out.Message = strings.TrimSpace(string(raw))
	}
	if out.Message == "" {
		out.Message = http.StatusText(out.StatusCode)
	}
	out.Message = truncate(p.key.Redact(out.Message))
	return out
}

// streamError reads an error inside the stream: retryable when its code is
// a retryable status or its type says the server failed or is busy.
func (p *Provider) streamError(data []byte) *provider.APIError {
	out := &provider.APIError{Provider: Name}
	var body errorBody
	if json.Unmarshal(data, &body) == nil {
		out.Type = body.Error.Type
		out.Message = body.Error.Message
		if code, ok := body.Error.Code.(float64); ok {
			out.Retryable = provider.RetryableStatus(int(code))
		}
	} else {
		out.Message = string(data)
	}
	switch out.Type {
	case "server_error", "rate_limit_exceeded", "rate_limit_error", "overloaded_error", "api_error":
		out.Retryable = true
	}
	out.Message = truncate(p.key.Redact(out.Message))
	return out
}

// failure is a transport failure before or during the answer: the
// context's error when it was cancelled, else a retryable APIError whose
// message has the key removed.
func (p *Provider) failure(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("openai: %w", context.Cause(ctx))
	}
	return &provider.APIError{Provider: Name, Message: truncate(p.key.Redact(err.Error())), Retryable: true}
}

func truncate(s string) string {
	const max = 512
	if len(s) > max {
		return s[:max] + "…"
	}
	return s
}
