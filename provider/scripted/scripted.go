package scripted

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"

	"github.com/norma-run/norma/provider"
)

// Name is the [provider.Provider.Name] of this provider.
const Name = "scripted"

// MaxScriptSize bounds the size of a script file.
const MaxScriptSize = 4 << 20

// ErrUnpaired is wrapped by errors from [Provider.Complete] when the request
// does not answer every tool_use of the previous turn exactly once.
var ErrUnpaired = errors.New("scripted: tool_use without a paired tool_result")

// Script is a parsed script. Build it with [Parse] or [Load].
type Script struct {
	Turns []Turn `json:"turns"`
	// Sampling are the answers, in order, to the sampling requests of
	// plugins' MCP servers (see [Provider.Sampler]): a separate list, since
	// a sampling request is not a turn of the conversation.
	Sampling []string `json:"sampling,omitempty"`
}

// Turn is one model turn.
type Turn struct {
	Text      string     `json:"text,omitempty"`
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
}

// ToolCall is one tool_use of a turn. Input is a JSON object.
type ToolCall struct {
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

// ParseError is a script error at a position.
type ParseError struct {
	File      string // may be empty
	Line, Col int    // 1-based; 0 when unknown
	Msg       string
}

// Error formats as FILE:LINE:COL: message.
func (e *ParseError) Error() string {
	file := e.File
	if file == "" {
		file = "script"
	}
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d:%d: %s", file, e.Line, e.Col, e.Msg)
	}
	return fmt.Sprintf("%s: %s", file, e.Msg)
}

// Marshal returns the script as JSON, which is also valid YAML: Parse of
// the result yields an equal script.
func (s *Script) Marshal() ([]byte, error) { return json.Marshal(s) }

type fileYAML struct {
	Turns    []turnYAML `yaml:"turns"`
	Sampling []string   `yaml:"sampling"`
}

type turnYAML struct {
	Text      string     `yaml:"text"`
	ToolCalls []callYAML `yaml:"tool_calls"`
}

type callYAML struct {
	ID    string `yaml:"id"`
	Name  string `yaml:"name"`
	Input any    `yaml:"input"`
}

// Load reads and parses the script at path.
func Load(path string) (*Script, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("scripted: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxScriptSize+1))
	if err != nil {
		return nil, fmt.Errorf("scripted: %w", err)
	}
	return Parse(path, data)
}

// Parse parses a script; filename is used in error messages only. Errors
// are of type [*ParseError].
func Parse(filename string, data []byte) (*Script, error) {
	perr := func(n ast.Node, format string, args ...any) error {
		e := &ParseError{File: filename, Msg: fmt.Sprintf(format, args...)}
		if n != nil && n.GetToken() != nil {
			e.Line, e.Col = n.GetToken().Position.Line, n.GetToken().Position.Column
		}
		return e
	}
	if len(data) > MaxScriptSize {
		return nil, perr(nil, "script larger than %d bytes", MaxScriptSize)
	}
	file, err := parser.ParseBytes(data, 0)
	if err != nil {
		return nil, yamlError(filename, err)
	}
	var docs []ast.Node
	for _, d := range file.Docs {
		if d != nil && d.Body != nil {
			docs = append(docs, d.Body)
		}
	}
	if len(docs) != 1 {
		return nil, perr(nil, "want exactly one YAML document with a turns list, found %d", len(docs))
	}
	// Scripts need no tags, and the decoder mishandles some of them.
	if tag := findTag(docs[0]); tag != nil {
		return nil, perr(tag, "YAML tags are not allowed in a script")
	}
	var raw fileYAML
	if err := decode(docs[0], &raw); err != nil {
		return nil, yamlError(filename, err)
	}
	at := func(path string) ast.Node {
		p, err := yaml.PathString(path)
		if err != nil {
			return nil
		}
		n, _ := p.FilterNode(docs[0])
		return n
	}
	if len(raw.Turns) == 0 {
		return nil, perr(docs[0], "script has no turns")
	}
	s := &Script{Sampling: raw.Sampling}
	seen := map[string]string{}
	for i, t := range raw.Turns {
		tp := fmt.Sprintf("$.turns[%d]", i)
		if t.Text == "" && len(t.ToolCalls) == 0 {
			return nil, perr(at(tp), "turn %d has neither text nor tool_calls", i+1)
		}
		turn := Turn{Text: t.Text}
		for j, c := range t.ToolCalls {
			cp := fmt.Sprintf("%s.tool_calls[%d]", tp, j)
			if c.ID == "" {
				return nil, perr(at(cp), "turn %d tool call %d: id is required", i+1, j+1)
			}
			if c.Name == "" {
				return nil, perr(at(cp), "turn %d tool call %s: name is required", i+1, c.ID)
			}
			if prev, dup := seen[c.ID]; dup {
				return nil, perr(at(cp+".id"), "tool call id %q already used in %s", c.ID, prev)
			}
			seen[c.ID] = fmt.Sprintf("turn %d", i+1)
			input, err := toJSONObject(c.Input)
			if err != nil {
				return nil, perr(at(cp+".input"), "turn %d tool call %s: input %v", i+1, c.ID, err)
			}
			turn.ToolCalls = append(turn.ToolCalls, ToolCall{ID: c.ID, Name: c.Name, Input: input})
		}
		s.Turns = append(s.Turns, turn)
	}
	return s, nil
}

// decode runs the strict decoder and turns a panic inside the YAML library
// into an error, so that no script can crash the process.
func decode(n ast.Node, v any) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("malformed YAML (decoder failure: %v)", r)
		}
	}()
	return yaml.NodeToValue(n, v, yaml.Strict())
}

