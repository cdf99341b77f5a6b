package mcpproxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/gate"
	"github.com/norma-run/norma/plugin/host"
	"github.com/norma-run/norma/provider"
)

// Door is the runtime's session as the proxy uses it: the one way to a
// plugin (agent.Session satisfies it).
type Door interface {
	// Execute runs one call through the gate.
	Execute(ctx context.Context, tool string, input json.RawMessage) gate.Result
	// ToolSpecs lists the tools the principal may call now.
	ToolSpecs() []provider.ToolSpec
}

// Options configures [New].
type Options struct {
	// Door is the session every request goes through. Required.
	Door Door
	// Server is the plugin's server name: its tools are mcp__Server__TOOL
	// at the gate. Required.
	Server string
	// Version is the version the proxy advertises (Norma's).
	Version string
	// Approvals is the door's approval service, through which a client
	// that supports elicitation answers; nil asks no client.
	Approvals Approvals
}

// MetaReason is the _meta key of a tool result that holds the gate's
// reason code.
const MetaReason = "norma/reason"

// Proxy is one proxied server.
type Proxy struct {
	o   Options
	srv *mcp.Server

	mu      sync.Mutex
	session *mcp.ServerSession // the client's, once it sent a request
	asked   map[string]string  // approval id → the call (callKey) it was asked for
}

// New builds the proxy's MCP server: the tools the door lists for the
// server, and the resources and prompts when the door has the feature
// tools.
func New(o Options) (*Proxy, error) {
	if o.Door == nil || o.Server == "" {
		return nil, errors.New("proxy: a door and a server name are required")
	}
	p := &Proxy{o: o, asked: map[string]string{}}
	prefix := host.ToolName(o.Server, "")
	caps := &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}}
	var tools []provider.ToolSpec
	for _, s := range o.Door.ToolSpecs() {
		switch {
		case strings.HasPrefix(s.Name, prefix) && len(s.Name) > len(prefix):
			tools = append(tools, s)
		case s.Name == host.ListResourcesTool:
			caps.Resources = &mcp.ResourceCapabilities{}
		case s.Name == host.ListPromptsTool:
			caps.Prompts = &mcp.PromptCapabilities{}
		}
	}
	p.srv = mcp.NewServer(&mcp.Implementation{Name: "norma-proxy/" + o.Server, Version: o.Version}, &mcp.ServerOptions{Capabilities: caps})
	for _, s := range tools {
		name := strings.TrimPrefix(s.Name, prefix)
		schema := s.InputSchema
		if len(schema) == 0 {
			schema = json.RawMessage(`{"type":"object"}`)
		}
		p.srv.AddTool(&mcp.Tool{Name: name, Description: s.Description, InputSchema: schema}, p.callTool(s.Name))
	}
	p.srv.AddReceivingMiddleware(p.features)
	return p, nil
}

// Server returns the MCP server, for [mcp.Server.Run].
func (p *Proxy) Server() *mcp.Server { return p.srv }

// Run serves one client over t until it disconnects.
func (p *Proxy) Run(ctx context.Context, t mcp.Transport) error { return p.srv.Run(ctx, t) }

// sessionKey carries the client's session to the [Approver], on the
// context of the request that needs approval.
type sessionKey struct{}

// callTool is the handler of the tool the gate knows as full.
func (p *Proxy) callTool(full string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		in := req.Params.Arguments
		if len(in) == 0 || string(in) == "null" {
			in = json.RawMessage(`{}`)
		}
		ctx = context.WithValue(ctx, sessionKey{}, req.Session)
		if refusal, ok := p.answered(ctx, req.Session, req.Params, full, in); refusal != nil {
			return toolResult(*refusal), nil
		} else if ok {
			// Approved: the repeated call redeems the approval.
			return toolResult(p.o.Door.Execute(ctx, full, in)), nil
		}
		r := p.o.Door.Execute(ctx, full, in)
		if r.Reason == capability.ReasonApprovalPending && r.ApprovalID != "" && p.o.Approvals != nil && canElicit(req.Session) {
			if res, ok := p.askClient(ctx, r.ApprovalID, full, in); ok {
				return res, nil
			}
		}
		return toolResult(r), nil
	}
}

// toolResult is a gate result as MCP: a refusal's text names its code.
func toolResult(r gate.Result) *mcp.CallToolResult {
	text := r.Content
	if r.IsError && r.Reason != capability.ReasonToolError {
		text = Refusal(r)
	}
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, IsError: r.IsError}
	res.Meta = mcp.Meta{MetaReason: string(r.Reason)}
	if r.ApprovalID != "" {
		res.Meta["norma/approval"] = r.ApprovalID
	}
	return res
}

// Refusal is the text of a refused call: "norma: REASON: why".
func Refusal(r gate.Result) string {
	return fmt.Sprintf("norma: %s: %s", r.Reason, strings.TrimSpace(r.Content))
}

