package host

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/norma-run/norma/audit"
	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/provider"
)

// Reason codes of sampling.
const (
	// ReasonSamplingRefused: sampling is not allowed (the default; see
	// settings mcp.sampling.allow).
	ReasonSamplingRefused capability.Reason = "SAMPLING_REFUSED"
	// ReasonSamplingBudget: the run's sampling token budget is spent.
	ReasonSamplingBudget capability.Reason = "SAMPLING_BUDGET"
	// ReasonSamplingUnsupported: content other than text.
	ReasonSamplingUnsupported capability.Reason = "SAMPLING_UNSUPPORTED"
)

// errSamplingRefused is what a client without a sampler answers.
var errSamplingRefused = &capability.Error{Decision: capability.Decision{Mode: capability.Deny, Reason: ReasonSamplingRefused, Layer: "host"},
	Detail: "sampling is refused by this client"}

// Sampling lets plugins' servers ask the run's model for completions.
type Sampling struct {
	// Provider answers; Model is the model it is asked for.
	Provider provider.Provider
	Model    string
	// MaxTokens is the budget of the whole run (every plugin together):
	// input and output tokens of the answered requests. A request is
	// refused once it is spent, and asks for at most what is left.
	MaxTokens int
}

// sample answers a sampling/createMessage through Config.Sampling, within
// the run's budget, or refuses it. Each request is audited with its token
// counts, never a message body.
func (p *Plugin) sample(ctx context.Context, params *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
	h, cfg := p.h, p.h.cfg
	record := func(decision string, reason capability.Reason, d map[string]string) {
		cfg.Audit.Record(context.WithoutCancel(ctx), audit.Event{Type: audit.TypeSampling, RunID: cfg.RunID, Plugin: p.m.ID,
			PluginVersion: p.m.Version, Decision: decision, Reason: string(reason), Layer: "host", Detail: d})
	}
	// A refusal is a coded error: the server gets it as the request's
	// error (2025-11-25), or the call fails with it (2026-07-28, where the
	// request rides in the call's result) — and the plugin runs on.
	refuse := func(reason capability.Reason, why string) (*mcp.CreateMessageResult, error) {
		record("deny", reason, map[string]string{"why": why})
		return nil, &capability.Error{Decision: capability.Decision{Mode: capability.Deny, Reason: reason, Layer: "host"}, Detail: why}
	}
	s := cfg.Sampling
	if s == nil || s.Provider == nil {
		return refuse(ReasonSamplingRefused, "sampling is not allowed (settings: mcp.sampling.allow)")
	}
	if params == nil {
		params = &mcp.CreateMessageParams{}
	}
	req := provider.Request{Model: s.Model, System: params.SystemPrompt}
	for _, m := range params.Messages {
		t, ok := m.Content.(*mcp.TextContent)
		if !ok || (m.Role != "user" && m.Role != "assistant") {
			return refuse(ReasonSamplingUnsupported, "only text messages are sampled")
		}
		req.Messages = append(req.Messages, provider.Message{Role: provider.Role(m.Role), Blocks: []provider.Block{{Type: provider.BlockText, Text: t.Text}}})
	}
	// Reserve the request's input (at most inputBound tokens) and output
	// tokens within what is left: the input is spent as soon as the
	// provider reads it, so a request whose input alone may not fit is
	// refused before it is sent, and concurrent requests cannot together
	// pass the budget.
	in := inputBound(req)
	h.sampleMu.Lock()
	left := s.MaxTokens - h.sampled
	if left <= 0 || in >= left {
		h.sampleMu.Unlock()
		if left <= 0 {
			return refuse(ReasonSamplingBudget, fmt.Sprintf("the run's sampling budget of %d tokens is spent", s.MaxTokens))
		}
		return refuse(ReasonSamplingBudget, fmt.Sprintf("the request's input (up to %d tokens) does not fit in the %d tokens left of the run's sampling budget", in, left))
	}
	want := int(params.MaxTokens)
	if want <= 0 || want > left-in {
		want = left - in
	}
	h.sampled += in + want
	h.sampleMu.Unlock()
	req.MaxTokens = want
	resp, err := s.Provider.Complete(ctx, req, nil)
	h.sampleMu.Lock()
	h.sampled -= in + want
	if err == nil {
		h.sampled += resp.Usage.InputTokens + resp.Usage.OutputTokens
	}
	spent := h.sampled
	h.sampleMu.Unlock()
	if err != nil {
		return refuse(ReasonSamplingRefused, "the provider failed: "+truncate(cfg.Redactor.Redact(err.Error()), 256))
	}
	var b strings.Builder
	for _, blk := range resp.Blocks {
		if blk.Type == provider.BlockText {
			b.WriteString(blk.Text)
		}
	}
	record("allow", "", map[string]string{"input_tokens": fmt.Sprint(resp.Usage.InputTokens), "output_tokens": fmt.Sprint(resp.Usage.OutputTokens),
		"max_tokens": fmt.Sprint(want), "spent": fmt.Sprint(spent), "budget": fmt.Sprint(s.MaxTokens)})
	stop := "endTurn"
	if resp.StopReason == provider.StopMaxTokens {
		stop = "maxTokens"
	}
	return &mcp.CreateMessageResult{Content: &mcp.TextContent{Text: cfg.Redactor.Redact(b.String())}, Model: s.Provider.Name(), Role: "assistant", StopReason: stop}, nil
}

// inputBound bounds the input tokens of req from above: its text's bytes
// (a token of a byte-level tokenizer covers at least one byte) and a few
// tokens of framing per message.
func inputBound(req provider.Request) int {
	n := len(req.System) + 8
	for _, m := range req.Messages {
		n += 8
		for _, b := range m.Blocks {
			n += len(b.Text)
		}
	}
	return n
}
