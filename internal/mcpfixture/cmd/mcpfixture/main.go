// Command mcpfixture serves the fixture MCP server (package mcpfixture)
// over stdio: a test double for the door tests.
package main

import (
	"context"
	"log"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/norma-run/norma/internal/mcpfixture"
)

func main() {
	if err := mcpfixture.New().Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Fatal(err)
	}
}
