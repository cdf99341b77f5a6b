package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/norma-run/norma/provider"
	"github.com/norma-run/norma/provider/internal/httpclient"
	"github.com/norma-run/norma/provider/internal/sse"
	"github.com/norma-run/norma/provider/internal/toolname"
)

// Name is the [provider.Provider.Name] of this provider.
const Name = "anthropic"

// DefaultMaxTokens is used when neither the request nor [Options] set a
// token limit; the Messages API requires one.
const DefaultMaxTokens = 4096

// ErrNoAPIKey is returned by [New] when [Options.APIKey] is empty.
var ErrNoAPIKey = errors.New("anthropic: no API key")

// Options configures [New]. The zero value of each field means its
// documented default.
type Options struct {
	// APIKey is sent as x-api-key. Required.
	APIKey provider.APIKey
	// BaseURL replaces https://api.anthropic.com (tests, gateways).
	BaseURL string
	// HTTPClient carries the requests. Nil means a dedicated client with
	// no environment proxy and no redirects.
	HTTPClient *http.Client
	// MaxTokens is used when [provider.Request.MaxTokens] is zero. Zero
	// means [DefaultMaxTokens].
	MaxTokens int
	// Now is the clock used to read HTTP-date Retry-After values. Nil
	// means time.Now.
	Now func() time.Time
}

// DefaultBaseURL is used when [Options.BaseURL] is empty.
const DefaultBaseURL = "https://api.anthropic.com"

// APIVersion is the anthropic-version header every request carries.
const APIVersion = "2023-06-01"

// maxErrorBody bounds how much of an error answer is read.
const maxErrorBody = 1 << 20

// Provider talks to the Messages API. It is safe for concurrent use.
type Provider struct {
	hc        *http.Client
	url       string // the messages endpoint
	key       provider.APIKey
	maxTokens int
	now       func() time.Time
}

var _ provider.Provider = (*Provider)(nil)

// New returns a Provider. It fails with [ErrNoAPIKey] when no key is given.
func New(opts Options) (*Provider, error) {
	if opts.APIKey.IsZero() {
		return nil, ErrNoAPIKey
	}
	base := opts.BaseURL
	if base == "" {
		base = DefaultBaseURL
	}
	if !strings.HasPrefix(base, "http://") && !strings.HasPrefix(base, "https://") {
		return nil, fmt.Errorf("anthropic: base URL %q: want http:// or https://", base)
	}
	p := &Provider{
		hc:        opts.HTTPClient,
		url:       strings.TrimRight(base, "/") + "/v1/messages",
		key:       opts.APIKey,
		maxTokens: opts.MaxTokens,
		now:       opts.Now,
	}
	if p.hc == nil {
		p.hc = httpclient.New()
	}
	if p.maxTokens <= 0 {
		p.maxTokens = DefaultMaxTokens
	}
	if p.now == nil {
		p.now = time.Now
	}
	return p, nil
}

// Name returns "anthropic".
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
	hr.Header.Set("Anthropic-Version", APIVersion)
	hr.Header.Set("X-Api-Key", p.key.Reveal())
	resp, err := p.hc.Do(hr)
	if err != nil {
		return provider.Response{}, p.failure(ctx, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return provider.Response{}, p.statusError(resp)
	}

	var acc accumulator
	events := sse.NewReader(resp.Body)
	for !acc.stopped {
		ev, err := events.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return provider.Response{}, p.failure(ctx, err)
		}
		if ev.Type == "ping" {
			continue
		}
		var se streamEvent
		if err := json.Unmarshal(ev.Data, &se); err != nil {
			return provider.Response{}, &provider.APIError{Provider: Name, Message: truncate(p.key.Redact("malformed stream: " + err.Error()))}
		}
		if ev.Type == "error" || se.Type == "error" {
			return provider.Response{}, p.streamError(ev.Data)
		}
		if err := acc.add(se, onText); err != nil {
			return provider.Response{}, &provider.APIError{Provider: Name, Message: p.key.Redact("malformed stream: " + err.Error())}
		}
	}
	if !acc.stopped {
		return provider.Response{}, &provider.APIError{Provider: Name, Message: "stream ended before message_stop", Retryable: true}
	}
	return acc.response(names)
}

// The request body of the Messages API, as much of it as Norma sends.
type (
	messagesRequest struct {
		Model     string        `json:"model"`
		MaxTokens int           `json:"max_tokens"`
		System    []textBlock   `json:"system,omitempty"`
		Messages  []wireMessage `json:"messages"`
		Tools     []wireTool    `json:"tools,omitempty"`
		Stream    bool          `json:"stream"`
	}
	wireMessage struct {
		Role    provider.Role `json:"role"`
		Content []any         `json:"content"`
	}
	wireTool struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		InputSchema json.RawMessage `json:"input_schema"`
	}
	textBlock struct {
		Type string `json:"type"` // "text"
		Text string `json:"text"`
	}
	toolUseBlock struct {
		Type  string          `json:"type"` // "tool_use"
		ID    string          `json:"id"`
		Name  string          `json:"name"`
		Input json.RawMessage `json:"input"`
	}
	toolResultBlock struct {
		Type      string      `json:"type"` // "tool_result"
		ToolUseID string      `json:"tool_use_id"`
		IsError   bool        `json:"is_error"`
		Content   []textBlock `json:"content,omitempty"`
	}
)

