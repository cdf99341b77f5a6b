package hook_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/hook"
)

func script(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "hook.sh")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	return p
}

func pre(tool string) hook.Input {
	return hook.Input{SessionID: "s1", HookEventName: hook.PreToolUse, ToolName: tool, ToolInput: json.RawMessage(`{"path":"a"}`), ToolUseID: "toolu_1"}
}

func TestOrderMatcherAndFirstBlockWins(t *testing.T) {
	r := hook.NewRegistry(nil)
	var mu sync.Mutex
	var ran []string
	add := func(name, matcher string, out hook.Output) {
		t.Helper()
		err := r.Add(hook.Hook{Name: name, Event: hook.PreToolUse, Matcher: matcher, Handler: hook.Func(func(context.Context, hook.Input) (hook.Output, error) {
			mu.Lock()
			ran = append(ran, name)
			mu.Unlock()
			return out, nil
		})})
		if err != nil {
			t.Fatal(err)
		}
	}
	add("all", "", hook.Output{})
	add("write-only", "Write|Edit", hook.Output{})
	add("blocker", "Read", hook.Output{Decision: "block", Reason: "no"})
	add("after", "*", hook.Output{})
	o := r.Dispatch(t.Context(), pre("Read"))
	if !o.Blocked || o.Reason != capability.ReasonHookBlocked || o.Hook != "blocker" || o.Message != "no" {
		t.Errorf("outcome = %+v", o)
	}
	if !slices.Equal(ran, []string{"all", "blocker"}) {
		t.Errorf("ran = %v, want [all blocker]", ran)
	}
	ran = nil
	o = r.Dispatch(t.Context(), pre("Write"))
	if o.Denied() || !slices.Equal(ran, []string{"all", "write-only", "after"}) {
		t.Errorf("Write: outcome %+v ran %v", o, ran)
	}
	if err := r.Add(hook.Hook{Event: "Nope", Handler: hook.Func(nil)}); err == nil {
		t.Error("Add(unknown event) = nil error")
	}
	if err := r.Add(hook.Hook{Event: hook.Stop, Matcher: "(", Handler: hook.Func(nil)}); err == nil {
		t.Error("Add(bad matcher) = nil error")
	}
}

// TestFailuresDenyOnlyGatingEvents: a failing, panicking or hanging hook
// denies gating events with HOOK_FAILED and is only reported elsewhere.
func TestFailuresDenyOnlyGatingEvents(t *testing.T) {
	handlers := map[string]hook.Handler{
		"panic": hook.Func(func(context.Context, hook.Input) (hook.Output, error) { panic("x") }),
		"hang":  hook.Func(func(context.Context, hook.Input) (hook.Output, error) { select {} }),
		"error": hook.Func(func(context.Context, hook.Input) (hook.Output, error) { return hook.Output{}, errors.New("x") }),
		"bad-decision": hook.Func(func(context.Context, hook.Input) (hook.Output, error) {
			return hook.Output{Decision: "maybe"}, nil
		}),
	}
	for name, h := range handlers {
		for _, ev := range hook.Events() {
			t.Run(name+"/"+string(ev), func(t *testing.T) {
				t.Parallel()
				r := hook.NewRegistry(&hook.Options{Timeout: 50 * time.Millisecond})
				if err := r.Add(hook.Hook{Event: ev, Handler: h}); err != nil {
					t.Fatal(err)
				}
				in := pre("Read")
				in.HookEventName = ev
				o := r.Dispatch(t.Context(), in)
				if ev.Gating() {
					if !o.Failed || o.Reason != capability.ReasonHookFailed || o.Blocked {
						t.Errorf("outcome = %+v, want Failed HOOK_FAILED", o)
					}
				} else if o.Denied() || (name != "bad-decision" && len(o.Errors) != 1) {
					t.Errorf("non-gating outcome = %+v", o)
				}
			})
		}
	}
}

