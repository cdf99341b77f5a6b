package host

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/norma-run/norma/secret"
)

// Relay is what an MCP door (`norma mcp proxy`) gets of one call it makes
// through the gate, beside the text the gate judges: the server's own
// answer as it sent it (every content block, structuredContent, _meta,
// isError; a resource's text or blob and MIME type; a prompt's messages),
// or the server's JSON-RPC error with its code, and the server's progress
// notifications during the call under the client's own token. The door
// puts a Relay in the context of the gate call (WithRelay); only the
// plugin's tools and feature tools, reached through the gate, fill it.
// Every string of what it holds is redacted with the host's redactor, as
// the gate redacts the text (structured content and _meta included).
type Relay struct {
	// Meta is the client's request _meta, passed to the server (its
	// progressToken is replaced by the host's own, and Norma's
	// norma/idempotency_key is set on a tool call).
	Meta mcp.Meta
	// LogLevel is the logging level the door's client set
	// (logging/setLevel), sent with the call as a 2026-07-28 server reads
	// it (the _meta key io.modelcontextprotocol/logLevel); "" none.
	LogLevel mcp.LoggingLevel
	// Progress receives the server's progress notifications for this call,
	// with the client's progressToken (the one of Meta) put back; nil
	// drops them (they are audited as notices either way).
	Progress func(context.Context, *mcp.ProgressNotificationParams)

	mu        sync.Mutex
	result    mcp.Result
	templates *mcp.ListResourceTemplatesResult
	err       *jsonrpc.Error
}

type relayKey struct{}

// WithRelay returns ctx carrying r, for one call through the gate.
func WithRelay(ctx context.Context, r *Relay) context.Context {
	return context.WithValue(ctx, relayKey{}, r)
}

func relayOf(ctx context.Context) *Relay {
	r, _ := ctx.Value(relayKey{}).(*Relay)
	return r
}

// Result returns what the server answered the call: its result (a
// *mcp.CallToolResult, *mcp.ListResourcesResult, *mcp.ReadResourceResult,
// *mcp.ListPromptsResult or *mcp.GetPromptResult), or its JSON-RPC error;
// both nil when the call did not reach the server.
func (r *Relay) Result() (mcp.Result, *jsonrpc.Error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.result, r.err
}

// Templates returns the resource templates a ListMcpResources call found
// (nil: none, or the server has none).
func (r *Relay) Templates() *mcp.ListResourceTemplatesResult {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.templates
}

func (r *Relay) set(res mcp.Result, err *jsonrpc.Error) {
	if r == nil {
		return
	}
	r.mu.Lock()
	r.result, r.err = res, err
	r.mu.Unlock()
}

// requestMeta is the _meta a call sends the server: the client's (when
// relayed), without its progress token, and the host's own entries.
func requestMeta(ctx context.Context, own mcp.Meta) mcp.Meta {
	r := relayOf(ctx)
	if r == nil || len(r.Meta) == 0 && r.LogLevel == "" {
		return own
	}
	m := mcp.Meta{}
	for k, v := range r.Meta {
		// The protocol's own keys are the client's, of its session with
		// the door (its version, info and capabilities): the host speaks
		// for itself. Its logging level is passed on.
		if k != progressTokenKey && (!strings.HasPrefix(k, protocolMetaPrefix) || k == mcp.MetaKeyLogLevel) {
			m[k] = v
		}
	}
	if _, ok := m[mcp.MetaKeyLogLevel]; !ok && r.LogLevel != "" {
		m[mcp.MetaKeyLogLevel] = r.LogLevel
	}
	for k, v := range own {
		m[k] = v
	}
	return m
}

const (
	progressTokenKey   = "progressToken"
	protocolMetaPrefix = "io.modelcontextprotocol/"
)

// serverError returns the server's JSON-RPC error in err: the server
// answered, it is alive. A connection that broke is not one.
func serverError(err error) (*jsonrpc.Error, bool) {
	if err == nil || errors.Is(err, mcp.ErrConnectionClosed) {
		return nil, false
	}
	we, ok := errors.AsType[*jsonrpc.Error](err)
	if !ok || we.Code == 0 {
		return nil, false
	}
	return we, true
}

// relayedError is the server's error, redacted, for a relay.
func relayedError(red *secret.Redactor, we *jsonrpc.Error) *jsonrpc.Error {
	out := &jsonrpc.Error{Code: we.Code, Message: red.Redact(we.Message)}
	if len(we.Data) > 0 {
		out.Data = red.RedactBytes(slices.Clone(we.Data))
	}
	return out
}

