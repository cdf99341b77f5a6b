// Command issue-helper is the example Norma plugin: an MCP server over stdio
// with two tools, issues.summarize and issues.comment, against an issue API.
//
// It is written the way an ordinary third-party plugin is: it reads its API
// base and token from the environment and uses the default HTTP client. Under
// Norma the token is a placeholder (norma-secret:issue_api_token:…), the
// client's proxy is the egress broker (HTTPS_PROXY) and the broker's CA is in
// SSL_CERT_FILE; the broker swaps the placeholder for the real token only
// toward the declared origin. The plugin never sees the secret.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type summarizeIn struct {
	Owner string `json:"owner" jsonschema:"the repository owner, e.g. acme"`
}

type commentIn struct {
	Owner  string `json:"owner" jsonschema:"the repository owner"`
	Number int    `json:"number" jsonschema:"the issue number"`
	Body   string `json:"body" jsonschema:"the comment text"`
}

type issue struct {
	Number int    `json:"number"`
	Title  string `json:"title"`
	State  string `json:"state"`
}

var (
	base   = strings.TrimRight(envOr("ISSUE_API_BASE", "https://api.example.invalid"), "/")
	token  = os.Getenv("ISSUE_API_TOKEN")
	client = &http.Client{Timeout: 30 * time.Second}
)

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func main() {
	log.SetFlags(0)
	log.SetPrefix("issue-helper: ")
	s := mcp.NewServer(&mcp.Implementation{Name: "issue-helper", Version: "1.4.0"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "issues.summarize", Description: "Summarize the open issues of a repository owner."}, summarize)
	mcp.AddTool(s, &mcp.Tool{Name: "issues.comment", Description: "Post a comment on an issue."}, comment)
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Fatal(err)
	}
}

func do(ctx context.Context, method, url string, body []byte, idem string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if idem != "" {
		req.Header.Set("Idempotency-Key", idem)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("%s %s: %s: %s", method, url, resp.Status, strings.TrimSpace(string(b)))
	}
	return b, nil
}

func summarize(ctx context.Context, _ *mcp.CallToolRequest, in summarizeIn) (*mcp.CallToolResult, any, error) {
	b, err := do(ctx, "GET", base+"/repos/"+in.Owner+"/issues", nil, "")
	if err != nil {
		return nil, nil, err
	}
	var issues []issue
	if err := json.Unmarshal(b, &issues); err != nil {
		return nil, nil, fmt.Errorf("decode issues: %w", err)
	}
	var sb strings.Builder
	open := 0
	for _, i := range issues {
		if i.State == "open" {
			open++
			fmt.Fprintf(&sb, "\n#%d %s", i.Number, i.Title)
		}
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("%d open issues for %s:%s", open, in.Owner, sb.String())}}}, nil, nil
}

func comment(ctx context.Context, req *mcp.CallToolRequest, in commentIn) (*mcp.CallToolResult, any, error) {
	// The host passes the approval's idempotency key as request metadata so
	// that a retry after a crash never posts twice.
	idem, _ := req.Params.Meta["norma/idempotency_key"].(string)
	body, _ := json.Marshal(map[string]string{"body": in.Body})
	b, err := do(ctx, "POST", fmt.Sprintf("%s/repos/%s/issues/%d/comments", base, in.Owner, in.Number), body, idem)
	if err != nil {
		return nil, nil, err
	}
	var created struct {
		ID int `json:"id"`
	}
	_ = json.Unmarshal(b, &created)
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("comment %d posted on %s#%d", created.ID, in.Owner, in.Number)}}}, nil, nil
}
