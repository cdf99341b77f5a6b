package provider

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// RetryPolicy configures [WithRetry]. The zero value means the documented
// defaults.
type RetryPolicy struct {
	// Max is the number of retries after the first attempt. Zero means 3;
	// a negative value disables retries.
	Max int
	// Base is the delay before the first retry when the server gave no
	// Retry-After; it doubles on every retry. Zero means 500ms.
	Base time.Duration
	// MaxDelay caps the exponential backoff. A Retry-After longer than
	// MaxDelay is not waited out: the error is returned instead, so that a
	// run neither hangs for an hour nor disobeys the server. Zero means 60s.
	MaxDelay time.Duration
	// Sleep waits for d or until ctx is done, returning ctx's error in the
	// latter case. Nil means a timer. Tests inject a recorder.
	Sleep func(ctx context.Context, d time.Duration) error
	// Logger receives one Warn record per retry (provider, attempt,
	// status, type, delay). Nil means discard. API keys never reach it:
	// only fields of [*APIError] are logged.
	Logger *slog.Logger
}

func (p RetryPolicy) withDefaults() RetryPolicy {
	if p.Max == 0 {
		p.Max = 3
	}
	if p.Max < 0 {
		p.Max = 0
	}
	if p.Base <= 0 {
		p.Base = 500 * time.Millisecond
	}
	if p.MaxDelay <= 0 {
		p.MaxDelay = 60 * time.Second
	}
	if p.Sleep == nil {
		p.Sleep = sleepTimer
	}
	if p.Logger == nil {
		p.Logger = slog.New(slog.DiscardHandler)
	}
	return p
}

func sleepTimer(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// WithRetry returns a [Provider] that retries p's Complete when it fails with
// a retryable [*APIError] (429, 5xx, overload, transport failure), waiting
// the server's Retry-After when given and an exponential backoff otherwise.
//
// A turn that has already delivered text to onText is not retried, because
// the caller has shown that text; its error is returned as is. Context
// cancellation stops the waiting at once. Providers used under WithRetry
// should have their SDK's own retries disabled (the providers in this module
// do) so that every attempt is counted once.
func WithRetry(p Provider, policy RetryPolicy) Provider {
	return &retrying{inner: p, policy: policy.withDefaults()}
}

type retrying struct {
	inner  Provider
	policy RetryPolicy
}

func (r *retrying) Name() string { return r.inner.Name() }

func (r *retrying) Complete(ctx context.Context, req Request, onText func(string)) (Response, error) {
	for attempt := 0; ; attempt++ {
		streamed := false
		cb := onText
		if onText != nil {
			cb = func(s string) {
				streamed = true
				onText(s)
			}
		}
		resp, err := r.inner.Complete(ctx, req, cb)
		if err == nil {
			return resp, nil
		}
		apiErr, ok := errors.AsType[*APIError](err)
		if !ok || !apiErr.Retryable || streamed || ctx.Err() != nil {
			return resp, err
		}
		if attempt >= r.policy.Max {
			return resp, fmt.Errorf("after %d attempts: %w", attempt+1, err)
		}
		delay := r.backoff(attempt)
		if apiErr.RetryAfter > 0 {
			if apiErr.RetryAfter > r.policy.MaxDelay {
				return resp, fmt.Errorf("server asked to retry after %s (more than %s): %w", apiErr.RetryAfter, r.policy.MaxDelay, err)
			}
			delay = apiErr.RetryAfter
		}
		r.policy.Logger.LogAttrs(ctx, slog.LevelWarn, "provider retry",
			slog.String("provider", apiErr.Provider),
			slog.Int("attempt", attempt+1),
			slog.Int("status", apiErr.StatusCode),
			slog.String("type", apiErr.Type),
			slog.Duration("delay", delay),
		)
		if err := r.policy.Sleep(ctx, delay); err != nil {
			return Response{}, fmt.Errorf("waiting to retry: %w (last error: %w)", err, apiErr)
		}
	}
}

func (r *retrying) backoff(attempt int) time.Duration {
	d := r.policy.Base
	for range attempt {
		d *= 2
		if d >= r.policy.MaxDelay {
			return r.policy.MaxDelay
		}
	}
	return min(d, r.policy.MaxDelay)
}
