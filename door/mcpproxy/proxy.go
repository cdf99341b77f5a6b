package mcpproxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
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

// Upstream is the plugin behind the door as the proxy sees it, for what
// passes through unchanged (*host.Plugin satisfies it): the tools its
// server listed, its notifications, and the client's logging level.
type Upstream interface {
	// ServedTools is the server's tools/list result, as it sent it.
	ServedTools() *mcp.ListToolsResult
	// OnNotification registers the receiver of its notifications.
	OnNotification(func(context.Context, host.Notification))
	// SetLogLevel forwards logging/setLevel.
	SetLogLevel(context.Context, mcp.LoggingLevel) error
}

// Options configures [New].
type Options struct {
	// Door is the session every request goes through. Required.
	Door Door
	// Server is the plugin's server name: its tools are mcp__Server__TOOL
	// at the gate. Required.
	Server string
	// Version is the version the proxy advertises (Norma's) when Init is
	// nil.
	Version string
	// Approvals is the door's approval service, through which a client
	// that supports elicitation answers; nil asks no client.
	Approvals Approvals
	// Upstream is the plugin behind the door; nil builds the tool list
	// from the door's specs alone.
	Upstream Upstream
	// Init is what the server answered to initialize: its capabilities
	// (but subscriptions and completions, not offered), instructions and
	// serverInfo are passed on to the client as they are. nil: the
	// proxy's own (tools, and resources and prompts when the door has the
	// feature tools).
	Init *mcp.InitializeResult
	// ElicitWait bounds how long an older client's answer to an approval
	// elicitation is awaited (0: until the approval expires); then the
	// approval stays pending.
	ElicitWait time.Duration
}

// MetaReason is the _meta key of a result that holds the gate's reason
// code; MetaApproval holds a pending approval's id.
const (
	MetaReason   = "norma/reason"
	MetaApproval = "norma/approval"
)

// CodeRefused is the JSON-RPC error code of a refused resources/read or
// prompts/get (an error in the range JSON-RPC leaves to servers): its
// message is "norma: REASON: why", its data {"norma/reason": REASON}.
const CodeRefused = -32001

// Proxy is one proxied server.
type Proxy struct {
	o     Options
	srv   *mcp.Server
	caps  *mcp.ServerCapabilities
	tools map[string]string // the server's tool name → the gate's

	mu     sync.Mutex
	asked  map[string]string                       // approval id → the call (callKey) it was asked for
	levels map[*mcp.ServerSession]mcp.LoggingLevel // the logging level each client set
}

// New builds the proxy's MCP server: the tools the door lists for the
// server, the resources and prompts through the feature tools, with the
// server's own capabilities when Init is given.
func New(o Options) (*Proxy, error) {
	if o.Door == nil || o.Server == "" {
		return nil, errors.New("proxy: a door and a server name are required")
	}
	p := &Proxy{o: o, asked: map[string]string{}, tools: map[string]string{}, levels: map[*mcp.ServerSession]mcp.LoggingLevel{}}
	prefix := host.ToolName(o.Server, "")
	caps := &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}}
	impl := &mcp.Implementation{Name: "norma-proxy/" + o.Server, Version: o.Version}
	var instructions string
	if o.Init != nil {
		caps = upstreamCaps(o.Init.Capabilities)
		if o.Init.ServerInfo != nil {
			impl = o.Init.ServerInfo
		}
		instructions = o.Init.Instructions
	}
	var tools []provider.ToolSpec
	for _, s := range o.Door.ToolSpecs() {
		switch {
		case strings.HasPrefix(s.Name, prefix) && len(s.Name) > len(prefix):
			tools = append(tools, s)
		case o.Init == nil && s.Name == host.ListResourcesTool:
			caps.Resources = &mcp.ResourceCapabilities{}
		case o.Init == nil && s.Name == host.ListPromptsTool:
			caps.Prompts = &mcp.PromptCapabilities{}
		}
	}
	p.caps = caps
	p.srv = mcp.NewServer(impl, &mcp.ServerOptions{Capabilities: caps, Instructions: instructions})
	for _, s := range tools {
		name := strings.TrimPrefix(s.Name, prefix)
		schema := s.InputSchema
		if len(schema) == 0 {
			schema = json.RawMessage(`{"type":"object"}`)
		}
		p.tools[name] = s.Name
		p.srv.AddTool(&mcp.Tool{Name: name, Description: s.Description, InputSchema: schema}, p.callTool(s.Name))
	}
	p.srv.AddReceivingMiddleware(p.features)
	if o.Upstream != nil {
		o.Upstream.OnNotification(p.notify)
	}
	return p, nil
}

