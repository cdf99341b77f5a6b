package openai

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/shared"

	"github.com/norma-run/norma/provider"
	"github.com/norma-run/norma/provider/internal/httpclient"
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

// Provider talks to a Chat Completions server. It is safe for concurrent
// use.
type Provider struct {
	chat    sdk.ChatCompletionService
	key     provider.APIKey
	opts    Options
	baseURL string
	now     func() time.Time
}

var _ provider.Provider = (*Provider)(nil)

// New returns a Provider.
func New(opts Options) (*Provider, error) {
	hc := opts.HTTPClient
	if hc == nil {
		hc = httpclient.New()
	}
	base := opts.BaseURL
	if base == "" {
		base = DefaultBaseURL
	}
	if !strings.HasPrefix(base, "http://") && !strings.HasPrefix(base, "https://") {
		return nil, fmt.Errorf("openai: base URL %q: want http:// or https://", base)
	}
	// The service is built directly rather than through sdk.NewClient,
	// which reads OPENAI_* variables from the environment.
	ro := []option.RequestOption{
		option.WithHTTPClient(hc),
		option.WithBaseURL(base),
		option.WithMaxRetries(0),
	}
	if !opts.APIKey.IsZero() {
		ro = append(ro, option.WithAPIKey(opts.APIKey.Reveal()))
	}
	p := &Provider{
		chat:    sdk.NewChatCompletionService(ro...),
		key:     opts.APIKey,
		opts:    opts,
		baseURL: base,
		now:     opts.Now,
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
	params, names, err := p.params(req)
	if err != nil {
		return provider.Response{}, err
	}
	stream := p.chat.NewStreaming(ctx, params)
	defer stream.Close()

	acc := accumulator{calls: map[int64]*call{}}
	for stream.Next() {
		acc.add(stream.Current(), onText)
	}
	if err := stream.Err(); err != nil {
		if ctx.Err() != nil {
			return provider.Response{}, fmt.Errorf("openai: %w", context.Cause(ctx))
		}
		return provider.Response{}, p.apiError(err)
	}
	if acc.finish == "" {
		return provider.Response{}, &provider.APIError{Provider: Name, Message: "stream ended without a finish_reason", Retryable: true}
	}
	return acc.response(names)
}

func (p *Provider) params(req provider.Request) (sdk.ChatCompletionNewParams, *toolname.Map, error) {
	var params sdk.ChatCompletionNewParams
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
	params.Model = shared.ChatModel(req.Model)
	if req.MaxTokens > 0 {
		if p.opts.MaxCompletionTokens {
			params.MaxCompletionTokens = sdk.Int(int64(req.MaxTokens))
		} else {
			params.MaxTokens = sdk.Int(int64(req.MaxTokens))
		}
	}
	if !p.opts.NoStreamUsage {
		params.StreamOptions.IncludeUsage = sdk.Bool(true)
	}
	for _, t := range req.Tools {
		wire := names.Wire(t.Name)
		schema := shared.FunctionParameters{"type": "object", "properties": map[string]any{}}
		if len(t.InputSchema) > 0 {
			schema = nil
			if err := json.Unmarshal(t.InputSchema, &schema); err != nil || schema == nil {
				return params, nil, fmt.Errorf("%w: tool %q: input schema is not a JSON object", provider.ErrInvalidRequest, t.Name)
			}
		}
		fd := shared.FunctionDefinitionParam{Name: wire, Parameters: schema}
		if t.Description != "" {
			fd.Description = sdk.String(t.Description)
		}
		params.Tools = append(params.Tools, sdk.ChatCompletionFunctionTool(fd))
	}
	if req.System != "" {
		params.Messages = append(params.Messages, sdk.SystemMessage(req.System))
	}
	for _, m := range req.Messages {
		var text []string
		var calls []sdk.ChatCompletionMessageToolCallUnionParam
		for _, b := range m.Blocks {
			switch b.Type {
			case provider.BlockText:
				if b.Text != "" {
					text = append(text, b.Text)
				}
			case provider.BlockToolUse:
				wire := names.Wire(b.Name)
				args := string(b.Input)
				if args == "" {
					args = "{}"
				}
				calls = append(calls, sdk.ChatCompletionMessageToolCallUnionParam{
					OfFunction: &sdk.ChatCompletionMessageFunctionToolCallParam{
						ID:       b.ID,
						Function: sdk.ChatCompletionMessageFunctionToolCallFunctionParam{Name: wire, Arguments: args},
					},
				})
			case provider.BlockToolResult:
				// Tool messages must directly follow the assistant's
				// tool_calls, before any user text.
				content := b.Content
				if b.IsError {
					content = "ERROR: " + content
				}
				params.Messages = append(params.Messages, sdk.ToolMessage(content, b.ToolUseID))
			}
		}
		joined := strings.Join(text, "\n\n")
		switch m.Role {
		case provider.RoleAssistant:
			if joined == "" && len(calls) == 0 {
				continue
			}
			am := &sdk.ChatCompletionAssistantMessageParam{ToolCalls: calls}
			if joined != "" {
				am.Content.OfString = param.NewOpt(joined)
			}
			params.Messages = append(params.Messages, sdk.ChatCompletionMessageParamUnion{OfAssistant: am})
		case provider.RoleUser:
			if joined != "" {
				params.Messages = append(params.Messages, sdk.UserMessage(joined))
			}
		}
	}
	return params, names, nil
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

func (a *accumulator) add(ch sdk.ChatCompletionChunk, onText func(string)) {
	if ch.JSON.Usage.Valid() {
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

// apiError converts an SDK or transport error into a redacted
// *provider.APIError that does not retain the request.
func (p *Provider) apiError(err error) *provider.APIError {
	out := &provider.APIError{Provider: Name}
	if e, ok := errors.AsType[*sdk.Error](err); ok {
		out.StatusCode = e.StatusCode
		if e.Response != nil {
			out.StatusCode = e.Response.StatusCode
			out.RetryAfter = provider.ParseRetryAfter(e.Response.Header, p.now())
		}
		out.Type = e.Type
		if out.Type == "" {
			out.Type = e.Code
		}
		out.Message = e.Message
		if out.Message == "" {
			var body errorBody
			if json.Unmarshal([]byte(e.RawJSON()), &body) == nil && body.Error.Message != "" {
				out.Message = body.Error.Message
			} else {
				out.Message = e.RawJSON()
			}
		}
		if out.Message == "" {
			out.Message = http.StatusText(out.StatusCode)
		}
		out.Message = truncate(p.key.Redact(out.Message))
		out.Retryable = provider.RetryableStatus(out.StatusCode)
		return out
	}
	if se, ok := errors.AsType[*ssestream.StreamError](err); ok {
		var body errorBody
		if json.Unmarshal(se.Event.Data, &body) == nil {
			out.Type = body.Error.Type
			out.Message = body.Error.Message
			if code, ok := body.Error.Code.(float64); ok {
				out.Retryable = provider.RetryableStatus(int(code))
			}
		} else {
			out.Message = se.Message
		}
		switch out.Type {
		case "server_error", "rate_limit_exceeded", "rate_limit_error", "overloaded_error", "api_error":
			out.Retryable = true
		}
		out.Message = truncate(p.key.Redact(out.Message))
		return out
	}
	// A transport failure before or during the answer.
	out.Message = truncate(p.key.Redact(err.Error()))
	out.Retryable = true
	return out
}

func truncate(s string) string {
	const max = 512
	if len(s) > max {
		return s[:max] + "…"
	}
	return s
}
