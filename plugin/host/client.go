package host

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/norma-run/norma/audit"
	"github.com/norma-run/norma/sandbox"
)

// ClientImplementation is what Norma calls itself to MCP servers.
var ClientImplementation = &mcp.Implementation{Name: "norma", Version: "2"}

// Handlers answer what a server sends to the client besides replies. A nil
// field refuses (elicitation: declined; sampling: an error) or drops
// (notifications).
type Handlers struct {
	ToolsChanged func(context.Context, *mcp.ClientSession)
	Elicit       func(context.Context, *mcp.ElicitParams) (*mcp.ElicitResult, error)
	Sample       func(context.Context, *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error)
	Notice       func(context.Context, Notice)
}

// ClientOptions are the options of every MCP client session Norma opens —
// a loaded plugin's and `plugin wrap`'s probe — so that a server sees the
// same client capabilities in both, and registers the same conditional
// tools (server-everything adds its elicitation and sampling tools only
// for a client that declares them). The client declares form elicitation
// and sampling, both always (answered or refused per request: see
// elicit.go and sampling.go), and no roots: a server learns no host path.
func ClientOptions(h Handlers) *mcp.ClientOptions {
	o := &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}},
		ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			if h.Elicit == nil {
				return &mcp.ElicitResult{Action: "decline"}, nil
			}
			return h.Elicit(ctx, req.Params)
		},
		CreateMessageHandler: func(ctx context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			if h.Sample == nil {
				return nil, errSamplingRefused
			}
			return h.Sample(ctx, req.Params)
		},
		ToolListChangedHandler: func(ctx context.Context, req *mcp.ToolListChangedRequest) {
			if h.ToolsChanged != nil {
				h.ToolsChanged(ctx, req.Session)
			}
		},
		LoggingMessageHandler: func(ctx context.Context, req *mcp.LoggingMessageRequest) {
			if h.Notice != nil && req.Params != nil {
				h.Notice(ctx, Notice{Kind: NoticeLog, Level: string(req.Params.Level), Logger: req.Params.Logger, Text: dataText(req.Params.Data)})
			}
		},
		ProgressNotificationHandler: func(ctx context.Context, req *mcp.ProgressNotificationClientRequest) {
			if h.Notice != nil && req.Params != nil {
				n := Notice{Kind: NoticeProgress, Text: req.Params.Message, Progress: req.Params.Progress, Total: req.Params.Total}
				h.Notice(ctx, n)
			}
		},
		// Declared so that a 2026-07-28 server sends them (the client
		// subscribes to what it handles); a door relays them as they are
		// read (see relayConn).
		PromptListChangedHandler:   func(context.Context, *mcp.PromptListChangedRequest) {},
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) {},
		ResourceUpdatedHandler:     func(context.Context, *mcp.ResourceUpdatedNotificationRequest) {},
	}
	return o
}

// connect opens the MCP session over the process's stdio with
// [ClientOptions] and the plugin's handlers.
func (p *Plugin) connect(ctx context.Context, proc *sandbox.Process) (*mcp.ClientSession, error) {
	client := mcp.NewClient(ClientImplementation, ClientOptions(Handlers{
		ToolsChanged: func(ctx context.Context, s *mcp.ClientSession) { go p.toolsChanged(context.WithoutCancel(ctx), s) },
		Elicit:       p.elicit,
		Sample:       p.sample,
		Notice:       p.notice,
	}))
	return client.Connect(ctx, &relayTransport{Transport: &mcp.IOTransport{Reader: proc.Stdout, Writer: proc.Stdin}, p: p}, nil)
}

// ProtocolVersion is the MCP protocol version negotiated with the running
// server ("" when it is not running): "2025-11-25" for a session of the
// initialize handshake, "2026-07-28" for a stateless (server/discover) one.
func (p *Plugin) ProtocolVersion() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.session == nil || p.session.InitializeResult() == nil {
		return ""
	}
	return p.session.InitializeResult().ProtocolVersion
}

// Notice kinds.
const (
	NoticeLog      = "log"
	NoticeProgress = "progress"
)

// Notice is a logging message or a progress notification from a server.
// It is for the person, never for the model: the host audits it (bounded,
// redacted) and hands it to [Config.Notify]; the receiver escapes it
// before printing (internal/termtext). Text is untrusted.
type Notice struct {
	Plugin, Server string
	Kind           string // NoticeLog or NoticeProgress
	Level, Logger  string // log
	Progress       float64
	Total          float64
	Text           string
}

// maxNotices bounds what one plugin may have audited and shown in a run;
// later ones are dropped (the last one audited says so).
const maxNotices = 256

// maxNoticeText bounds the text of one notice.
const maxNoticeText = 512

// notice audits n and passes it on, bounded and redacted.
func (p *Plugin) notice(ctx context.Context, n Notice) {
	cfg := p.h.cfg
	p.mu.Lock()
	p.notices++
	count := p.notices
	p.mu.Unlock()
	if count > maxNotices {
		return
	}
	n.Plugin, n.Server = p.m.ID, p.server
	n.Text = truncate(cfg.Redactor.Redact(n.Text), maxNoticeText)
	n.Logger = truncate(cfg.Redactor.Redact(n.Logger), 64)
	n.Level = truncate(n.Level, 16)
	d := map[string]string{"kind": n.Kind, "text": n.Text}
	if n.Kind == NoticeLog {
		d["level"], d["logger"] = n.Level, n.Logger
	} else {
		d["progress"], d["total"] = fmt.Sprint(n.Progress), fmt.Sprint(n.Total)
	}
	if count == maxNotices {
		d["suppressed"] = fmt.Sprintf("later notices of this plugin are dropped in this run (more than %d)", maxNotices)
	}
	cfg.Audit.Record(context.WithoutCancel(ctx), audit.Event{Type: audit.TypePluginNotice, RunID: cfg.RunID,
		Plugin: p.m.ID, PluginVersion: p.m.Version, Detail: d})
	if cfg.Notify != nil {
		cfg.Notify(n)
	}
}

// dataText renders a logging message's data: a string as it is, anything
// else as JSON.
func dataText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// truncate cuts s to at most n bytes at a rune boundary, marked.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return strings.TrimRightFunc(s, func(r rune) bool { return r == utf8.RuneError }) + "…"
}