// upstreamCaps is the server's capabilities as the proxy offers them:
// unchanged, but resource subscriptions and completions, which the proxy
// does not relay.
func upstreamCaps(c *mcp.ServerCapabilities) *mcp.ServerCapabilities {
	out := &mcp.ServerCapabilities{}
	if c != nil {
		*out = *c
	}
	if out.Resources != nil {
		r := *out.Resources
		r.Subscribe = false
		out.Resources = &r
	}
	out.Completions = nil
	return out
}

// Server returns the MCP server, for [mcp.Server.Run].
func (p *Proxy) Server() *mcp.Server { return p.srv }

// Run serves one client over t until it disconnects.
func (p *Proxy) Run(ctx context.Context, t mcp.Transport) error { return p.srv.Run(ctx, t) }

// sessionKey carries the client's session to the [Approver], on the
// context of the request that needs approval.
type sessionKey struct{}

// execute runs one call through the door, with a relay that brings back
// the server's own answer and its progress under the client's token.
func (p *Proxy) execute(ctx context.Context, ss *mcp.ServerSession, tool string, in json.RawMessage, meta mcp.Meta) (gate.Result, *host.Relay) {
	rl := &host.Relay{Meta: meta}
	if ss != nil {
		rl.Progress = func(ctx context.Context, pp *mcp.ProgressNotificationParams) { _ = ss.NotifyProgress(ctx, pp) }
		p.mu.Lock()
		rl.LogLevel = p.levels[ss]
		p.mu.Unlock()
	}
	return p.o.Door.Execute(host.WithRelay(ctx, rl), tool, in), rl
}

// callTool is the handler of the tool the gate knows as full.
func (p *Proxy) callTool(full string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		in := req.Params.Arguments
		if len(in) == 0 || string(in) == "null" {
			in = json.RawMessage(`{}`)
		}
		ctx = context.WithValue(ctx, sessionKey{}, req.Session)
		if refusal, ok := p.answered(ctx, req.Session, req.Params, full, in); refusal != nil {
			return toolResult(*refusal, nil)
		} else if ok {
			// Approved: the repeated call redeems the approval.
			return toolResult(p.execute(ctx, req.Session, full, in, req.Params.Meta))
		}
		r, rl := p.execute(ctx, req.Session, full, in, req.Params.Meta)
		if r.Reason == capability.ReasonApprovalPending && r.ApprovalID != "" && p.o.Approvals != nil && canElicit(req.Session) {
			if multiRoundTrip(req.Session) {
				if res, ok := p.askClient(ctx, r.ApprovalID, full, in); ok {
					return res, nil
				}
			} else {
				return p.elicitNow(ctx, req, r, full, in)
			}
		}
		return toolResult(r, rl)
	}
}

// toolResult is the answer to a tools/call: a refusal (a tool error
// result whose text names the reason code), the server's JSON-RPC error
// as it sent it, or its result as it sent it (redacted); Norma adds its
// _meta keys only.
func toolResult(r gate.Result, rl *host.Relay) (*mcp.CallToolResult, error) {
	if rl != nil && (!r.IsError || r.Reason == capability.ReasonToolError) {
		res, werr := rl.Result()
		if werr != nil {
			return nil, werr
		}
		if tr, ok := res.(*mcp.CallToolResult); ok {
			tr = passOn(tr).(*mcp.CallToolResult)
			if tr.Meta == nil {
				tr.Meta = mcp.Meta{}
			}
			tr.Meta[MetaReason] = string(r.Reason)
			return tr, nil
		}
	}
	return gateResult(r), nil
}

