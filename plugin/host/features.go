package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/tool"
)

// The tools through which the model reaches the resources and prompts of
// the plugins' servers, named as Claude Code names its own.
const (
	ListResourcesTool = "ListMcpResources"
	ReadResourceTool  = "ReadMcpResource"
	ListPromptsTool   = "ListMcpPrompts"
	GetPromptTool     = "GetMcpPrompt"
)

// maxListed bounds the entries of one list.
const maxListed = 500

// FeatureTools returns the tools that list and read the resources, and
// list and get the prompts, of the loaded plugins whose servers advertise
// them (as recorded with their tool pins): none when no server does. They
// are registered with the gate beside the plugins' tools and decided
// there (rules deny them by name, e.g. "ReadMcpResource"; the gate audits
// each call); every one only reads. A held plugin is refused as its tools
// are. Results are bounded text: a blob or an image is reported by MIME
// type and size, never passed on.
func (h *Host) FeatureTools() ([]tool.CoreTool, error) {
	var servers []featured
	for _, p := range h.loaded() {
		servers = append(servers, featured{p.server, p.features()})
	}
	return featureTools(servers, h)
}

// DescribedFeatureTools are the feature tools the plugins ds would get
// when loaded, from the features recorded with their pins; their calls
// are refused. `norma policy explain` decides on them.
func DescribedFeatureTools(ds []*Declared) ([]tool.CoreTool, error) {
	var servers []featured
	for _, d := range ds {
		servers = append(servers, featured{d.server, d.features})
	}
	slices.SortFunc(servers, func(a, b featured) int { return strings.Compare(a.server, b.server) })
	return featureTools(servers, nil)
}

// featured is a server name and what its server advertises.
type featured struct {
	server string
	f      serverFeatures
}

