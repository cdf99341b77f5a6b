// Command echo is the smallest Norma plugin: one read-only tool that returns
// its input. The plugin host benchmarks use it to measure cold start and
// per-call overhead without any work inside the tool, and its lifecycle
// tests use three inputs that misbehave on purpose: "!crash", "!hang" and
// "!flood" (an 8 MiB answer).
package main

import (
	"context"
	"log"
	"os"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type in struct {
	Text string `json:"text"`
}

func main() {
	s := mcp.NewServer(&mcp.Implementation{Name: "echo", Version: "1.0.0"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Return the text."}, func(_ context.Context, _ *mcp.CallToolRequest, x in) (*mcp.CallToolResult, any, error) {
		// Misbehaviours on request, for the host's lifecycle tests.
		switch x.Text {
		case "!crash":
			os.Exit(3)
		case "!hang":
			select {}
		case "!flood":
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("x", 8<<20)}}}, nil, nil
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: x.Text}}}, nil, nil
	})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Fatal(err)
	}
}
