package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name   string
		header map[string]string
		want   time.Duration
	}{
		{name: "seconds", header: map[string]string{"Retry-After": "1"}, want: time.Second},
		{name: "fractional seconds", header: map[string]string{"Retry-After": "0.5"}, want: 500 * time.Millisecond},
		{name: "milliseconds win", header: map[string]string{"Retry-After": "7", "Retry-After-Ms": "250"}, want: 250 * time.Millisecond},
		{name: "http date", header: map[string]string{"Retry-After": now.Add(3 * time.Second).Format(http.TimeFormat)}, want: 3 * time.Second},
		{name: "date in the past", header: map[string]string{"Retry-After": now.Add(-time.Hour).Format(http.TimeFormat)}, want: 0},
		{name: "negative", header: map[string]string{"Retry-After": "-4"}, want: 0},
		{name: "garbage", header: map[string]string{"Retry-After": "soon"}, want: 0},
		{name: "absent", want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tt.header {
				h.Set(k, v)
			}
			if got := ParseRetryAfter(h, now); got != tt.want {
				t.Errorf("ParseRetryAfter(%v) = %v, want %v", tt.header, got, tt.want)
			}
		})
	}
}

// flaky fails with the given errors, then succeeds.
type flaky struct {
	errs  []error
	calls int
	text  string
}

func (f *flaky) Name() string { return "flaky" }

func (f *flaky) Complete(_ context.Context, _ Request, onText func(string)) (Response, error) {
	f.calls++
	if f.text != "" && onText != nil {
		onText(f.text)
	}
	if len(f.errs) > 0 {
		err := f.errs[0]
		f.errs = f.errs[1:]
		return Response{}, err
	}
	return Response{StopReason: StopEndTurn}, nil
}

func TestWithRetry(t *testing.T) {
	rl := &APIError{Provider: "flaky", StatusCode: 429, Retryable: true}
	rlAfter := &APIError{Provider: "flaky", StatusCode: 429, Retryable: true, RetryAfter: 250 * time.Millisecond}
	fatal := &APIError{Provider: "flaky", StatusCode: 400}
	tests := []struct {
		name      string
		errs      []error
		text      string
		max       int
		wantErr   error
		wantCalls int
		wantSleep []time.Duration
	}{
		{name: "success first time", wantCalls: 1},
		{name: "backoff doubles and caps", errs: []error{rl, rl, rl, rl}, max: 5, wantCalls: 5,
			wantSleep: []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 300 * time.Millisecond, 300 * time.Millisecond}},
		{name: "retry-after wins over backoff", errs: []error{rlAfter}, wantCalls: 2, wantSleep: []time.Duration{250 * time.Millisecond}},
		{name: "non-retryable", errs: []error{fatal}, wantErr: fatal, wantCalls: 1},
		{name: "plain error", errs: []error{errors.New("boom")}, wantCalls: 1, wantErr: errors.New("boom")},
		{name: "exhausted", errs: []error{rl, rl, rl}, max: 2, wantErr: rl, wantCalls: 3,
			wantSleep: []time.Duration{100 * time.Millisecond, 200 * time.Millisecond}},
		{name: "disabled", errs: []error{rl}, max: -1, wantErr: rl, wantCalls: 1},
		{name: "text already streamed", errs: []error{rl}, text: "partial", wantErr: rl, wantCalls: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &flaky{errs: tt.errs, text: tt.text}
			var slept []time.Duration
			p := WithRetry(f, RetryPolicy{Max: tt.max, Base: 100 * time.Millisecond, MaxDelay: 300 * time.Millisecond,
				Sleep: func(_ context.Context, d time.Duration) error { slept = append(slept, d); return nil }})
			_, err := p.Complete(t.Context(), Request{}, func(string) {})
			if (err == nil) != (tt.wantErr == nil) {
				t.Fatalf("Complete err = %v, want %v", err, tt.wantErr)
			}
			if ae, ok := tt.wantErr.(*APIError); ok && !errors.Is(err, ae) {
				t.Errorf("Complete err = %v, want it to wrap %v", err, ae)
			}
			if f.calls != tt.wantCalls {
				t.Errorf("calls = %d, want %d", f.calls, tt.wantCalls)
			}
			if fmt.Sprint(slept) != fmt.Sprint(tt.wantSleep) {
				t.Errorf("slept %v, want %v", slept, tt.wantSleep)
			}
		})
	}
}

func TestWithRetryCancel(t *testing.T) {
	f := &flaky{errs: []error{&APIError{StatusCode: 503, Retryable: true}}}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	p := WithRetry(f, RetryPolicy{Base: time.Hour, MaxDelay: 2 * time.Hour})
	start := time.Now()
	_, err := p.Complete(ctx, Request{}, nil)
	if err == nil || time.Since(start) > 5*time.Second {
		t.Errorf("Complete(cancelled) = %v after %v, want a prompt error", err, time.Since(start))
	}
	if f.calls != 1 {
		t.Errorf("calls = %d, want 1", f.calls)
	}
}

func TestAPIKeyRedacts(t *testing.T) {
	const canary = "sk-CANARY-0123456789"
	k := NewAPIKey(canary)
	type opts struct {
		Key  APIKey
		Base string
	}
	o := opts{Key: k, Base: "http://x"}
	var sb strings.Builder
	fmt.Fprintf(&sb, "%v %+v %#v %s %q %x %v %+v %#v", k, k, k, k, k, k, o, o, o)
	j, _ := json.Marshal(o)
	sb.Write(j)
	slog.New(slog.NewTextHandler(&sb, nil)).Info("x", "key", k, "opts", o)
	slog.New(slog.NewJSONHandler(&sb, nil)).Info("x", "key", k, "opts", o)
	if strings.Contains(sb.String(), canary) {
		t.Errorf("key leaked: %s", sb.String())
	}
	if k.Reveal() != canary {
		t.Errorf("Reveal() = %q", k.Reveal())
	}
	if got := k.Redact("bad key " + canary + "!"); got != "bad key [REDACTED]!" {
		t.Errorf("Redact = %q", got)
	}
}

func TestCheckMessages(t *testing.T) {
	ok := []Message{
		{Role: RoleUser, Blocks: []Block{{Type: BlockText, Text: "hi"}}},
		{Role: RoleAssistant, Blocks: []Block{{Type: BlockToolUse, ID: "a", Name: "Read", Input: json.RawMessage(`{}`)}}},
		{Role: RoleUser, Blocks: []Block{{Type: BlockToolResult, ToolUseID: "a", Content: "x"}}},
	}
	if err := CheckMessages(ok); err != nil {
		t.Errorf("CheckMessages(valid) = %v", err)
	}
	bad := [][]Message{
		{{Role: "system"}},
		{{Role: RoleUser, Blocks: []Block{{Type: BlockToolUse, ID: "a", Name: "R"}}}},
		{{Role: RoleAssistant, Blocks: []Block{{Type: BlockToolUse, Name: "R"}}}},
		{{Role: RoleAssistant, Blocks: []Block{{Type: BlockToolUse, ID: "a", Name: "R", Input: json.RawMessage(`null`)}}}},
		{{Role: RoleAssistant, Blocks: []Block{{Type: BlockToolResult, ToolUseID: "a"}}}},
		{{Role: RoleUser, Blocks: []Block{{Type: BlockToolResult}}}},
		{{Role: RoleUser, Blocks: []Block{{Type: "image"}}}},
	}
	for i, m := range bad {
		if err := CheckMessages(m); !errors.Is(err, ErrInvalidRequest) {
			t.Errorf("CheckMessages(bad[%d]) = %v, want ErrInvalidRequest", i, err)
		}
	}
}