type tagFinder struct{ found ast.Node }

func (f *tagFinder) Visit(n ast.Node) ast.Visitor {
	if f.found != nil {
		return nil
	}
	if _, ok := n.(*ast.TagNode); ok {
		f.found = n
		return nil
	}
	return f
}

func findTag(n ast.Node) ast.Node {
	var f tagFinder
	ast.Walk(&f, n)
	return f.found
}

func yamlError(filename string, err error) error {
	e := &ParseError{File: filename, Msg: err.Error()}
	if ye, ok := errors.AsType[yaml.Error](err); ok {
		e.Msg = ye.GetMessage()
		if tk := ye.GetToken(); tk != nil && tk.Position != nil {
			e.Line, e.Col = tk.Position.Line, tk.Position.Column
		}
	}
	return e
}

// toJSONObject converts a decoded YAML value into a JSON object. A missing
// input is the empty object.
func toJSONObject(v any) (json.RawMessage, error) {
	if v == nil {
		return json.RawMessage(`{}`), nil
	}
	norm, err := normalize(v, 0)
	if err != nil {
		return nil, err
	}
	if _, ok := norm.(map[string]any); !ok {
		return nil, fmt.Errorf("must be a mapping, got %T", v)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(norm); err != nil {
		return nil, fmt.Errorf("is not representable as JSON: %v", err)
	}
	return json.RawMessage(bytes.TrimSpace(buf.Bytes())), nil
}

// normalize turns YAML maps with non-string keys into JSON-shaped maps and
// bounds the nesting depth.
func normalize(v any, depth int) (any, error) {
	if depth > 64 {
		return nil, errors.New("is nested too deeply")
	}
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			n, err := normalize(e, depth+1)
			if err != nil {
				return nil, err
			}
			out[k] = n
		}
		return out, nil
	case map[any]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			ks := fmt.Sprint(k)
			if _, dup := out[ks]; dup {
				return nil, fmt.Errorf("has duplicate key %q", ks)
			}
			n, err := normalize(e, depth+1)
			if err != nil {
				return nil, err
			}
			out[ks] = n
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			n, err := normalize(e, depth+1)
			if err != nil {
				return nil, err
			}
			out[i] = n
		}
		return out, nil
	default:
		return v, nil
	}
}

// Provider replays a [Script].
type Provider struct {
	mu     sync.Mutex
	script *Script
	next   int
}

var _ provider.Provider = (*Provider)(nil)

// New returns a Provider positioned at the first turn of s. A nil s is a
// script with no turns.
func New(s *Script) *Provider {
	if s == nil {
		s = &Script{}
	}
	return &Provider{script: s}
}

// Name returns "scripted".
func (p *Provider) Name() string { return Name }

// Sampler returns the provider that answers sampling requests from the
// script's sampling list, one answer per request in order, with usage
// counted as one token per byte; past the end of the list it fails.
func (p *Provider) Sampler() provider.Provider { return &sampler{p: p} }