// features answers resources/list, resources/read, prompts/list and
// prompts/get through the feature tools; everything else goes on to the
// server. It also records the client's session.
func (p *Proxy) features(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if ss, ok := req.GetSession().(*mcp.ServerSession); ok {
			p.mu.Lock()
			p.session = ss
			p.mu.Unlock()
			ctx = context.WithValue(ctx, sessionKey{}, ss)
		}
		switch r := req.(type) {
		case *mcp.ListResourcesRequest:
			return p.listResources(ctx)
		case *mcp.ListResourceTemplatesRequest:
			return p.listTemplates(ctx)
		case *mcp.ReadResourceRequest:
			return p.readResource(ctx, r.Params.URI)
		case *mcp.ListPromptsRequest:
			return p.listPrompts(ctx)
		case *mcp.GetPromptRequest:
			return p.getPrompt(ctx, r.Params.Name, r.Params.Arguments)
		}
		return next(ctx, method, req)
	}
}

// feature calls a feature tool for this server; a refusal or a failure
// is an error that carries the reason code.
func (p *Proxy) feature(ctx context.Context, tool string, in map[string]any) (string, error) {
	in["server"] = p.o.Server
	b, err := json.Marshal(in)
	if err != nil {
		return "", err
	}
	r := p.o.Door.Execute(ctx, tool, b)
	if r.IsError {
		return "", errors.New(Refusal(r))
	}
	return r.Content, nil
}

// resourceEntry is one entry of ListMcpResources (host's resourceEntry).
type resourceEntry struct {
	Server      string `json:"server"`
	URI         string `json:"uri"`
	URITemplate string `json:"uriTemplate"`
	Name        string `json:"name"`
	MIMEType    string `json:"mimeType"`
	Description string `json:"description"`
}

// resources lists this server's resources and templates.
func (p *Proxy) resources(ctx context.Context) ([]resourceEntry, error) {
	text, err := p.feature(ctx, host.ListResourcesTool, map[string]any{})
	if err != nil {
		return nil, err
	}
	var all []resourceEntry
	if err := json.Unmarshal([]byte(text), &all); err != nil {
		return nil, fmt.Errorf("norma: %s: the resource list was cut or is not JSON", capability.ReasonToolError)
	}
	out := all[:0]
	for _, e := range all {
		if e.Server == p.o.Server {
			out = append(out, e)
		}
	}
	return out, nil
}

func (p *Proxy) listResources(ctx context.Context) (mcp.Result, error) {
	es, err := p.resources(ctx)
	if err != nil {
		return nil, err
	}
	res := &mcp.ListResourcesResult{Resources: []*mcp.Resource{}}
	for _, e := range es {
		if e.URI != "" {
			res.Resources = append(res.Resources, &mcp.Resource{URI: e.URI, Name: e.Name, MIMEType: e.MIMEType, Description: e.Description})
		}
	}
	return res, nil
}

func (p *Proxy) listTemplates(ctx context.Context) (mcp.Result, error) {
	es, err := p.resources(ctx)
	if err != nil {
		return nil, err
	}
	res := &mcp.ListResourceTemplatesResult{ResourceTemplates: []*mcp.ResourceTemplate{}}
	for _, e := range es {
		if e.URITemplate != "" {
			res.ResourceTemplates = append(res.ResourceTemplates, &mcp.ResourceTemplate{URITemplate: e.URITemplate, Name: e.Name,
				MIMEType: e.MIMEType, Description: e.Description})
		}
	}
	return res, nil
}

// readResource returns the text ReadMcpResource gives: bounded, a binary
// resource reported by type and size, as the model gets it in a run.
func (p *Proxy) readResource(ctx context.Context, uri string) (mcp.Result, error) {
	text, err := p.feature(ctx, host.ReadResourceTool, map[string]any{"uri": uri})
	if err != nil {
		return nil, err
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "text/plain", Text: text}}}, nil
}

// promptEntry is one entry of ListMcpPrompts (host's promptEntry).
type promptEntry struct {
	Server      string `json:"server"`
	Name        string `json:"name"`
	Description string `json:"description"`
	Arguments   []struct {
		Name        string `json:"name"`
		Description string `json:"description"`
		Required    bool   `json:"required"`
	} `json:"arguments"`
}

func (p *Proxy) listPrompts(ctx context.Context) (mcp.Result, error) {
	text, err := p.feature(ctx, host.ListPromptsTool, map[string]any{})
	if err != nil {
		return nil, err
	}
	var all []promptEntry
	if err := json.Unmarshal([]byte(text), &all); err != nil {
		return nil, fmt.Errorf("norma: %s: the prompt list was cut or is not JSON", capability.ReasonToolError)
	}
	res := &mcp.ListPromptsResult{Prompts: []*mcp.Prompt{}}
	for _, e := range all {
		if e.Server != p.o.Server {
			continue
		}
		pr := &mcp.Prompt{Name: e.Name, Description: e.Description}
		for _, a := range e.Arguments {
			pr.Arguments = append(pr.Arguments, &mcp.PromptArgument{Name: a.Name, Description: a.Description, Required: a.Required})
		}
		res.Prompts = append(res.Prompts, pr)
	}
	return res, nil
}

// getPrompt returns the text GetMcpPrompt gives, as one user message.
func (p *Proxy) getPrompt(ctx context.Context, name string, args map[string]string) (mcp.Result, error) {
	in := map[string]any{"name": name}
	if len(args) > 0 {
		in["arguments"] = args
	}
	text, err := p.feature(ctx, host.GetPromptTool, in)
	if err != nil {
		return nil, err
	}
	return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: text}}}}, nil
}