func TestCommandProtocol(t *testing.T) {
	t.Setenv("NORMA_TEST_SECRET", "hunter2")
	tests := []struct {
		name  string
		body  string
		check func(t *testing.T, o hook.Outcome)
	}{
		{"exit-0-empty", "exit 0", func(t *testing.T, o hook.Outcome) {
			if o.Denied() || o.Ran != 1 {
				t.Errorf("%+v", o)
			}
		}},
		{"exit-2-blocks-with-stderr", "echo 'touching prod' >&2; exit 2", func(t *testing.T, o hook.Outcome) {
			if !o.Blocked || o.Message != "touching prod" {
				t.Errorf("%+v", o)
			}
		}},
		{"exit-1-fails", "echo oops >&2; exit 1", func(t *testing.T, o hook.Outcome) {
			if !o.Failed || o.Blocked {
				t.Errorf("%+v", o)
			}
		}},
		{"json-deny", `echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"nope"}}'`, func(t *testing.T, o hook.Outcome) {
			if !o.Blocked || o.Message != "nope" {
				t.Errorf("%+v", o)
			}
		}},
		{"json-allow-is-ignored", `echo '{"hookSpecificOutput":{"permissionDecision":"allow"}}'`, func(t *testing.T, o hook.Outcome) {
			if o.Denied() || o.Ask {
				t.Errorf("%+v", o)
			}
		}},
		{"json-ask", `echo '{"hookSpecificOutput":{"permissionDecision":"ask"}}'`, func(t *testing.T, o hook.Outcome) {
			if !o.Ask {
				t.Errorf("%+v", o)
			}
		}},
		{"updated-input-from-stdin", `in=$(cat); case "$in" in *'"tool_name":"Read"'*) echo '{"hookSpecificOutput":{"updatedInput":{"path":"b"}}}';; *) exit 1;; esac`, func(t *testing.T, o hook.Outcome) {
			if o.Denied() || string(o.UpdatedInput) != `{"path":"b"}` {
				t.Errorf("%+v", o)
			}
		}},
		{"continue-false-halts", `echo '{"continue":false,"stopReason":"enough"}'`, func(t *testing.T, o hook.Outcome) {
			if !o.Halt || o.HaltReason != "enough" {
				t.Errorf("%+v", o)
			}
		}},
		{"scrubbed-environment", `env | grep -q NORMA_TEST_SECRET && exit 1; exit 0`, func(t *testing.T, o hook.Outcome) {
			if o.Denied() {
				t.Errorf("hook saw the parent's environment: %+v", o)
			}
		}},
		{"invalid-json", `echo '{"decision":'`, func(t *testing.T, o hook.Outcome) {
			if !o.Failed {
				t.Errorf("%+v", o)
			}
		}},
		{"timeout-kills-group", `sleep 30 & sleep 30`, func(t *testing.T, o hook.Outcome) {
			if !o.Failed || o.Cause != capability.ReasonTimeout {
				t.Errorf("%+v", o)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := hook.NewRegistry(&hook.Options{Timeout: 10 * time.Second})
			to := time.Duration(0)
			if strings.HasPrefix(tt.name, "timeout") {
				to = 200 * time.Millisecond
			}
			if err := r.Add(hook.Hook{Event: hook.PreToolUse, Handler: &hook.Command{Path: script(t, tt.body)}, Timeout: to}); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			tt.check(t, r.Dispatch(t.Context(), pre("Read")))
			if to > 0 && time.Since(start) > 5*time.Second {
				t.Errorf("took %v", time.Since(start))
			}
		})
	}
}

// TestTrust: a workspace hook runs only while its content is trusted.
func TestTrust(t *testing.T) {
	ts, err := hook.OpenTrustStore(filepath.Join(t.TempDir(), "trust.json"))
	if err != nil {
		t.Fatal(err)
	}
	p := script(t, "exit 0")
	r := hook.NewRegistry(nil)
	if err := r.Add(hook.Hook{Event: hook.PreToolUse, Handler: &hook.Command{Path: p, Trust: ts}}); err != nil {
		t.Fatal(err)
	}
	o := r.Dispatch(t.Context(), pre("Read"))
	if !o.Failed || o.Cause != capability.ReasonHookUntrusted {
		t.Fatalf("untrusted: %+v", o)
	}
	if _, err := ts.Trust(p); err != nil {
		t.Fatal(err)
	}
	if o := r.Dispatch(t.Context(), pre("Read")); o.Denied() {
		t.Fatalf("trusted: %+v", o)
	}
	if err := os.WriteFile(p, []byte("#!/bin/sh\nexit 0 # changed\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	if o := r.Dispatch(t.Context(), pre("Read")); !o.Failed || o.Cause != capability.ReasonHookUntrusted {
		t.Fatalf("changed: %+v", o)
	}
	if _, err := ts.Trust(p); err != nil {
		t.Fatal(err)
	}
	if err := ts.Revoke(p); err != nil {
		t.Fatal(err)
	}
	if o := r.Dispatch(t.Context(), pre("Read")); !o.Failed {
		t.Fatalf("revoked: %+v", o)
	}
}

// TestRunSessionFiresSessionEnd on every way out.
func TestRunSessionFiresSessionEnd(t *testing.T) {
	tests := []struct {
		name string
		fn   func(ctx context.Context, cancel context.CancelFunc) error
		want string
	}{
		{"normal", func(context.Context, context.CancelFunc) error { return nil }, "normal"},
		{"error", func(context.Context, context.CancelFunc) error { return errors.New("x") }, "error"},
		{"canceled", func(ctx context.Context, cancel context.CancelFunc) error { cancel(); return ctx.Err() }, "canceled"},
		{"panic", func(context.Context, context.CancelFunc) error { panic("x") }, "panic"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := hook.NewRegistry(nil)
			var got []string
			for _, ev := range []hook.Event{hook.SessionStart, hook.SessionEnd} {
				r.Add(hook.Hook{Event: ev, Handler: hook.Func(func(ctx context.Context, in hook.Input) (hook.Output, error) {
					if ctx.Err() != nil {
						return hook.Output{}, ctx.Err()
					}
					got = append(got, fmt.Sprintf("%s:%s", in.HookEventName, in.Reason))
					return hook.Output{}, nil
				})})
			}
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			func() {
				defer func() { recover() }()
				r.RunSession(ctx, hook.Input{SessionID: "s"}, func(ctx context.Context, _ []string) error { return tt.fn(ctx, cancel) })
			}()
			want := []string{"SessionStart:", "SessionEnd:" + tt.want}
			if !slices.Equal(got, want) {
				t.Errorf("hooks = %v, want %v", got, want)
			}
		})
	}
}

// TestTrustedConcurrent: trusted hooks run from many goroutines at once
// (as parallel tool calls do). Each run writes its verified copy and execs
// it while other goroutines fork: a fork that holds a copy's write
// descriptor makes exec fail with ETXTBSY, which must not fail the hook.
func TestTrustedConcurrent(t *testing.T) {
	ts, err := hook.OpenTrustStore(filepath.Join(t.TempDir(), "trust.json"))
	if err != nil {
		t.Fatal(err)
	}
	p := script(t, "exit 0")
	if _, err := ts.Trust(p); err != nil {
		t.Fatal(err)
	}
	r := hook.NewRegistry(nil)
	if err := r.Add(hook.Hook{Event: hook.PreToolUse, Handler: &hook.Command{Path: p, Trust: ts}}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var failed atomic.Int32
	for range 8 {
		wg.Go(func() {
			for range 25 {
				if o := r.Dispatch(t.Context(), pre("Read")); o.Denied() {
					failed.Add(1)
					t.Errorf("trusted hook failed: %+v", o)
				}
			}
		})
	}
	wg.Wait()
	if n := failed.Load(); n > 0 {
		t.Fatalf("%d of 200 runs failed", n)
	}
}