// progressRelay is the relay of a call's progress token, and the client's
// own token.
type progressRelay struct {
	r     *Relay
	token any
}

// trackProgress records that the host's token tok stands for the client's
// token of r, until the returned func is called.
func (h *Host) trackProgress(r *Relay, tok int64) func() {
	if r == nil || r.Progress == nil {
		return func() {}
	}
	ct, ok := r.Meta[progressTokenKey]
	if !ok {
		return func() {}
	}
	h.relays.Store(tok, progressRelay{r, ct})
	return func() { h.relays.Delete(tok) }
}

// relayProgress hands a progress notification of the host's token to the
// relay of its call, under the client's token.
func (h *Host) relayProgress(ctx context.Context, params *mcp.ProgressNotificationParams) {
	var tok int64
	switch t := params.ProgressToken.(type) {
	case int64:
		tok = t
	case json.Number:
		n, err := t.Int64()
		if err != nil {
			return
		}
		tok = n
	case float64:
		tok = int64(t)
	case int:
		tok = int64(t)
	default:
		return
	}
	v, ok := h.relays.Load(tok)
	if !ok {
		return
	}
	pr := v.(progressRelay)
	out := *params
	out.ProgressToken = pr.token
	out.Message = h.cfg.Redactor.Redact(out.Message)
	pr.r.Progress(ctx, &out)
}

// Notification is what a server sends outside a call's reply that a door
// relays: a logging message, a list_changed, a resources/updated. Params
// is the typed params (redacted), one of *mcp.LoggingMessageParams,
// *mcp.ResourceUpdatedNotificationParams, or nil for a list_changed.
type Notification struct {
	Method string
	Params mcp.Params
}

// The methods of relayed notifications.
const (
	MethodLogging            = "notifications/message"
	MethodToolsListChanged   = "notifications/tools/list_changed"
	MethodPromptsListChanged = "notifications/prompts/list_changed"
	MethodResourcesChanged   = "notifications/resources/list_changed"
	MethodResourceUpdated    = "notifications/resources/updated"
	methodProgress           = "notifications/progress"
	maxRelayListeners        = 8
)

// OnNotification registers f to receive the server's notifications (see
// [Notification]), redacted; a tools/list_changed is relayed once the new
// list was admitted (see toolsChanged). At most a few listeners: the
// proxy's.
func (p *Plugin) OnNotification(f func(context.Context, Notification)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.listeners) < maxRelayListeners {
		p.listeners = append(p.listeners, f)
	}
}

// relayNotification hands n to the listeners.
func (p *Plugin) relayNotification(ctx context.Context, n Notification) {
	p.mu.Lock()
	ls := slices.Clone(p.listeners)
	p.mu.Unlock()
	for _, f := range ls {
		f(ctx, n)
	}
}

// relayLog redacts a logging message and relays it.
func (p *Plugin) relayLog(ctx context.Context, params *mcp.LoggingMessageParams) {
	if params == nil {
		return
	}
	out := *params
	out.Logger = p.h.cfg.Redactor.Redact(out.Logger)
	out.Data = redactValue(p.h.cfg.Redactor, out.Data)
	p.relayNotification(ctx, Notification{Method: MethodLogging, Params: &out})
}

// Upstream starts the plugin's server when it is not running and returns
// what it answered to initialize: its protocol version, capabilities,
// instructions and serverInfo.
func (p *Plugin) Upstream(ctx context.Context) (*mcp.InitializeResult, error) {
	if err := p.ensureStarted(ctx); err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.session == nil || p.session.InitializeResult() == nil {
		return nil, errors.New("the server is not running")
	}
	return p.session.InitializeResult(), nil
}

// ServedTools returns the server's last tools/list result as it sent it
// (every tool field: title, annotations, outputSchema, icons, _meta; its
// own _meta and cache fields), holding the declared tools only, in its
// order; nil before its first start in this run. The door offers those
// of them that the gate lists for its principal.
func (p *Plugin) ServedTools() *mcp.ListToolsResult {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.servedRaw
}

// SetLogLevel forwards a client's logging/setLevel to the running server
// (started if needed): the level of the messages it sends, which the
// host audits and a door relays.
func (p *Plugin) SetLogLevel(ctx context.Context, level mcp.LoggingLevel) error {
	if err := p.ensureStarted(ctx); err != nil {
		return err
	}
	p.mu.Lock()
	s := p.session
	p.mu.Unlock()
	if s == nil {
		return errors.New("the server is not running")
	}
	return s.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: level})
}