// params converts a provider-neutral request into the API's body.
func (p *Provider) params(req provider.Request) (messagesRequest, *toolname.Map, error) {
	params := messagesRequest{Stream: true}
	if req.Model == "" {
		return params, nil, fmt.Errorf("%w: no model", provider.ErrInvalidRequest)
	}
	if err := provider.CheckMessages(req.Messages); err != nil {
		return params, nil, err
	}
	names := toolname.ForRequest(req)
	params.Model = req.Model
	params.MaxTokens = req.MaxTokens
	if params.MaxTokens <= 0 {
		params.MaxTokens = p.maxTokens
	}
	if req.System != "" {
		params.System = []textBlock{{Type: "text", Text: req.System}}
	}
	for _, t := range req.Tools {
		schema := t.InputSchema
		if len(schema) == 0 {
			schema = json.RawMessage(`{"type":"object"}`)
		}
		if !provider.IsJSONObject(schema) {
			return params, nil, fmt.Errorf("%w: tool %q: input schema is not a JSON object", provider.ErrInvalidRequest, t.Name)
		}
		params.Tools = append(params.Tools, wireTool{Name: names.Wire(t.Name), Description: t.Description, InputSchema: schema})
	}
	for _, m := range req.Messages {
		var blocks []any
		for _, b := range m.Blocks {
			switch b.Type {
			case provider.BlockText:
				// The API refuses empty text blocks.
				if strings.TrimSpace(b.Text) != "" {
					blocks = append(blocks, textBlock{Type: "text", Text: b.Text})
				}
			case provider.BlockToolUse:
				input := b.Input
				if len(input) == 0 {
					input = json.RawMessage(`{}`)
				}
				blocks = append(blocks, toolUseBlock{Type: "tool_use", ID: b.ID, Name: names.Wire(b.Name), Input: input})
			case provider.BlockToolResult:
				tr := toolResultBlock{Type: "tool_result", ToolUseID: b.ToolUseID, IsError: b.IsError}
				if b.Content != "" {
					tr.Content = []textBlock{{Type: "text", Text: b.Content}}
				}
				blocks = append(blocks, tr)
			}
		}
		if len(blocks) == 0 {
			continue
		}
		params.Messages = append(params.Messages, wireMessage{Role: m.Role, Content: blocks})
	}
	if len(params.Messages) == 0 {
		return params, nil, fmt.Errorf("%w: no messages", provider.ErrInvalidRequest)
	}
	return params, names, nil
}

// streamEvent is one event of the stream, as much of it as Norma reads.
type streamEvent struct {
	Type    string `json:"type"`
	Index   int64  `json:"index"`
	Message struct {
		Usage usage `json:"usage"`
	} `json:"message"`
	ContentBlock struct {
		Type  string          `json:"type"`
		ID    string          `json:"id"`
		Name  string          `json:"name"`
		Text  string          `json:"text"`
		Input json.RawMessage `json:"input"`
	} `json:"content_block"`
	Delta struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		PartialJSON string `json:"partial_json"`
		StopReason  string `json:"stop_reason"`
	} `json:"delta"`
	Usage usage `json:"usage"`
}