// gateResult is a gate result as MCP: a refusal's text names its code.
func gateResult(r gate.Result) *mcp.CallToolResult {
	text := r.Content
	if r.IsError && r.Reason != capability.ReasonToolError {
		text = Refusal(r)
	}
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, IsError: r.IsError}
	res.Meta = mcp.Meta{MetaReason: string(r.Reason)}
	if r.ApprovalID != "" {
		res.Meta[MetaApproval] = r.ApprovalID
	}
	return res
}

// Refusal is the text of a refused call: "norma: REASON: why".
func Refusal(r gate.Result) string {
	return fmt.Sprintf("norma: %s: %s", r.Reason, strings.TrimSpace(r.Content))
}

// features answers tools/list with the server's own tool entries,
// resources/list, resources/templates/list, resources/read, prompts/list
// and prompts/get through the feature tools, and forwards
// logging/setLevel; everything else goes on to the proxy's server.
func (p *Proxy) features(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		ss, _ := req.GetSession().(*mcp.ServerSession)
		if ss != nil {
			ctx = context.WithValue(ctx, sessionKey{}, ss)
		}
		switch r := req.(type) {
		case *mcp.ListToolsRequest:
			if res := p.listTools(); res != nil {
				return res, nil
			}
		case *mcp.ListResourcesRequest:
			return p.listResources(ctx, ss, metaOf(r.Params), false)
		case *mcp.ListResourceTemplatesRequest:
			return p.listResources(ctx, ss, metaOf(r.Params), true)
		case *mcp.ReadResourceRequest:
			return p.readResource(ctx, ss, r.Params)
		case *mcp.ListPromptsRequest:
			return p.listPrompts(ctx, ss, metaOf(r.Params))
		case *mcp.GetPromptRequest:
			return p.getPrompt(ctx, ss, r.Params)
		case *mcp.ServerRequest[*mcp.SetLoggingLevelParams]:
			if p.o.Upstream != nil && r.Params != nil && ss != nil {
				// Passed on with each call too (a 2026-07-28 server reads
				// it there); the server's own refusal of setLevel is not
				// the client's concern: its messages are filtered here.
				p.mu.Lock()
				p.levels[ss] = r.Params.Level
				p.mu.Unlock()
				_ = p.o.Upstream.SetLogLevel(ctx, r.Params.Level)
			}
		}
		return next(ctx, method, req)
	}
}

// metaOf is the _meta of a request's params (nil params: none).
func metaOf[P interface {
	*T
	GetMeta() map[string]any
}, T any](p P) mcp.Meta {
	if p == nil {
		return nil
	}
	return mcp.Meta(p.GetMeta())
}

// listTools is the server's tool list as it sent it, less the tools the
// door does not list for the principal; nil without an upstream.
func (p *Proxy) listTools() mcp.Result {
	if p.o.Upstream == nil {
		return nil
	}
	served := p.o.Upstream.ServedTools()
	if served == nil {
		return nil
	}
	out := *served
	passOn(&out)
	out.Tools = make([]*mcp.Tool, 0, len(served.Tools))
	for _, t := range served.Tools {
		if _, ok := p.tools[t.Name]; ok {
			out.Tools = append(out.Tools, t)
		}
	}
	return uncached{&out}
}

// feature calls a feature tool for this server through the door.
func (p *Proxy) feature(ctx context.Context, ss *mcp.ServerSession, tool string, in map[string]any, meta mcp.Meta) (gate.Result, *host.Relay) {
	in["server"] = p.o.Server
	b, err := json.Marshal(in)
	if err != nil {
		return gate.Result{Tool: tool, IsError: true, Reason: capability.ReasonInvalidRequest, Content: err.Error()}, nil
	}
	return p.execute(ctx, ss, tool, b, meta)
}

