package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// Role is the author of a [Message].
type Role string

// The roles a [Message] may have. The system prompt is not a message: it is
// [Request.System].
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
)

// Block types.
const (
	BlockText       = "text"
	BlockToolUse    = "tool_use"
	BlockToolResult = "tool_result"
)

// Stop reasons of a [Response]. Providers map their own vocabulary onto these
// four; see each provider's documentation for the mapping.
const (
	StopEndTurn      = "end_turn"
	StopToolUse      = "tool_use"
	StopMaxTokens    = "max_tokens"
	StopStopSequence = "stop_sequence"
)

// Block is one piece of a [Message].
//
//   - Type "text": Text.
//   - Type "tool_use" (assistant only): ID, Name, Input (a JSON object).
//   - Type "tool_result" (user only): ToolUseID, Content, IsError.
type Block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   string          `json:"content,omitempty"`
	IsError   bool            `json:"is_error,omitempty"`
}

// Message is one conversation entry.
type Message struct {
	Role   Role    `json:"role"`
	Blocks []Block `json:"blocks"`
}

// ToolSpec declares a tool to the model. InputSchema is a JSON Schema object;
// nil means an object with no declared properties.
type ToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema,omitempty"`
}

// Request is the input of one model turn.
type Request struct {
	Model     string     `json:"model"`
	System    string     `json:"system,omitempty"`
	Messages  []Message  `json:"messages"`
	Tools     []ToolSpec `json:"tools,omitempty"`
	MaxTokens int        `json:"max_tokens,omitempty"`
}

// Usage counts the tokens of one turn. InputTokens is the whole prompt,
// including tokens served from or written to a prompt cache.
type Usage struct {
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
}

// Response is the result of one model turn.
type Response struct {
	Blocks     []Block `json:"blocks"`
	StopReason string  `json:"stop_reason"`
	Usage      Usage   `json:"usage"`
}

// ToolUses returns the tool_use blocks of r in order.
func (r Response) ToolUses() []Block {
	var out []Block
	for _, b := range r.Blocks {
		if b.Type == BlockToolUse {
			out = append(out, b)
		}
	}
	return out
}

// StreamEvent is one streaming notification: a text delta and/or the end of
// the turn. [Provider.Complete] delivers text deltas through its onText
// callback; StreamEvent is the value form for callers that forward deltas
// over a channel.
type StreamEvent struct {
	TextDelta string
	Done      bool
}

// Provider runs model turns. Implementations are safe for concurrent use
// unless their documentation says otherwise.
type Provider interface {
	// Name identifies the provider ("anthropic", "openai", "scripted").
	Name() string
	// Complete runs one model turn; onText (may be nil) receives text
	// deltas as they stream, in order, from the calling goroutine.
	// Errors from the remote API are of type [*APIError].
	Complete(ctx context.Context, req Request, onText func(string)) (Response, error)
}

// ErrInvalidRequest is returned (wrapped) when a [Request] cannot be
// expressed to the model: an unknown block type, a block in the wrong role,
// a tool_use without an id, or input that is not a JSON object.
var ErrInvalidRequest = errors.New("provider: invalid request")

// CheckMessages verifies the shape of msgs: roles are user or assistant,
// block types are known, tool_use blocks appear only in assistant messages
// and carry an id, a name and a JSON object input (or none), tool_result
// blocks appear only in user messages and name a tool_use id. Errors wrap
// [ErrInvalidRequest].
func CheckMessages(msgs []Message) error {
	for i, m := range msgs {
		if m.Role != RoleUser && m.Role != RoleAssistant {
			return fmt.Errorf("%w: message %d: unknown role %q", ErrInvalidRequest, i, m.Role)
		}
		for j, b := range m.Blocks {
			where := fmt.Sprintf("message %d block %d", i, j)
			switch b.Type {
			case BlockText:
			case BlockToolUse:
				if m.Role != RoleAssistant {
					return fmt.Errorf("%w: %s: tool_use in a %s message", ErrInvalidRequest, where, m.Role)
				}
				if b.ID == "" || b.Name == "" {
					return fmt.Errorf("%w: %s: tool_use needs an id and a name", ErrInvalidRequest, where)
				}
				if len(b.Input) > 0 && !IsJSONObject(b.Input) {
					return fmt.Errorf("%w: %s: tool_use %s input is not a JSON object", ErrInvalidRequest, where, b.ID)
				}
			case BlockToolResult:
				if m.Role != RoleUser {
					return fmt.Errorf("%w: %s: tool_result in a %s message", ErrInvalidRequest, where, m.Role)
				}
				if b.ToolUseID == "" {
					return fmt.Errorf("%w: %s: tool_result needs a tool_use_id", ErrInvalidRequest, where)
				}
			default:
				return fmt.Errorf("%w: %s: unknown block type %q", ErrInvalidRequest, where, b.Type)
			}
		}
	}
	return nil
}

// IsJSONObject reports whether raw is a single valid JSON object.
func IsJSONObject(raw []byte) bool {
	var v map[string]json.RawMessage
	return json.Unmarshal(raw, &v) == nil && v != nil
}