type sampler struct {
	p    *Provider
	next int
}

func (s *sampler) Name() string { return Name }

func (s *sampler) Complete(ctx context.Context, req provider.Request, onText func(string)) (provider.Response, error) {
	if err := provider.CheckMessages(req.Messages); err != nil {
		return provider.Response{}, err
	}
	s.p.mu.Lock()
	defer s.p.mu.Unlock()
	if s.next >= len(s.p.script.Sampling) {
		return provider.Response{}, errors.New("scripted: no sampling answer left in the script")
	}
	text := s.p.script.Sampling[s.next]
	s.next++
	in := 0
	for _, m := range req.Messages {
		for _, b := range m.Blocks {
			in += len(b.Text)
		}
	}
	if onText != nil {
		onText(text)
	}
	return provider.Response{Blocks: []provider.Block{{Type: provider.BlockText, Text: text}}, StopReason: provider.StopEndTurn,
		Usage: provider.Usage{InputTokens: in + len(req.System), OutputTokens: len(text)}}, nil
}

// Complete returns the next scripted turn after checking that req answers
// the previous turn's tool calls. Errors wrap [ErrUnpaired] or
// [provider.ErrInvalidRequest].
func (p *Provider) Complete(ctx context.Context, req provider.Request, onText func(string)) (provider.Response, error) {
	if err := ctx.Err(); err != nil {
		return provider.Response{}, fmt.Errorf("scripted: %w", context.Cause(ctx))
	}
	if err := provider.CheckMessages(req.Messages); err != nil {
		return provider.Response{}, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.next > 0 && p.next <= len(p.script.Turns) {
		if prev := p.script.Turns[p.next-1]; len(prev.ToolCalls) > 0 {
			if err := checkPairing(req.Messages, prev, p.next); err != nil {
				return provider.Response{}, err
			}
		}
	}
	if p.next >= len(p.script.Turns) {
		if p.next == len(p.script.Turns) {
			p.next++ // the pairing of the last turn has been checked
		}
		return provider.Response{StopReason: provider.StopEndTurn}, nil
	}
	t := p.script.Turns[p.next]
	p.next++
	resp := provider.Response{StopReason: provider.StopEndTurn}
	if t.Text != "" {
		resp.Blocks = append(resp.Blocks, provider.Block{Type: provider.BlockText, Text: t.Text})
		if onText != nil {
			onText(t.Text)
		}
	}
	for _, c := range t.ToolCalls {
		resp.Blocks = append(resp.Blocks, provider.Block{Type: provider.BlockToolUse, ID: c.ID, Name: c.Name, Input: append(json.RawMessage(nil), c.Input...)})
		resp.StopReason = provider.StopToolUse
	}
	return resp, nil
}

func checkPairing(msgs []provider.Message, prev Turn, turn int) error {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%w: after turn %d: %s", ErrUnpaired, turn, fmt.Sprintf(format, args...))
	}
	if len(msgs) < 2 {
		return fail("the request does not carry the assistant turn and its tool results")
	}
	last, asst := msgs[len(msgs)-1], msgs[len(msgs)-2]
	if last.Role != provider.RoleUser || asst.Role != provider.RoleAssistant {
		return fail("the last two messages are %s, %s; want assistant, user", asst.Role, last.Role)
	}
	echoed := map[string]bool{}
	for _, b := range asst.Blocks {
		if b.Type == provider.BlockToolUse {
			echoed[b.ID] = true
		}
	}
	want := map[string]bool{}
	for _, c := range prev.ToolCalls {
		want[c.ID] = true
		if !echoed[c.ID] {
			return fail("the assistant message does not carry tool_use %s", c.ID)
		}
	}
	got := map[string]int{}
	for _, b := range last.Blocks {
		if b.Type != provider.BlockToolResult {
			continue
		}
		if !want[b.ToolUseID] {
			return fail("tool_result for unknown tool_use %q", b.ToolUseID)
		}
		got[b.ToolUseID]++
	}
	for _, c := range prev.ToolCalls {
		switch got[c.ID] {
		case 0:
			return fail("tool_use %s (%s) has no tool_result", c.ID, c.Name)
		case 1:
		default:
			return fail("tool_use %s has %d tool_results", c.ID, got[c.ID])
		}
	}
	return nil
}