// redactValue redacts every string of a decoded JSON value, object keys
// included, in place where it can (maps and slices), and returns it.
func redactValue(red *secret.Redactor, v any) any {
	switch x := v.(type) {
	case string:
		return red.Redact(x)
	case map[string]any:
		var renamed map[string]any
		for k, e := range x {
			e = redactValue(red, e)
			if nk := red.Redact(k); nk != k {
				if renamed == nil {
					renamed = map[string]any{}
				}
				renamed[nk] = e
				delete(x, k)
				continue
			}
			x[k] = e
		}
		for k, e := range renamed {
			x[k] = e
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = redactValue(red, e)
		}
		return x
	}
	return v
}

// redactMeta redacts the values of a _meta in place.
func redactMeta(red *secret.Redactor, m mcp.Meta) {
	for k, v := range m {
		m[k] = redactValue(red, v)
	}
}

// redactContent redacts the text a content block carries, in place.
func redactContent(red *secret.Redactor, c mcp.Content) {
	switch x := c.(type) {
	case *mcp.TextContent:
		x.Text = red.Redact(x.Text)
		redactMeta(red, x.Meta)
	case *mcp.EmbeddedResource:
		if x.Resource != nil {
			redactResource(red, x.Resource)
		}
		redactMeta(red, x.Meta)
	case *mcp.ResourceLink:
		x.Description = red.Redact(x.Description)
		x.URI = red.Redact(x.URI)
		redactMeta(red, x.Meta)
	case *mcp.ImageContent:
		redactMeta(red, x.Meta)
	case *mcp.AudioContent:
		redactMeta(red, x.Meta)
	}
}

func redactResource(red *secret.Redactor, r *mcp.ResourceContents) {
	r.Text = red.Redact(r.Text)
	redactMeta(red, r.Meta)
}

// redactToolResult redacts a tool result in place: its text blocks,
// embedded resources, structured content and _meta.
func redactToolResult(red *secret.Redactor, res *mcp.CallToolResult) {
	for _, c := range res.Content {
		redactContent(red, c)
	}
	if res.StructuredContent != nil {
		res.StructuredContent = redactValue(red, res.StructuredContent)
	}
	redactMeta(red, res.Meta)
}

// resultSize is about how many bytes a tool result carries (text, data,
// blobs, structured content left out): what MaxOutput bounds.
func resultSize(res *mcp.CallToolResult) int {
	n := 0
	for _, c := range res.Content {
		switch x := c.(type) {
		case *mcp.TextContent:
			n += len(x.Text)
		case *mcp.ImageContent:
			n += len(x.Data)
		case *mcp.AudioContent:
			n += len(x.Data)
		case *mcp.EmbeddedResource:
			if x.Resource != nil {
				n += len(x.Resource.Text) + len(x.Resource.Blob)
			}
		}
	}
	return n
}

// relayTransport is the transport of a plugin's session with its server
// that hands the server's notifications to the relays as they are read:
// before the reply that follows them is read, so that a door relays a
// call's progress and logging before its result, in the server's order
// (the SDK handles notifications on a queue of its own, which a reply
// does not wait for).
type relayTransport struct {
	mcp.Transport
	p *Plugin
}

func (t *relayTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &relayConn{Connection: c, p: t.p}, nil
}

type relayConn struct {
	mcp.Connection
	p *Plugin
}

func (c *relayConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	m, err := c.Connection.Read(ctx)
	if req, ok := m.(*jsonrpc.Request); ok && err == nil && !req.IsCall() {
		c.p.relayWire(ctx, req.Method, req.Params)
	}
	return m, err
}

// relayWire routes a notification of the plugin's server, as read:
// progress to the relay of its call, the others to the listeners,
// redacted. One that does not decode is left to the SDK.
func (p *Plugin) relayWire(ctx context.Context, method string, params json.RawMessage) {
	switch method {
	case methodProgress:
		var x mcp.ProgressNotificationParams
		if json.Unmarshal(params, &x) == nil {
			p.h.relayProgress(ctx, &x)
		}
	case MethodLogging:
		var x mcp.LoggingMessageParams
		if json.Unmarshal(params, &x) == nil {
			p.relayLog(ctx, &x)
		}
	case MethodResourceUpdated:
		var x mcp.ResourceUpdatedNotificationParams
		if json.Unmarshal(params, &x) == nil {
			redactMeta(p.h.cfg.Redactor, x.Meta)
			p.relayNotification(ctx, Notification{Method: method, Params: &x})
		}
	case MethodPromptsListChanged, MethodResourcesChanged:
		p.relayNotification(ctx, Notification{Method: method})
	}
}