// featureTools builds the feature tools of servers; a nil h refuses every
// call (a plugin known by its pins only).
func featureTools(servers []featured, h *Host) ([]tool.CoreTool, error) {
	var res, prompts []string
	for _, s := range servers {
		if s.f.Resources {
			res = append(res, s.server)
		}
		if s.f.Prompts {
			prompts = append(prompts, s.server)
		}
	}
	run := func(f func(*Host, context.Context, featureInput) (string, error)) func(context.Context, featureInput) (string, error) {
		if h == nil {
			return nil
		}
		return func(ctx context.Context, in featureInput) (string, error) { return f(h, ctx, in) }
	}
	var specs []tool.Spec
	if len(res) > 0 {
		servers := strings.Join(res, ", ")
		specs = append(specs,
			featureSpec(h, res, ListResourcesTool, "List the resources of MCP servers ("+servers+"): their URIs, names and MIME types.",
				`{"type":"object","properties":{"server":{"type":"string","description":"only this server"}},"additionalProperties":false}`, run((*Host).listResources)),
			featureSpec(h, res, ReadResourceTool, "Read one resource of an MCP server ("+servers+") by URI.",
				`{"type":"object","properties":{"server":{"type":"string"},"uri":{"type":"string"}},"required":["server","uri"],"additionalProperties":false}`, run((*Host).readResource)))
	}
	if len(prompts) > 0 {
		servers := strings.Join(prompts, ", ")
		specs = append(specs,
			featureSpec(h, prompts, ListPromptsTool, "List the prompts of MCP servers ("+servers+") and their arguments.",
				`{"type":"object","properties":{"server":{"type":"string","description":"only this server"}},"additionalProperties":false}`, run((*Host).listPrompts)),
			featureSpec(h, prompts, GetPromptTool, "Get one prompt of an MCP server ("+servers+"), with its arguments.",
				`{"type":"object","properties":{"server":{"type":"string"},"name":{"type":"string"},"arguments":{"type":"object","additionalProperties":{"type":"string"}}},"required":["server","name"],"additionalProperties":false}`, run((*Host).getPrompt)))
	}
	out := make([]tool.CoreTool, 0, len(specs))
	for _, s := range specs {
		t, err := tool.Build(s)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// features returns what p's server advertised besides tools.
func (p *Plugin) features() serverFeatures {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.caps
}

// featureInput is the input of the feature tools.
type featureInput struct {
	Server    string            `json:"server"`
	URI       string            `json:"uri"`
	Name      string            `json:"name"`
	Arguments map[string]string `json:"arguments"`
}

// A feature tool's call also answers, in deny and ask rules, to the name
// mcp__SERVER__TOOL of the server it asks (of every server, when it names
// none): `deny: [mcp__SERVER]` covers the server's resources and prompts
// as it covers its tools.
func featureSpec(h *Host, servers []string, name, desc, schema string, run func(context.Context, featureInput) (string, error)) tool.Spec {
	spec := tool.Spec{
		Name: name, Description: desc, Schema: json.RawMessage(schema),
		RuleNames: func(in tool.Input) []string {
			var x featureInput
			if in.Decode(&x) == nil && x.Server != "" {
				return []string{ToolName(x.Server, name)}
			}
			out := make([]string, 0, len(servers))
			for _, s := range servers {
				out = append(out, ToolName(s, name))
			}
			return out
		},
		ReadOnly:         func(tool.Input) bool { return true },
		ConcurrencySafe:  func(tool.Input) bool { return true },
		CheckPermissions: func(context.Context, tool.Input) tool.Permission { return tool.Permission{Behavior: tool.Allow} },
		Call:             refuseCall,
	}
	if run == nil {
		return spec
	}
	spec.Timeout = h.cfg.CallTimeout
	spec.Call = func(ctx context.Context, _ tool.Env, in tool.Input) (tool.Result, error) {
		var x featureInput
		if err := in.Decode(&x); err != nil {
			return tool.Result{}, err
		}
		text, err := run(ctx, x)
		if err != nil {
			if _, coded := errors.AsType[*capability.Error](err); coded {
				return tool.Result{}, err
			}
			return tool.Result{Content: h.cfg.Redactor.Redact(err.Error()), IsError: true}, nil
		}
		return tool.Result{Content: text}, nil
	}
	return spec
}

// loaded returns the loaded plugins, sorted by server name.
func (h *Host) loaded() []*Plugin {
	h.mu.Lock()
	out := make([]*Plugin, 0, len(h.plugins))
	for _, p := range h.plugins {
		out = append(out, p)
	}
	h.mu.Unlock()
	slices.SortFunc(out, func(a, b *Plugin) int { return strings.Compare(a.server, b.server) })
	return out
}

// isLoaded reports whether a plugin of server name server is loaded.
func (h *Host) isLoaded(server string) bool {
	if server == "" {
		return false
	}
	for _, p := range h.loaded() {
		if p.server == server {
			return true
		}
	}
	return false
}

// featured returns the loaded plugins with feature f (all when server is
// "", else the one of that server name), or an error naming the servers
// that have it.
func (h *Host) featuredPlugins(server string, has func(serverFeatures) bool) ([]*Plugin, error) {
	var out []*Plugin
	var names []string
	for _, p := range h.loaded() {
		if !has(p.features()) {
			continue
		}
		names = append(names, p.server)
		if server == "" || p.server == server {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no MCP server %q offers this; servers: %s", server, strings.Join(names, ", "))
	}
	return out, nil
}

// session starts p if needed (refusing a held plugin) and returns its
// session with a context bounded by CallTimeout.
func (p *Plugin) featureSession(ctx context.Context) (*mcp.ClientSession, error) {
	if err := p.ensureStarted(ctx); err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.session == nil {
		return nil, p.held
	}
	return p.session, nil
}

// featureErr ends a failed request: a hang or a broken session restarts
// the plugin as a failed call does; a server's error is the tool's.
func (p *Plugin) featureErr(ctx context.Context, tool string, err error) error {
	if ce, ok := errors.AsType[*capability.Error](err); ok && ctx.Err() == nil {
		return ce // our refusal of the server's input request (see call)
	}
	if ctx.Err() != nil {
		return p.callEnded(context.WithoutCancel(ctx), tool, p.h.cfg.CallTimeout)
	}
	if errors.Is(err, mcp.ErrConnectionClosed) {
		return p.crashError(ctx, tool, err)
	}
	if we, ok := serverError(err); ok {
		relayOf(ctx).set(nil, relayedError(p.h.cfg.Redactor, we))
	}
	return fmt.Errorf("%s: %s", p.server, truncate(err.Error(), 1024))
}

// bounded collects text up to MaxOutput bytes, then marks the cut.
type bounded struct {
	b   strings.Builder
	max int
	cut bool
}

func (w *bounded) add(s string) {
	if w.cut {
		return
	}
	if w.b.Len()+len(s) > w.max {
		w.b.WriteString(s[:max(0, w.max-w.b.Len())])
		w.b.WriteString(fmt.Sprintf("\n[cut: more than %d bytes]", w.max))
		w.cut = true
		return
	}
	w.b.WriteString(s)
}

// resourceEntry is one listed resource or resource template.
type resourceEntry struct {
	Server      string `json:"server"`
	URI         string `json:"uri,omitempty"`
	URITemplate string `json:"uriTemplate,omitempty"`
	Name        string `json:"name"`
	MIMEType    string `json:"mimeType,omitempty"`
	Description string `json:"description,omitempty"`
}

func (h *Host) listResources(ctx context.Context, in featureInput) (string, error) {
	ps, err := h.featuredPlugins(in.Server, func(f serverFeatures) bool { return f.Resources })
	if err != nil && h.isLoaded(in.Server) {
		// A client's probe of a server without resources: none.
		relayOf(ctx).set(&mcp.ListResourcesResult{Resources: []*mcp.Resource{}}, nil)
		return "[]", nil
	}
	if err != nil {
		return "", err
	}
	var out []resourceEntry
	var raw []*mcp.Resource
	var rawTemplates []*mcp.ResourceTemplate
	var first *mcp.ListResourcesResult
	var firstT *mcp.ListResourceTemplatesResult
	for _, p := range ps {
		err := h.withFeatureSession(ctx, p, func(cctx context.Context, s *mcp.ClientSession) error {
			var err error
			out, err = collect(out, pagesOf(cctx, func(ctx context.Context, c string) (*mcp.ListResourcesResult, error) {
				return s.ListResources(ctx, &mcp.ListResourcesParams{Meta: requestMeta(ctx, nil), Cursor: c})
			}, func(r *mcp.ListResourcesResult) ([]*mcp.Resource, string) { return r.Resources, r.NextCursor }, &first), func(r *mcp.Resource) resourceEntry {
				raw = append(raw, r)
				return resourceEntry{Server: p.server, URI: r.URI, Name: r.Name, MIMEType: r.MIMEType, Description: truncate(r.Description, 256)}
			})
			if err != nil {
				return p.featureErr(cctx, ListResourcesTool, err)
			}
			// Templates are optional: an error ends their list only.
			out, _ = collect(out, pagesOf(cctx, func(ctx context.Context, c string) (*mcp.ListResourceTemplatesResult, error) {
				return s.ListResourceTemplates(ctx, &mcp.ListResourceTemplatesParams{Meta: requestMeta(ctx, nil), Cursor: c})
			}, func(r *mcp.ListResourceTemplatesResult) ([]*mcp.ResourceTemplate, string) {
				return r.ResourceTemplates, r.NextCursor
			}, &firstT), func(r *mcp.ResourceTemplate) resourceEntry {
				rawTemplates = append(rawTemplates, r)
				return resourceEntry{Server: p.server, URITemplate: r.URITemplate, Name: r.Name, MIMEType: r.MIMEType, Description: truncate(r.Description, 256)}
			})
			return nil
		})
		if err != nil {
			return "", err
		}
	}
	if r := relayOf(ctx); r != nil {
		for _, x := range raw {
			redactMeta(h.cfg.Redactor, x.Meta)
		}
		r.set(listed(first, func(l *mcp.ListResourcesResult) { l.Resources, l.NextCursor = raw, "" }), nil)
		r.mu.Lock()
		r.templates = listed(firstT, func(l *mcp.ListResourceTemplatesResult) { l.ResourceTemplates, l.NextCursor = rawTemplates, "" })
		r.mu.Unlock()
	}
	return h.boundedJSON(out), nil
}

func (h *Host) readResource(ctx context.Context, in featureInput) (string, error) {
	if in.Server == "" || in.URI == "" {
		return "", errors.New("server and uri are required")
	}
	p, s, err := h.featureServer(ctx, in.Server, func(f serverFeatures) bool { return f.Resources })
	if err != nil {
		return "", err
	}
	cctx, cancel := context.WithTimeout(ctx, h.cfg.CallTimeout)
	defer cancel()
	res, err := s.ReadResource(cctx, &mcp.ReadResourceParams{Meta: requestMeta(ctx, nil), URI: in.URI})
	if err != nil {
		return "", p.featureErr(cctx, ReadResourceTool, err)
	}
	defer func() {
		if r := relayOf(ctx); r != nil {
			for _, c := range res.Contents {
				redactResource(h.cfg.Redactor, c)
			}
			redactMeta(h.cfg.Redactor, res.Meta)
			r.set(res, nil)
		}
	}()
	w := bounded{max: h.cfg.MaxOutput}
	for i, c := range res.Contents {
		if i > 0 {
			w.add("\n")
		}
		if c.Blob != nil || c.Text == "" && c.MIMEType != "" && !strings.HasPrefix(c.MIMEType, "text/") {
			w.add(fmt.Sprintf("[binary resource %s: %s, %d bytes, not shown]", c.URI, orUnknown(c.MIMEType), len(c.Blob)))
			continue
		}
		w.add(c.Text)
	}
	return w.b.String(), nil
}

func orUnknown(mime string) string {
	if mime == "" {
		return "unknown type"
	}
	return mime
}

// promptEntry is one listed prompt.
type promptEntry struct {
	Server      string      `json:"server"`
	Name        string      `json:"name"`
	Description string      `json:"description,omitempty"`
	Arguments   []promptArg `json:"arguments,omitempty"`
}

type promptArg struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Required    bool   `json:"required,omitempty"`
}

func (h *Host) listPrompts(ctx context.Context, in featureInput) (string, error) {
	ps, err := h.featuredPlugins(in.Server, func(f serverFeatures) bool { return f.Prompts })
	if err != nil && h.isLoaded(in.Server) {
		// A client's probe of a server without prompts: none.
		relayOf(ctx).set(&mcp.ListPromptsResult{Prompts: []*mcp.Prompt{}}, nil)
		return "[]", nil
	}
	if err != nil {
		return "", err
	}
	var out []promptEntry
	var raw []*mcp.Prompt
	var first *mcp.ListPromptsResult
	for _, p := range ps {
		err := h.withFeatureSession(ctx, p, func(cctx context.Context, s *mcp.ClientSession) error {
			var err error
			out, err = collect(out, pagesOf(cctx, func(ctx context.Context, c string) (*mcp.ListPromptsResult, error) {
				return s.ListPrompts(ctx, &mcp.ListPromptsParams{Meta: requestMeta(ctx, nil), Cursor: c})
			}, func(r *mcp.ListPromptsResult) ([]*mcp.Prompt, string) { return r.Prompts, r.NextCursor }, &first), func(pr *mcp.Prompt) promptEntry {
				raw = append(raw, pr)
				e := promptEntry{Server: p.server, Name: pr.Name, Description: truncate(pr.Description, 256)}
				for _, a := range pr.Arguments {
					e.Arguments = append(e.Arguments, promptArg{Name: a.Name, Description: truncate(a.Description, 256), Required: a.Required})
				}
				return e
			})
			if err != nil {
				return p.featureErr(cctx, ListPromptsTool, err)
			}
			return nil
		})
		if err != nil {
			return "", err
		}
	}
	if r := relayOf(ctx); r != nil {
		r.set(listed(first, func(l *mcp.ListPromptsResult) { l.Prompts, l.NextCursor = raw, "" }), nil)
	}
	return h.boundedJSON(out), nil
}

func (h *Host) getPrompt(ctx context.Context, in featureInput) (string, error) {
	if in.Server == "" || in.Name == "" {
		return "", errors.New("server and name are required")
	}
	p, s, err := h.featureServer(ctx, in.Server, func(f serverFeatures) bool { return f.Prompts })
	if err != nil {
		return "", err
	}
	cctx, cancel := context.WithTimeout(ctx, h.cfg.CallTimeout)
	defer cancel()
	res, err := s.GetPrompt(cctx, &mcp.GetPromptParams{Meta: requestMeta(ctx, nil), Name: in.Name, Arguments: in.Arguments})
	if err != nil {
		return "", p.featureErr(cctx, GetPromptTool, err)
	}
	defer func() {
		if r := relayOf(ctx); r != nil {
			for _, m := range res.Messages {
				redactContent(h.cfg.Redactor, m.Content)
			}
			redactMeta(h.cfg.Redactor, res.Meta)
			r.set(res, nil)
		}
	}()
	w := bounded{max: h.cfg.MaxOutput}
	if res.Description != "" {
		w.add(truncate(res.Description, 1024) + "\n")
	}
	for _, m := range res.Messages {
		w.add("[" + string(m.Role) + "] ")
		switch c := m.Content.(type) {
		case *mcp.TextContent:
			w.add(c.Text)
		case *mcp.EmbeddedResource:
			if c.Resource != nil && c.Resource.Blob == nil {
				w.add(fmt.Sprintf("[resource %s]\n%s", c.Resource.URI, c.Resource.Text))
			} else if c.Resource != nil {
				w.add(fmt.Sprintf("[binary resource %s: %s, %d bytes, not shown]", c.Resource.URI, orUnknown(c.Resource.MIMEType), len(c.Resource.Blob)))
			}
		case *mcp.ImageContent:
			w.add(fmt.Sprintf("[image: %s, %d bytes, not shown]", orUnknown(c.MIMEType), len(c.Data)))
		case *mcp.AudioContent:
			w.add(fmt.Sprintf("[audio: %s, %d bytes, not shown]", orUnknown(c.MIMEType), len(c.Data)))
		default:
			w.add("[content not shown]")
		}
		w.add("\n")
	}
	return w.b.String(), nil
}

// featureServer is the one plugin named server whose server has the
// feature, with its session.
func (h *Host) featureServer(ctx context.Context, server string, has func(serverFeatures) bool) (*Plugin, *mcp.ClientSession, error) {
	ps, err := h.featuredPlugins(server, has)
	if err != nil {
		return nil, nil, err
	}
	s, err := ps[0].featureSession(ctx)
	if err != nil {
		return nil, nil, err
	}
	return ps[0], s, nil
}

// boundedJSON is v as indented JSON, bounded by MaxOutput.
func (h *Host) boundedJSON(v any) string {
	b, _ := json.MarshalIndent(v, "", " ")
	w := bounded{max: h.cfg.MaxOutput}
	w.add(string(b))
	return w.b.String()
}

// withFeatureSession runs f with p's session under the call timeout.
func (h *Host) withFeatureSession(ctx context.Context, p *Plugin, f func(context.Context, *mcp.ClientSession) error) error {
	s, err := p.featureSession(ctx)
	if err != nil {
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, h.cfg.CallTimeout)
	defer cancel()
	return f(cctx, s)
}

// collect appends to out, converted by f, the items of seq up to
// maxListed of them; an error from seq ends it.
func collect[T, E any](out []E, seq iter.Seq2[T, error], f func(T) E) ([]E, error) {
	n := 0
	for x, err := range seq {
		if err != nil {
			return out, err
		}
		if n++; n > maxListed {
			break
		}
		out = append(out, f(x))
	}
	return out, nil
}

// pagesOf yields the items of every page of a list (list, cursor after
// cursor), keeping the first page's result in *first.
func pagesOf[R any, T any](ctx context.Context, list func(context.Context, string) (*R, error), items func(*R) ([]T, string), first **R) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		cursor := ""
		for {
			r, err := list(ctx, cursor)
			if err != nil {
				var zero T
				yield(zero, err)
				return
			}
			if *first == nil {
				*first = r
			}
			ts, next := items(r)
			for _, t := range ts {
				if !yield(t, nil) {
					return
				}
			}
			if next == "" {
				return
			}
			cursor = next
		}
	}
}

// listed is a relay's list result: the first page's as the server sent
// it (its _meta and cache fields), holding every item (set) and no
// cursor.
func listed[R any](first *R, set func(*R)) *R {
	out := new(R)
	if first != nil {
		*out = *first
	}
	set(out)
	return out
}
