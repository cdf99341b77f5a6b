package mcpfixture

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Blob is the bytes of the binary resource fixture://blob and of the
// image and audio blocks: not valid UTF-8, with a NUL.
var Blob = []byte{0x89, 'P', 'N', 'G', 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0xff, 0xfe, 0x01}

// BigText is the 1 MiB answer of the tool "big".
var BigText = strings.Repeat("abcdefghijklmno\n", 1<<16)

// Instructions are the server's instructions.
const Instructions = "Fixture server: every content type, progress, logging, an error."

// New returns the fixture server.
func New() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "mcpfixture", Title: "MCP fixture", Version: "1.0.0"}, &mcp.ServerOptions{
		Instructions: Instructions,
		Capabilities: &mcp.ServerCapabilities{
			Logging:   &mcp.LoggingCapabilities{},
			Tools:     &mcp.ToolCapabilities{ListChanged: true},
			Prompts:   &mcp.PromptCapabilities{ListChanged: true},
			Resources: &mcp.ResourceCapabilities{ListChanged: true},
		},
	})
	ro := true
	icon := []mcp.Icon{{Source: "data:image/png;base64,iVBORw0KGgo=", MIMEType: "image/png", Sizes: []string{"16x16"}}}
	s.AddTool(&mcp.Tool{
		Name: "everything", Title: "Every content type", Description: "Answers every content block type and structured content.",
		InputSchema:  json.RawMessage(`{"type":"object","properties":{"word":{"type":"string"}}}`),
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"word":{"type":"string"},"n":{"type":"integer"},"nested":{"type":"object"}},"required":["word","n"]}`),
		Annotations:  &mcp.ToolAnnotations{Title: "everything", ReadOnlyHint: true, OpenWorldHint: &ro},
		Icons:        icon,
		Meta:         mcp.Meta{"fixture/tool": "everything"},
	}, everything)
	s.AddTool(&mcp.Tool{Name: "progress", Description: "Reports progress and logs before it answers.",
		InputSchema: json.RawMessage(`{"type":"object"}`)}, progress)
	s.AddTool(&mcp.Tool{Name: "invalid", Description: "Answers a JSON-RPC error -32602.",
		InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid: the fixture refuses these params"}
	})
	s.AddTool(&mcp.Tool{Name: "fails", Description: "Answers a tool error result.",
		InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "the fixture failed, as asked"}}}, nil
	})
	s.AddTool(&mcp.Tool{Name: "echo", Description: "Answers its text.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}}}`)}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var in struct {
			Text string `json:"text"`
		}
		_ = json.Unmarshal(req.Params.Arguments, &in)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil
	})
	s.AddTool(&mcp.Tool{Name: "big", Description: "Answers a text of 1 MiB.",
		InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: BigText}}}, nil
	})
	s.AddPrompt(&mcp.Prompt{Name: "multi", Title: "Three messages", Description: "A conversation of three messages.",
		Arguments: []*mcp.PromptArgument{{Name: "topic", Description: "what it is about", Required: true}}}, multi)
	s.AddResource(&mcp.Resource{URI: "fixture://text", Name: "text", Title: "A text", MIMEType: "text/markdown", Description: "a text resource",
		Annotations: &mcp.Annotations{Audience: []mcp.Role{"user"}, Priority: 0.5}},
		func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.Params.URI, MIMEType: "text/markdown", Text: "# Fixture\nhello\n"}}}, nil
		})
	s.AddResource(&mcp.Resource{URI: "fixture://blob", Name: "blob", MIMEType: "application/octet-stream", Size: int64(len(Blob))},
		func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.Params.URI, MIMEType: "application/octet-stream", Blob: Blob}}}, nil
		})
	s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "fixture://item/{id}", Name: "item", MIMEType: "application/json"},
		func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.Params.URI, MIMEType: "application/json", Text: `{"item":true}`}}}, nil
		})
	return s
}

func everything(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var in struct {
		Word string `json:"word"`
	}
	_ = json.Unmarshal(req.Params.Arguments, &in)
	return &mcp.CallToolResult{
		Meta: mcp.Meta{"fixture/result": map[string]any{"kind": "everything", "n": 3}},
		Content: []mcp.Content{
			&mcp.TextContent{Text: "word: " + in.Word, Annotations: &mcp.Annotations{Audience: []mcp.Role{"assistant"}, Priority: 1}, Meta: mcp.Meta{"fixture/block": "text"}},
			&mcp.ImageContent{Data: Blob, MIMEType: "image/png"},
			&mcp.AudioContent{Data: Blob, MIMEType: "audio/wav"},
			&mcp.ResourceLink{URI: "fixture://text", Name: "text", Title: "A text", MIMEType: "text/markdown", Description: "a link"},
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "fixture://item/1", MIMEType: "application/json", Text: `{"item":1}`}},
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "fixture://blob", MIMEType: "application/octet-stream", Blob: Blob}},
		},
		StructuredContent: map[string]any{"word": in.Word, "n": 3, "nested": map[string]any{"list": []any{1, "two", true, nil}}},
	}, nil
}

func progress(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	tok := req.Params.GetProgressToken()
	for i := 1; i <= 3; i++ {
		if tok != nil {
			if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: float64(i), Total: 3,
				Message: fmt.Sprintf("step %d of 3", i)}); err != nil {
				return nil, err
			}
		}
		if i < 3 {
			if err := req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Logger: "fixture", Data: map[string]any{"step": i}}); err != nil {
				return nil, err
			}
		}
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
}

func multi(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	topic := req.Params.Arguments["topic"]
	return &mcp.GetPromptResult{
		Description: "about " + topic,
		Messages: []*mcp.PromptMessage{
			{Role: "user", Content: &mcp.TextContent{Text: "Tell me about " + topic}},
			{Role: "assistant", Content: &mcp.TextContent{Text: "What would you like to know?"}},
			{Role: "user", Content: &mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "fixture://blob", MIMEType: "application/octet-stream", Blob: Blob}}},
		},
	}, nil
}
