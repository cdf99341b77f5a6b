package host

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/norma-run/norma/audit"
	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/provider"
	"github.com/norma-run/norma/provider/scripted"
)

// auditOf returns the audited events of type typ.
func auditOf(t *testing.T, e *env, typ string) []audit.Event {
	t.Helper()
	recs, err := e.audit.Query(context.Background(), audit.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	var out []audit.Event
	for _, r := range recs {
		if r.Event.Type == typ {
			out = append(out, r.Event)
		}
	}
	return out
}

// TestEverythingElicitation: server-everything's trigger-elicitation-request
// asks the person. Headless (no Elicit) it is declined, audited as
// ELICITATION_HEADLESS; with a person, the request shows the server, the
// message and the fields, and the accepted values reach the server (and
// are not audited).
func TestEverythingElicitation(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	p := loadEverything(ctx, t, e, nil)
	res, err := p.call(ctx, "trigger-elicitation-request", json.RawMessage(`{}`), "")
	if err != nil || !strings.Contains(res.Content, "User declined") {
		t.Fatalf("headless elicitation = %+v, %v", res, err)
	}
	ev := auditOf(t, e, audit.TypeElicitation)
	if len(ev) != 1 || ev[0].Reason != string(ReasonElicitationHeadless) || ev[0].Detail["action"] != "decline" || ev[0].Plugin != "local.everything" {
		t.Fatalf("audit: %+v", ev)
	}

	var asked []Elicitation
	var mu sync.Mutex
	e.host.cfg.Elicit = func(_ context.Context, q Elicitation) (ElicitAnswer, error) {
		mu.Lock()
		asked = append(asked, q)
		mu.Unlock()
		return ElicitAnswer{Action: "accept", Content: map[string]any{"name": "Ada Lovelace-7q", "check": true}}, nil
	}
	res, err = p.call(ctx, "trigger-elicitation-request", json.RawMessage(`{}`), "")
	if err != nil || !strings.Contains(res.Content, "- Name: Ada Lovelace-7q") {
		t.Fatalf("accepted elicitation = %+v, %v", res, err)
	}
	if len(asked) != 1 || asked[0].Server != "everything" || !strings.Contains(asked[0].Message, "Please provide inputs") {
		t.Fatalf("asked %+v", asked)
	}
	i := slices.IndexFunc(asked[0].Fields, func(f ElicitField) bool { return f.Name == "name" })
	if i < 0 || !asked[0].Fields[i].Required || asked[0].Fields[i].Type != "string" {
		t.Fatalf("fields %+v", asked[0].Fields)
	}
	for _, ev := range auditOf(t, e, audit.TypeElicitation) {
		b, _ := json.Marshal(ev)
		if strings.Contains(string(b), "Ada Lovelace-7q") {
			t.Fatalf("an answer's value was audited: %s", b)
		}
	}
	e.host.cfg.Elicit = func(context.Context, Elicitation) (ElicitAnswer, error) { return ElicitAnswer{Action: "cancel"}, nil }
	if res, err = p.call(ctx, "trigger-elicitation-request", json.RawMessage(`{}`), ""); err != nil || !strings.Contains(res.Content, "cancel") {
		t.Fatalf("cancelled elicitation = %+v, %v", res, err)
	}
}

// TestEverythingSampling: server-everything's trigger-sampling-request is
// refused by default (the server gets an error; audited); with Sampling,
// the provider answers within the run's budget, and a request once the
// budget is spent is refused without reaching the provider. No message
// body is audited.
func TestEverythingSampling(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	p := loadEverything(ctx, t, e, nil)
	in := json.RawMessage(`{"prompt":"secret-prompt-body-3k","maxTokens":40}`)
	res, err := p.call(ctx, "trigger-sampling-request", in, "")
	if err != nil || !res.IsError || strings.Contains(res.Content, "LLM sampling result") {
		t.Fatalf("default sampling = %+v, %v", res, err)
	}
	if ev := auditOf(t, e, audit.TypeSampling); len(ev) != 1 || ev[0].Reason != string(ReasonSamplingRefused) || ev[0].Decision != "deny" {
		t.Fatalf("audit: %+v", ev)
	}

	script, err := scripted.Parse("s.yaml", []byte("turns:\n  - text: sampled-answer-9z\n  - text: never\n"))
	if err != nil {
		t.Fatal(err)
	}
	prov := &countingProvider{Provider: scripted.New(script)}
	e.host.cfg.Sampling = &Sampling{Provider: prov, Model: "m", MaxTokens: 200}
	res, err = p.call(ctx, "trigger-sampling-request", in, "")
	if err != nil || res.IsError || !strings.Contains(res.Content, "sampled-answer-9z") {
		t.Fatalf("allowed sampling = %+v, %v", res, err)
	}
	if prov.maxTokens[0] != 40 {
		t.Errorf("asked the provider for %d tokens, want 40", prov.maxTokens[0])
	}
	// The scripted provider counts no usage: the reservation was the
	// input's bound and 40 of 200; exhaust the budget by hand, as more
	// calls would.
	e.host.sampleMu.Lock()
	e.host.sampled = 200
	e.host.sampleMu.Unlock()
	res, err = p.call(ctx, "trigger-sampling-request", in, "")
	if err != nil || !res.IsError {
		t.Fatalf("over budget = %+v, %v", res, err)
	}
	if len(prov.maxTokens) != 1 {
		t.Fatalf("the provider was asked %d times, want 1", len(prov.maxTokens))
	}
	ev := auditOf(t, e, audit.TypeSampling)
	if len(ev) != 3 || ev[1].Decision != "allow" || ev[2].Reason != string(ReasonSamplingBudget) {
		t.Fatalf("audit: %+v", ev)
	}
	for _, x := range ev {
		b, _ := json.Marshal(x)
		if strings.Contains(string(b), "secret-prompt-body-3k") || strings.Contains(string(b), "sampled-answer-9z") {
			t.Fatalf("a message body was audited: %s", b)
		}
	}
}

type countingProvider struct {
	provider.Provider
	mu        sync.Mutex
	maxTokens []int
}

func (c *countingProvider) Complete(ctx context.Context, req provider.Request, onText func(string)) (provider.Response, error) {
	c.mu.Lock()
	c.maxTokens = append(c.maxTokens, req.MaxTokens)
	c.mu.Unlock()
	return c.Provider.Complete(ctx, req, onText)
}

// TestEverythingNotices: progress notifications and logging messages are
// audited and passed to Notify (for the person), never into the result.
func TestEverythingNotices(t *testing.T) {
	e := newEnv(t)
	var mu sync.Mutex
	var got []Notice
	e.host.cfg.Notify = func(n Notice) { mu.Lock(); got = append(got, n); mu.Unlock() }
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	p := loadEverything(ctx, t, e, nil)
	res, err := p.call(ctx, "trigger-long-running-operation", json.RawMessage(`{"duration":1,"steps":3}`), "")
	if err != nil || res.IsError || !strings.Contains(res.Content, "completed") {
		t.Fatalf("long running = %+v, %v", res, err)
	}
	if _, err := p.call(ctx, "toggle-simulated-logging", json.RawMessage(`{}`), ""); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a logging message", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return slices.ContainsFunc(got, func(n Notice) bool { return n.Kind == NoticeLog })
	})
	mu.Lock()
	progress := 0
	for _, n := range got {
		if n.Kind == NoticeProgress && n.Server == "everything" {
			progress++
		}
	}
	mu.Unlock()
	if progress != 3 {
		t.Errorf("%d progress notices, want 3: %+v", progress, got)
	}
	if strings.Contains(res.Content, "progress") {
		t.Errorf("progress reached the result: %q", res.Content)
	}
	ev := auditOf(t, e, audit.TypePluginNotice)
	if !slices.ContainsFunc(ev, func(x audit.Event) bool {
		return x.Detail["kind"] == NoticeLog && strings.Contains(x.Detail["text"], "message")
	}) {
		t.Errorf("no logging message audited: %+v", ev)
	}
}