// usage is the token count of message_start and message_delta;
// InputTokens is nil when the event did not carry it.
type usage struct {
	InputTokens              *int64 `json:"input_tokens"`
	OutputTokens             int64  `json:"output_tokens"`
	CacheCreationInputTokens int64  `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64  `json:"cache_read_input_tokens"`
}

// input is the whole prompt: fresh, written to and read from the cache.
func (u usage) input() int {
	var n int64
	if u.InputTokens != nil {
		n = *u.InputTokens
	}
	return int(n + u.CacheCreationInputTokens + u.CacheReadInputTokens)
}

// accumulator rebuilds a message from stream events.
type accumulator struct {
	blocks  []*block
	stop    string
	usage   provider.Usage
	stopped bool
}

type block struct {
	typ        string
	text       strings.Builder
	id, name   string
	startInput json.RawMessage
	input      strings.Builder
}

func (a *accumulator) add(ev streamEvent, onText func(string)) error {
	switch ev.Type {
	case "message_start":
		u := ev.Message.Usage
		a.usage.InputTokens = u.input()
		a.usage.OutputTokens = int(u.OutputTokens)
	case "content_block_start":
		if ev.Index != int64(len(a.blocks)) {
			return fmt.Errorf("content_block_start index %d, want %d", ev.Index, len(a.blocks))
		}
		cb := ev.ContentBlock
		b := &block{typ: cb.Type, id: cb.ID, name: cb.Name}
		switch cb.Type {
		case "text":
			if cb.Text != "" {
				b.text.WriteString(cb.Text)
				if onText != nil {
					onText(cb.Text)
				}
			}
		case "tool_use":
			if raw := bytes.TrimSpace(cb.Input); len(raw) > 0 && string(raw) != "null" {
				b.startInput = json.RawMessage(raw)
			}
		}
		a.blocks = append(a.blocks, b)
	case "content_block_delta":
		if ev.Index < 0 || ev.Index >= int64(len(a.blocks)) {
			return fmt.Errorf("content_block_delta for unknown block %d", ev.Index)
		}
		b := a.blocks[ev.Index]
		switch ev.Delta.Type {
		case "text_delta":
			b.text.WriteString(ev.Delta.Text)
			if onText != nil && ev.Delta.Text != "" {
				onText(ev.Delta.Text)
			}
		case "input_json_delta":
			b.input.WriteString(ev.Delta.PartialJSON)
		}
	case "message_delta":
		a.stop = ev.Delta.StopReason
		a.usage.OutputTokens = int(ev.Usage.OutputTokens)
		if ev.Usage.InputTokens != nil {
			a.usage.InputTokens = ev.Usage.input()
		}
	case "message_stop":
		a.stopped = true
	}
	return nil
}

func (a *accumulator) response(names *toolname.Map) (provider.Response, error) {
	resp := provider.Response{Usage: a.usage, StopReason: stopReason(a.stop)}
	for _, b := range a.blocks {
		switch b.typ {
		case "text":
			if s := b.text.String(); s != "" {
				resp.Blocks = append(resp.Blocks, provider.Block{Type: provider.BlockText, Text: s})
			}
		case "tool_use":
			input := json.RawMessage(b.input.String())
			if len(input) == 0 {
				input = b.startInput
			}
			if len(input) == 0 {
				input = json.RawMessage(`{}`)
			}
			if !provider.IsJSONObject(input) {
				if resp.StopReason == provider.StopMaxTokens {
					continue // cut off mid-input: never run a guessed input
				}
				return provider.Response{}, &provider.APIError{Provider: Name, Message: fmt.Sprintf("tool_use %s: input is not a JSON object", b.id)}
			}
			if b.id == "" {
				return provider.Response{}, &provider.APIError{Provider: Name, Message: "tool_use without an id"}
			}
			resp.Blocks = append(resp.Blocks, provider.Block{
				Type:  provider.BlockToolUse,
				ID:    b.id,
				Name:  names.Decode(b.name),
				Input: input,
			})
		}
	}
	if len(resp.ToolUses()) > 0 && resp.StopReason != provider.StopMaxTokens {
		resp.StopReason = provider.StopToolUse
	}
	return resp, nil
}

func stopReason(r string) string {
	switch r {
	case "end_turn":
		return provider.StopEndTurn
	case "tool_use":
		return provider.StopToolUse
	case "max_tokens", "model_context_window_exceeded":
		return provider.StopMaxTokens
	case "stop_sequence":
		return provider.StopStopSequence
	default: // refusal, pause_turn, and anything new
		return provider.StopEndTurn
	}
}

// errorBody is the API's error envelope, in an error answer's body and in
// a stream's error event.
type errorBody struct {
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

// statusError reads a non-200 answer into a redacted *provider.APIError.
func (p *Provider) statusError(resp *http.Response) *provider.APIError {
	out := &provider.APIError{
		Provider:   Name,
		StatusCode: resp.StatusCode,
		RetryAfter: provider.ParseRetryAfter(resp.Header, p.now()),
		Retryable:  provider.RetryableStatus(resp.StatusCode),
	}
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	var body errorBody
	if json.Unmarshal(raw, &body) == nil && body.Error.Type != "" {
		out.Type = body.Error.Type
		out.Message = truncate(p.key.Redact(body.Error.Message))
	} else {
		out.Message = truncate(p.key.Redact(strings.TrimSpace(string(raw))))
	}
	if out.Message == "" {
		out.Message = http.StatusText(out.StatusCode)
	}
	return out
}

// streamError reads an error event: retryable when the API is overloaded,
// rate-limits, or failed on its side.
func (p *Provider) streamError(data []byte) *provider.APIError {
	out := &provider.APIError{Provider: Name}
	var body errorBody
	if json.Unmarshal(data, &body) == nil {
		out.Type = body.Error.Type
		out.Message = truncate(p.key.Redact(body.Error.Message))
	} else {
		out.Message = truncate(p.key.Redact(string(data)))
	}
	switch out.Type {
	case "overloaded_error", "rate_limit_error", "api_error":
		out.Retryable = true
	}
	return out
}

// failure is a transport failure before or during the answer: the
// context's error when it was cancelled, else a retryable APIError whose
// message (which may quote the URL) has the key removed.
func (p *Provider) failure(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("anthropic: %w", context.Cause(ctx))
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