// refusedErr is a refused read or get as a JSON-RPC error, or the
// server's own error when the call reached it.
func refusedErr(r gate.Result, rl *host.Relay) error {
	if rl != nil {
		if _, werr := rl.Result(); werr != nil {
			return werr
		}
	}
	data, _ := json.Marshal(map[string]string{MetaReason: string(r.Reason)})
	return &jsonrpc.Error{Code: CodeRefused, Message: Refusal(r), Data: data}
}

// listed is the outcome of a list: the server's answer, or an empty
// list that says why in its _meta (a refusal), or an empty list for a
// server that does not offer the feature (a client's probe, audited by
// the gate as a decision).
func listed(r gate.Result, rl *host.Relay, offered bool) (mcp.Result, mcp.Meta) {
	if !r.IsError {
		res, _ := rl.Result()
		return res, nil
	}
	if !offered {
		return nil, nil
	}
	return nil, mcp.Meta{MetaReason: string(r.Reason)}
}

func (p *Proxy) listResources(ctx context.Context, ss *mcp.ServerSession, meta mcp.Meta, templates bool) (mcp.Result, error) {
	r, rl := p.feature(ctx, ss, host.ListResourcesTool, map[string]any{}, meta)
	res, why := listed(r, rl, p.caps.Resources != nil)
	if templates {
		out := &mcp.ListResourceTemplatesResult{Meta: why}
		if res != nil {
			if ts := rl.Templates(); ts != nil {
				out = passOn(ts).(*mcp.ListResourceTemplatesResult)
			}
		}
		if out.ResourceTemplates == nil {
			out.ResourceTemplates = []*mcp.ResourceTemplate{}
		}
		return uncached{out}, nil
	}
	out, ok := passOn(res).(*mcp.ListResourcesResult)
	if !ok {
		out = &mcp.ListResourcesResult{Meta: why}
	}
	if out.Resources == nil {
		out.Resources = []*mcp.Resource{}
	}
	return uncached{out}, nil
}

func (p *Proxy) readResource(ctx context.Context, ss *mcp.ServerSession, params *mcp.ReadResourceParams) (mcp.Result, error) {
	if params == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "missing params"}
	}
	r, rl := p.feature(ctx, ss, host.ReadResourceTool, map[string]any{"uri": params.URI}, params.Meta)
	if r.IsError {
		return nil, refusedErr(r, rl)
	}
	res, _ := rl.Result()
	if rr, ok := res.(*mcp.ReadResourceResult); ok {
		return uncached{passOn(rr)}, nil
	}
	return nil, refusedErr(gate.Result{Reason: capability.ReasonToolError, Content: "the server sent no contents"}, nil)
}

func (p *Proxy) listPrompts(ctx context.Context, ss *mcp.ServerSession, meta mcp.Meta) (mcp.Result, error) {
	r, rl := p.feature(ctx, ss, host.ListPromptsTool, map[string]any{}, meta)
	res, why := listed(r, rl, p.caps.Prompts != nil)
	out, ok := passOn(res).(*mcp.ListPromptsResult)
	if !ok {
		out = &mcp.ListPromptsResult{Meta: why}
	}
	if out.Prompts == nil {
		out.Prompts = []*mcp.Prompt{}
	}
	return uncached{out}, nil
}

func (p *Proxy) getPrompt(ctx context.Context, ss *mcp.ServerSession, params *mcp.GetPromptParams) (mcp.Result, error) {
	if params == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "missing params"}
	}
	in := map[string]any{"name": params.Name}
	if len(params.Arguments) > 0 {
		in["arguments"] = params.Arguments
	}
	r, rl := p.feature(ctx, ss, host.GetPromptTool, in, params.Meta)
	if r.IsError {
		return nil, refusedErr(r, rl)
	}
	res, _ := rl.Result()
	if gp, ok := res.(*mcp.GetPromptResult); ok {
		return passOn(gp), nil
	}
	return nil, refusedErr(gate.Result{Reason: capability.ReasonToolError, Content: "the server sent no prompt"}, nil)
}