// TestInputRequestsStateless: on the 2026-07-28 protocol a server asks for
// elicitation and sampling inside a tool result (input requests, answered
// by the client's retry); the same handlers answer: headless, the
// elicitation is declined and the sampling refused, both audited; with a
// person and a sampler, they are answered.
func TestInputRequestsStateless(t *testing.T) {
	e := newEnv(t)
	installEcho(t, e)
	ctx := t.Context()
	p, err := e.host.Load(ctx, "com.example.echo")
	if err != nil {
		t.Fatal(err)
	}
	out, err := echoTool(ctx, p, "echo", "!elicit")
	if err != nil || !strings.Contains(out, `"action":"decline"`) {
		t.Fatalf("headless elicit = %q, %v", out, err)
	}
	if v := p.ProtocolVersion(); v != "2026-07-28" {
		t.Fatalf("negotiated %q", v)
	}
	pid := p.proc.Pid()
	out, err = echoTool(ctx, p, "echo", "!sample")
	// The request rides in the call's result: refusing it fails the call
	// (the model is told why), and the plugin runs on.
	if capability.ReasonOf(err) != ReasonSamplingRefused || out != "" {
		t.Fatalf("refused sampling = %q, %v", out, err)
	}
	p.mu.Lock()
	running := p.proc != nil && p.proc.Pid() == pid
	p.mu.Unlock()
	if !running {
		t.Fatal("a refused sampling request restarted the plugin")
	}
	if ev := auditOf(t, e, audit.TypeElicitation); len(ev) != 1 || ev[0].Reason != string(ReasonElicitationHeadless) {
		t.Fatalf("elicitation audit: %+v", ev)
	}
	if ev := auditOf(t, e, audit.TypeSampling); len(ev) != 1 || ev[0].Reason != string(ReasonSamplingRefused) {
		t.Fatalf("sampling audit: %+v", ev)
	}
	e.host.cfg.Elicit = func(context.Context, Elicitation) (ElicitAnswer, error) {
		return ElicitAnswer{Action: "accept", Content: map[string]any{"name": "Grace"}}, nil
	}
	script, _ := scripted.Parse("s.yaml", []byte("turns: [{text: x}]\nsampling: [hi from the sampler]\n"))
	e.host.cfg.Sampling = &Sampling{Provider: scripted.New(script).Sampler(), MaxTokens: 100}
	if out, err = echoTool(ctx, p, "echo", "!elicit"); err != nil || !strings.Contains(out, `"name":"Grace"`) {
		t.Fatalf("accepted elicit = %q, %v", out, err)
	}
	if out, err = echoTool(ctx, p, "echo", "!sample"); err != nil || !strings.Contains(out, "hi from the sampler") {
		t.Fatalf("allowed sampling = %q, %v", out, err)
	}
}
