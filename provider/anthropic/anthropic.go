package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
	"github.com/anthropics/anthropic-sdk-go/packages/param"

	"github.com/norma-run/norma/provider"
	"github.com/norma-run/norma/provider/internal/httpclient"
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

// Provider talks to the Messages API. It is safe for concurrent use.
type Provider struct {
	client    sdk.Client
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
	hc := opts.HTTPClient
	if hc == nil {
		hc = httpclient.New()
	}
	ro := []option.RequestOption{
		option.WithoutEnvironmentDefaults(),
		option.WithAPIKey(opts.APIKey.Reveal()),
		option.WithHTTPClient(hc),
		option.WithMaxRetries(0),
	}
	if opts.BaseURL != "" {
		ro = append(ro, option.WithBaseURL(opts.BaseURL))
	}
	p := &Provider{
		client:    sdk.NewClient(ro...),
		key:       opts.APIKey,
		maxTokens: opts.MaxTokens,
		now:       opts.Now,
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
	params, names, err := p.params(req)
	if err != nil {
		return provider.Response{}, err
	}
	stream := p.client.Messages.NewStreaming(ctx, params)
	defer stream.Close()

	var acc accumulator
	for stream.Next() {
		if err := acc.add(stream.Current(), onText); err != nil {
			return provider.Response{}, &provider.APIError{Provider: Name, Message: p.key.Redact("malformed stream: " + err.Error())}
		}
	}
	if err := stream.Err(); err != nil {
		if ctx.Err() != nil {
			return provider.Response{}, fmt.Errorf("anthropic: %w", context.Cause(ctx))
		}
		return provider.Response{}, p.apiError(err)
	}
	if !acc.stopped {
		return provider.Response{}, &provider.APIError{Provider: Name, Message: "stream ended before message_stop", Retryable: true}
	}
	return acc.response(names)
}

// params converts a provider-neutral request into SDK parameters.
func (p *Provider) params(req provider.Request) (sdk.MessageNewParams, *toolname.Map, error) {
	var params sdk.MessageNewParams
	if req.Model == "" {
		return params, nil, fmt.Errorf("%w: no model", provider.ErrInvalidRequest)
	}
	if err := provider.CheckMessages(req.Messages); err != nil {
		return params, nil, err
	}
	names := toolname.ForRequest(req)
	params.Model = sdk.Model(req.Model)
	params.MaxTokens = int64(req.MaxTokens)
	if params.MaxTokens <= 0 {
		params.MaxTokens = int64(p.maxTokens)
	}
	if req.System != "" {
		params.System = []sdk.TextBlockParam{{Text: req.System}}
	}
	for _, t := range req.Tools {
		wire := names.Wire(t.Name)
		schema := t.InputSchema
		if len(schema) == 0 {
			schema = json.RawMessage(`{"type":"object"}`)
		}
		if !provider.IsJSONObject(schema) {
			return params, nil, fmt.Errorf("%w: tool %q: input schema is not a JSON object", provider.ErrInvalidRequest, t.Name)
		}
		tp := &sdk.ToolParam{
			Name:        wire,
			InputSchema: param.Override[sdk.ToolInputSchemaParam](schema),
		}
		if t.Description != "" {
			tp.Description = sdk.String(t.Description)
		}
		params.Tools = append(params.Tools, sdk.ToolUnionParam{OfTool: tp})
	}
	for _, m := range req.Messages {
		var blocks []sdk.ContentBlockParamUnion
		for _, b := range m.Blocks {
			switch b.Type {
			case provider.BlockText:
				// The API refuses empty text blocks.
				if strings.TrimSpace(b.Text) != "" {
					blocks = append(blocks, sdk.NewTextBlock(b.Text))
				}
			case provider.BlockToolUse:
				wire := names.Wire(b.Name)
				input := b.Input
				if len(input) == 0 {
					input = json.RawMessage(`{}`)
				}
				blocks = append(blocks, sdk.NewToolUseBlock(b.ID, input, wire))
			case provider.BlockToolResult:
				tr := &sdk.ToolResultBlockParam{ToolUseID: b.ToolUseID, IsError: sdk.Bool(b.IsError)}
				if b.Content != "" {
					tr.Content = []sdk.ToolResultBlockParamContentUnion{{OfText: &sdk.TextBlockParam{Text: b.Content}}}
				}
				blocks = append(blocks, sdk.ContentBlockParamUnion{OfToolResult: tr})
			}
		}
		if len(blocks) == 0 {
			continue
		}
		if m.Role == provider.RoleAssistant {
			params.Messages = append(params.Messages, sdk.NewAssistantMessage(blocks...))
		} else {
			params.Messages = append(params.Messages, sdk.NewUserMessage(blocks...))
		}
	}
	if len(params.Messages) == 0 {
		return params, nil, fmt.Errorf("%w: no messages", provider.ErrInvalidRequest)
	}
	return params, names, nil
}

// accumulator rebuilds a message from stream events.
type accumulator struct {
	blocks  []*block
	stop    sdk.StopReason
	usage   provider.Usage
	started bool
	stopped bool
}

type block struct {
	typ        string
	text       strings.Builder
	id, name   string
	startInput json.RawMessage
	input      strings.Builder
}

func (a *accumulator) add(ev sdk.MessageStreamEventUnion, onText func(string)) error {
	switch ev.Type {
	case "message_start":
		a.started = true
		u := ev.Message.Usage
		a.usage.InputTokens = int(u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens)
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
			if raw := cb.JSON.Input.Raw(); raw != "" && raw != "null" {
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
		if ev.Usage.JSON.InputTokens.Valid() {
			u := ev.Usage
			a.usage.InputTokens = int(u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens)
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

func stopReason(r sdk.StopReason) string {
	switch r {
	case sdk.StopReasonEndTurn:
		return provider.StopEndTurn
	case sdk.StopReasonToolUse:
		return provider.StopToolUse
	case sdk.StopReasonMaxTokens, sdk.StopReasonModelContextWindowExceeded:
		return provider.StopMaxTokens
	case sdk.StopReasonStopSequence:
		return provider.StopStopSequence
	default:
		return provider.StopEndTurn
	}
}

// errorBody is the API's error envelope.
type errorBody struct {
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

const streamErrPrefix = "received error while streaming: "

// apiError converts an SDK or transport error into a redacted
// *provider.APIError that does not retain the request.
func (p *Provider) apiError(err error) *provider.APIError {
	out := &provider.APIError{Provider: Name}
	if e, ok := errors.AsType[*sdk.Error](err); ok {
		if e.Response != nil && e.Response.StatusCode != http.StatusOK {
			out.StatusCode = e.Response.StatusCode
			out.RetryAfter = provider.ParseRetryAfter(e.Response.Header, p.now())
		}
		var body errorBody
		if json.Unmarshal([]byte(e.RawJSON()), &body) == nil && body.Error.Type != "" {
			out.Type = body.Error.Type
			out.Message = p.key.Redact(body.Error.Message)
		} else {
			out.Type = string(e.Type())
			out.Message = truncate(p.key.Redact(e.RawJSON()))
		}
		if out.Message == "" && out.StatusCode != 0 {
			out.Message = http.StatusText(out.StatusCode)
		}
	} else if msg := err.Error(); strings.HasPrefix(msg, streamErrPrefix) {
		var body errorBody
		if json.Unmarshal([]byte(strings.TrimPrefix(msg, streamErrPrefix)), &body) == nil {
			out.Type = body.Error.Type
			out.Message = p.key.Redact(body.Error.Message)
		} else {
			out.Message = truncate(p.key.Redact(msg))
		}
	} else {
		// A transport failure before any answer.
		out.Message = truncate(p.key.Redact(err.Error()))
		out.Retryable = true
		return out
	}
	if out.StatusCode != 0 {
		out.Retryable = provider.RetryableStatus(out.StatusCode)
	} else {
		switch out.Type {
		case "overloaded_error", "rate_limit_error", "api_error":
			out.Retryable = true
		}
	}
	return out
}

func truncate(s string) string {
	const max = 512
	if len(s) > max {
		return s[:max] + "…"
	}
	return s
}
