package scripted

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/norma-run/norma/provider"
)

func TestLoadDemo(t *testing.T) {
	s, err := Load(filepath.Join("testdata", "demo.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	want := &Script{Turns: []Turn{
		{Text: "Reading the intro and commenting.", ToolCalls: []ToolCall{
			{ID: "t1", Name: "Read", Input: json.RawMessage(`{"path":"docs/intro.md"}`)},
			{ID: "t2", Name: "mcp__com.example.issue-helper__issues.comment", Input: json.RawMessage(`{"body":"…","number":42,"repo":"acme/demo"}`)},
		}},
		{Text: "Done."},
	}}
	if !reflect.DeepEqual(s, want) {
		t.Errorf("Load(demo.yaml) =\n%+v\nwant\n%+v", s, want)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string // substring, including line:col where known
	}{
		{name: "unknown top-level field", in: "turns:\n  - text: hi\nmodel: x\n", want: "x.yaml:3:1:"},
		{name: "unknown turn field", in: "turns:\n  - text: hi\n    stop: end\n", want: "x.yaml:3:5:"},
		{name: "unknown tool call field", in: "turns:\n  - tool_calls:\n      - {id: a, name: R, inptu: {}}\n", want: "x.yaml:3:"},
		{name: "duplicate key", in: "turns:\n  - text: a\n    text: b\n", want: "x.yaml:3:"},
		{name: "empty turn", in: "turns:\n  - {}\n", want: "neither text nor tool_calls"},
		{name: "missing id", in: "turns:\n  - tool_calls:\n      - {name: R}\n", want: "x.yaml:3:9: turn 1 tool call 1: id is required"},
		{name: "missing name", in: "turns:\n  - tool_calls:\n      - {id: a}\n", want: "name is required"},
		{name: "duplicate id across turns", in: "turns:\n  - tool_calls: [{id: a, name: R}]\n  - tool_calls: [{id: a, name: R}]\n", want: "x.yaml:3:"},
		{name: "input not a mapping", in: "turns:\n  - tool_calls: [{id: a, name: R, input: [1, 2]}]\n", want: "must be a mapping"},
		{name: "no turns", in: "turns: []\n", want: "no turns"},
		{name: "empty file", in: "", want: "exactly one YAML document"},
		{name: "two documents", in: "turns: [{text: a}]\n---\nturns: [{text: b}]\n", want: "exactly one YAML document"},
		{name: "syntax error", in: "turns: [\n", want: "x.yaml:"},
		{name: "wrong type", in: "turns: {text: a}\n", want: "x.yaml:1:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("x.yaml", []byte(tt.in))
			if err == nil {
				t.Fatalf("Parse(%q) succeeded, want error containing %q", tt.in, tt.want)
			}
			if _, ok := errors.AsType[*ParseError](err); !ok {
				t.Errorf("Parse(%q) error type %T, want *ParseError", tt.in, err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Parse(%q) = %q, want it to contain %q", tt.in, err, tt.want)
			}
		})
	}
}

func user(text string) provider.Message {
	return provider.Message{Role: provider.RoleUser, Blocks: []provider.Block{{Type: provider.BlockText, Text: text}}}
}

func results(ids ...string) provider.Message {
	m := provider.Message{Role: provider.RoleUser}
	for _, id := range ids {
		m.Blocks = append(m.Blocks, provider.Block{Type: provider.BlockToolResult, ToolUseID: id, Content: "ok"})
	}
	return m
}

