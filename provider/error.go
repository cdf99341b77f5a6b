package provider

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// APIError is a failed call to a model API. Its fields are safe to log and to
// show: Message has had the API key removed, and the error does not retain
// the HTTP request (whose headers carry the key).
type APIError struct {
	// Provider is the [Provider.Name] of the provider that failed.
	Provider string
	// StatusCode is the HTTP status, or 0 when the failure came without a
	// status (a transport error, or an error event inside a stream).
	StatusCode int
	// Type is the API's error type when it sent one, such as
	// "rate_limit_error", "overloaded_error" or "insufficient_quota".
	Type string
	// Message is a redacted description of the failure.
	Message string
	// RetryAfter is how long the server asked the client to wait
	// (Retry-After or retry-after-ms); 0 when it did not say.
	RetryAfter time.Duration
	// Retryable reports whether trying again may succeed: 408, 409, 429
	// and 5xx answers, overloaded or rate-limit events inside a stream,
	// and transport errors before any answer.
	Retryable bool
}

// Error implements error.
func (e *APIError) Error() string {
	var b strings.Builder
	b.WriteString("provider ")
	b.WriteString(e.Provider)
	b.WriteString(":")
	if e.StatusCode != 0 {
		fmt.Fprintf(&b, " HTTP %d", e.StatusCode)
	}
	if e.Type != "" {
		b.WriteString(" ")
		b.WriteString(e.Type)
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	return b.String()
}

// RetryableStatus reports whether an HTTP status is worth retrying: 408,
// 409, 429 and every 5xx (including Anthropic's 529 "overloaded").
func RetryableStatus(code int) bool {
	return code == http.StatusRequestTimeout || code == http.StatusConflict ||
		code == http.StatusTooManyRequests || code >= 500
}

// ParseRetryAfter reads how long a response asks the client to wait, from
// "retry-after-ms" (milliseconds) or "Retry-After" (delay-seconds or an
// HTTP-date relative to now). It returns 0 when neither header is usable.
func ParseRetryAfter(h http.Header, now time.Time) time.Duration {
	if h == nil {
		return 0
	}
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 && ms < 1e9 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s <= 0 || s > 1e6 {
			return 0
		}
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}