// notify relays a notification of the server to the client sessions:
// logging messages (at the level each client set), and the list_changed
// the proxy's own server sends when its lists change.
func (p *Proxy) notify(ctx context.Context, n host.Notification) {
	switch n.Method {
	case host.MethodLogging:
		lp, ok := n.Params.(*mcp.LoggingMessageParams)
		if !ok {
			return
		}
		for ss := range p.srv.Sessions() {
			_ = ss.Log(ctx, lp)
		}
	case host.MethodResourceUpdated:
		if up, ok := n.Params.(*mcp.ResourceUpdatedNotificationParams); ok {
			_ = p.srv.ResourceUpdated(ctx, up)
		}
	case host.MethodPromptsListChanged:
		// The proxy's server says its prompts changed when its registry
		// does: a placeholder the client never sees (prompts/list is
		// answered from the server's list) is added and removed.
		p.srv.AddPrompt(&mcp.Prompt{Name: placeholder}, nil)
		p.srv.RemovePrompts(placeholder)
	case host.MethodResourcesChanged:
		p.srv.AddResource(&mcp.Resource{URI: "norma:" + placeholder, Name: placeholder}, nil)
		p.srv.RemoveResources("norma:" + placeholder)
	case host.MethodToolsListChanged:
		p.srv.AddTool(&mcp.Tool{Name: placeholder, InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "unknown tool"}
		})
		p.srv.RemoveTools(placeholder)
	}
}

// placeholder names the entry that makes the proxy's server announce a
// list change.
const placeholder = "norma-list-changed"

// uncached is a list or read result as the server sent it: the cache
// fields (ttlMs, cacheScope) that the SDK writes on every such result
// are left out when the server sent none (an SDK server always sends a
// cacheScope).
type uncached struct{ mcp.Result }

func (u uncached) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(u.Result)
	if err != nil {
		return nil, err
	}
	c, ok := u.Result.(interface{ GetCacheScope() string })
	if !ok || c.GetCacheScope() != "" {
		return b, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	delete(m, "ttlMs")
	delete(m, "cacheScope")
	return json.Marshal(m)
}

// protocolMeta is the prefix of the _meta keys the protocol itself
// writes per session (the server's info on a 2026-07-28 result): those of
// the host's session with the server are not the client's, whose own the
// proxy's server writes.
const protocolMeta = "io.modelcontextprotocol/"

// stripProtocolMeta removes the protocol's own keys from m.
func stripProtocolMeta(m mcp.Meta) mcp.Meta {
	var out mcp.Meta
	for k, v := range m {
		if !strings.HasPrefix(k, protocolMeta) {
			if out == nil {
				out = mcp.Meta{}
			}
			out[k] = v
		}
	}
	return out
}

// passOn is a result of the server as the client gets it: what the
// session between the host and the server added (its result type, the
// protocol's _meta keys) is taken out, everything the server said stays.
// The fields are copied, never the content.
func passOn(res mcp.Result) mcp.Result {
	switch x := res.(type) {
	case *mcp.CallToolResult:
		return &mcp.CallToolResult{Meta: stripProtocolMeta(x.Meta), Content: x.Content, StructuredContent: x.StructuredContent, IsError: x.IsError}
	case *mcp.GetPromptResult:
		return &mcp.GetPromptResult{Meta: stripProtocolMeta(x.Meta), Description: x.Description, Messages: x.Messages}
	case *mcp.ReadResourceResult:
		return &mcp.ReadResourceResult{Meta: stripProtocolMeta(x.Meta), Cacheable: x.Cacheable, Contents: x.Contents}
	case *mcp.ListToolsResult:
		x.Meta, x.ResultType = stripProtocolMeta(x.Meta), ""
	case *mcp.ListPromptsResult:
		x.Meta, x.ResultType = stripProtocolMeta(x.Meta), ""
	case *mcp.ListResourcesResult:
		x.Meta, x.ResultType = stripProtocolMeta(x.Meta), ""
	case *mcp.ListResourceTemplatesResult:
		x.Meta, x.ResultType = stripProtocolMeta(x.Meta), ""
	}
	return res
}