// TestReplayAndPairing drives the demo script like a session loop does and
// checks each way a loop can fail to pair tool results.
func TestReplayAndPairing(t *testing.T) {
	s, err := Load(filepath.Join("testdata", "demo.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	p := New(s)
	ctx := t.Context()
	msgs := []provider.Message{user("go")}
	var deltas []string
	r1, err := p.Complete(ctx, provider.Request{Messages: msgs}, func(d string) { deltas = append(deltas, d) })
	if err != nil {
		t.Fatal(err)
	}
	if r1.StopReason != provider.StopToolUse || len(r1.ToolUses()) != 2 || r1.Blocks[0].Text != "Reading the intro and commenting." {
		t.Fatalf("turn 1 = %+v", r1)
	}
	if !reflect.DeepEqual(deltas, []string{"Reading the intro and commenting."}) {
		t.Errorf("deltas = %q", deltas)
	}
	msgs = append(msgs, provider.Message{Role: provider.RoleAssistant, Blocks: r1.Blocks})

	bad := []struct {
		name string
		msgs []provider.Message
	}{
		{name: "no results", msgs: msgs},
		{name: "one result missing", msgs: append(append([]provider.Message(nil), msgs...), results("t1"))},
		{name: "duplicate result", msgs: append(append([]provider.Message(nil), msgs...), results("t1", "t2", "t2"))},
		{name: "unknown result", msgs: append(append([]provider.Message(nil), msgs...), results("t1", "t2", "t9"))},
		{name: "assistant turn not echoed", msgs: []provider.Message{user("go"), {Role: provider.RoleAssistant, Blocks: []provider.Block{{Type: "text", Text: "x"}}}, results("t1", "t2")}},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			_, err := p.Complete(ctx, provider.Request{Messages: tt.msgs}, nil)
			if !errors.Is(err, ErrUnpaired) {
				t.Errorf("Complete(%s) = %v, want ErrUnpaired", tt.name, err)
			}
		})
	}

	msgs = append(msgs, results("t2", "t1")) // order does not matter
	r2, err := p.Complete(ctx, provider.Request{Messages: msgs}, nil)
	if err != nil {
		t.Fatalf("turn 2: %v", err)
	}
	if want := (provider.Response{Blocks: []provider.Block{{Type: "text", Text: "Done."}}, StopReason: provider.StopEndTurn}); !reflect.DeepEqual(r2, want) {
		t.Errorf("turn 2 = %+v, want %+v", r2, want)
	}
	msgs = append(msgs, provider.Message{Role: provider.RoleAssistant, Blocks: r2.Blocks}, user("more?"))
	for range 2 {
		r3, err := p.Complete(ctx, provider.Request{Messages: msgs}, nil)
		if err != nil || r3.StopReason != provider.StopEndTurn || len(r3.Blocks) != 0 {
			t.Errorf("after the script = %+v, %v; want end_turn with no blocks", r3, err)
		}
	}
}

// TestLastTurnPairing: when the script ends on tool calls, the call after it
// still checks their pairing.
func TestLastTurnPairing(t *testing.T) {
	s, err := Parse("x.yaml", []byte("turns:\n  - tool_calls: [{id: a, name: R}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	p := New(s)
	r, err := p.Complete(t.Context(), provider.Request{Messages: []provider.Message{user("go")}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	msgs := []provider.Message{user("go"), {Role: provider.RoleAssistant, Blocks: r.Blocks}}
	if _, err := p.Complete(t.Context(), provider.Request{Messages: msgs}, nil); !errors.Is(err, ErrUnpaired) {
		t.Errorf("Complete without results = %v, want ErrUnpaired", err)
	}
	if r, err := p.Complete(t.Context(), provider.Request{Messages: append(msgs, results("a"))}, nil); err != nil || r.StopReason != provider.StopEndTurn {
		t.Errorf("Complete with results = %+v, %v", r, err)
	}
}

func TestRoundTrip(t *testing.T) {
	s, err := Load(filepath.Join("testdata", "demo.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	checkRoundTrip(t, s)
}

func checkRoundTrip(t *testing.T, s *Script) {
	t.Helper()
	data, err := s.Marshal()
	if err != nil {
		t.Fatalf("Marshal: %v", err)
	}
	s2, err := Parse("roundtrip.json", data)
	if err != nil {
		t.Fatalf("Parse(Marshal(s)) = %v\n%s", err, data)
	}
	if !reflect.DeepEqual(s, s2) {
		t.Fatalf("Parse(Marshal(s)) =\n%+v\nwant\n%+v", s2, s)
	}
}

// TestSampler: the sampling list answers sampling requests in order, apart
// from the conversation's turns (whose pairing check it does not touch),
// and fails past its end.
func TestSampler(t *testing.T) {
	s, err := Parse("s.yaml", []byte("turns:\n  - tool_calls: [{id: a, name: R}]\n  - text: done\nsampling: [first, second]\n"))
	if err != nil {
		t.Fatal(err)
	}
	p := New(s)
	ctx := context.Background()
	if _, err := p.Complete(ctx, provider.Request{Messages: []provider.Message{{Role: provider.RoleUser, Blocks: []provider.Block{{Type: provider.BlockText, Text: "go"}}}}}, nil); err != nil {
		t.Fatal(err)
	}
	smp := p.Sampler()
	req := provider.Request{System: "sys", Messages: []provider.Message{{Role: provider.RoleUser, Blocks: []provider.Block{{Type: provider.BlockText, Text: "hello"}}}}}
	for _, want := range []string{"first", "second"} {
		r, err := smp.Complete(ctx, req, nil)
		if err != nil || len(r.Blocks) != 1 || r.Blocks[0].Text != want || r.Usage.InputTokens != 8 || r.Usage.OutputTokens != len(want) {
			t.Fatalf("sample = %+v, %v; want %q", r, err, want)
		}
	}
	if _, err := smp.Complete(ctx, req, nil); err == nil {
		t.Fatal("a third sample was answered")
	}
}
