// Command echo is the smallest Norma plugin: one read-only tool that returns
// its input. The plugin host benchmarks use it to measure cold start and
// per-call overhead without any work inside the tool, and its lifecycle
// tests use inputs that misbehave on purpose: "!crash" (the text after it
// is written to stderr, then the process exits), "!hang", "!hangtree:MARK"
// (starts a child process whose arguments carry MARK, then hangs) and
// "!flood" (an 8 MiB answer).
package main

import (
	"context"
	"log"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type in struct {
	Text string `json:"text"`
}

// sleeper is the first argument of the child of "!hangtree".
const sleeper = "echo-sleeper"

func main() {
	if len(os.Args) > 1 && os.Args[1] == sleeper {
		for {
			time.Sleep(time.Hour) // (select {} alone would be a deadlock)
		}
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "echo", Version: "1.0.0"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Return the text."}, func(_ context.Context, _ *mcp.CallToolRequest, x in) (*mcp.CallToolResult, any, error) {
		// Misbehaviours on request, for the host's lifecycle tests.
		switch {
		case strings.HasPrefix(x.Text, "!crash"):
			os.Stderr.WriteString(strings.TrimPrefix(x.Text, "!crash"))
			os.Exit(3)
		case x.Text == "!hang":
			select {}
		case strings.HasPrefix(x.Text, "!hangtree:"):
			self, err := os.Executable()
			if err == nil {
				err = exec.Command(self, sleeper, strings.TrimPrefix(x.Text, "!hangtree:")).Start()
			}
			if err != nil {
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "cannot start the child: " + err.Error()}}}, nil, nil
			}
			select {}
		case x.Text == "!flood":
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("x", 8<<20)}}}, nil, nil
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: x.Text}}}, nil, nil
	})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Fatal(err)
	}
}
