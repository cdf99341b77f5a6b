package host

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/norma-run/norma/audit"
	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/manifest"
	"github.com/norma-run/norma/tool"
)

// ToolName is the registry name of a plugin tool: mcp__SERVER__TOOL, as
// Claude Code names them, where SERVER is the plugin's server name
// ([plugin.State.ServerName]: the name given to `norma mcp add`, else the
// plugin id).
func ToolName(server, name string) string { return "mcp__" + server + "__" + name }

// Tools returns the plugin's tools as CoreTools for the registry. Their
// security metadata comes from the manifest, never from the server. They
// are the only way to call a plugin tool: register them with the gate.
func (p *Plugin) Tools() ([]tool.CoreTool, error) {
	var out []tool.CoreTool
	p.mu.Lock()
	pins := maps.Clone(p.tools)
	p.mu.Unlock()
	for _, mt := range p.m.Tools {
		pt, ok := pins[mt.Name]
		if !ok {
			continue // declared but not served: nothing to call
		}
		call := func(ctx context.Context, env tool.Env, in tool.Input) (tool.Result, error) {
			return p.call(ctx, mt.Name, in.Raw(), env.IdempotencyKey())
		}
		// The host ends a call at its timeout (and kills the tree); the
		// gate's deadline is a backstop a little later, so that the host's
		// coded error and the kill come first.
		t, err := tool.Build(toolSpec(p.server, p.m, mt, pt.Description, pt.InputSchema, p.timeout(mt.Name)+gateGrace, call))
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// toolSpec is the registry spec of m's declared tool mt, with the
// description and input schema the server gave (or stand-ins), running
// call. Everything the gate judges comes from the manifest.
func toolSpec(server string, m *manifest.Manifest, mt manifest.Tool, description string, schema json.RawMessage, timeout time.Duration,
	call func(context.Context, tool.Env, tool.Input) (tool.Result, error)) tool.Spec {
	writes := mt.WritesExternal()
	readOnly := !writes && mt.Effects.Data != "send"
	return tool.Spec{
		Name:            ToolName(server, mt.Name),
		Description:     description,
		Prompt:          fmt.Sprintf("Plugin %s tool %s. %s", m.Ref(), mt.Name, mt.Description),
		Schema:          schema,
		ReadOnly:        func(tool.Input) bool { return readOnly },
		ConcurrencySafe: func(tool.Input) bool { return readOnly },
		CheckPermissions: func(context.Context, tool.Input) tool.Permission {
			if mt.NeedsApproval() {
				return tool.Permission{Behavior: tool.Ask, Reason: "the manifest asks for approval on every call"}
			}
			return tool.Permission{Behavior: tool.Allow}
		},
		Accesses: func(in tool.Input) ([]tool.Access, error) {
			if !writes {
				return nil, nil
			}
			return []tool.Access{{Kind: capability.ExternalWrite, Tool: mt.Name, Target: Target(in)}}, nil
		},
		Timeout: timeout,
		Call:    call,
	}
}

// gateGrace is how much later than the host's own timeout of a call the
// gate's deadline falls.
const gateGrace = 5 * time.Second

// timeout is the timeout of a call of tool: Config.ToolTimeouts by its
// registry name, else Config.CallTimeout.
func (p *Plugin) timeout(tool string) time.Duration {
	if d := p.h.cfg.ToolTimeouts[ToolName(p.server, tool)]; d > 0 {
		return d
	}
	return p.h.cfg.CallTimeout
}

// Target is the short description of what an external write touches, as
// the gate and the approval prompt show it: "owner#42" for issue-style
// inputs (a target, repo or owner field, with number when present), else
// "-". `norma policy explain --tool` uses it too, so both name the same
// target.
func Target(in tool.Input) string {
	var m map[string]any
	if in.Decode(&m) != nil {
		return "-"
	}
	for _, k := range []string{"target", "repo", "owner"} {
		if s, ok := m[k].(string); ok {
			if n, ok := m["number"]; ok {
				return fmt.Sprintf("%s#%v", s, n)
			}
			return s
		}
	}
	return "-"
}

// call calls a declared tool on the plugin; only the CoreTools of Tools
// (behind the gate) and this package's tests call it. The idempotency key
// travels as MCP request metadata (norma/idempotency_key).
func (p *Plugin) call(ctx context.Context, name string, args json.RawMessage, idem string) (tool.Result, error) {
	mt, ok := p.m.Tool(name)
	if !ok {
		return tool.Result{}, capability.Denied(capability.ReasonToolUndeclared, name, "not in the manifest")
	}
	if err := p.ensureStarted(ctx); err != nil {
		return tool.Result{}, err
	}
	p.mu.Lock()
	session := p.session
	p.mu.Unlock()
	timeout := p.timeout(name)
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if mt.WritesExternal() && idem != "" {
		// The gate let this external-write call run (approved, or allowed
		// by an explicit rule): it may make one approval_required request.
		select {
		case p.credits <- idem:
		default:
		}
		defer p.drainCredit(idem)
	}
	params := &mcp.CallToolParams{Name: name, Arguments: args}
	var own mcp.Meta
	if idem != "" {
		own = mcp.Meta{"norma/idempotency_key": idem}
	}
	params.Meta = requestMeta(ctx, own)
	// A progress token, so that the server may report progress (audited
	// and shown to the person as notices, never given to the model; a
	// door's relay gets them under its client's token).
	tok := p.h.progress.Add(1)
	params.SetProgressToken(tok)
	defer p.h.trackProgress(relayOf(ctx), tok)()
	res, err := session.CallTool(cctx, params)
	if ce, ok := errors.AsType[*capability.Error](err); ok && cctx.Err() == nil {
		// Our own refusal of what the server asked within the call (its
		// input requests, on the 2026-07-28 protocol): the call fails
		// with it, and the plugin runs on.
		return tool.Result{}, ce
	}
	if we, ok := serverError(err); ok && cctx.Err() == nil {
		// The server answered with a JSON-RPC error: it is alive, the
		// call failed. A door relays the error with its code.
		red := p.h.cfg.Redactor
		relayOf(ctx).set(nil, relayedError(red, we))
		return tool.Result{Content: fmt.Sprintf("the server answered error %d: %s", we.Code, truncate(we.Message, 1024)), IsError: true}, nil
	}
	if err != nil {
		if cctx.Err() != nil {
			// A hang: the call's deadline passed, or its caller gave up.
			return tool.Result{}, p.callEnded(ctx, name, timeout)
		}
		// A crash or a protocol error: kill the tree, restart with backoff.
		return tool.Result{}, p.crashError(ctx, name, err)
	}
	if held := p.isHeld(); held != nil {
		return tool.Result{}, held
	}
	return p.result(ctx, name, res)
}

// result collects the text of res, bounded by MaxOutput: a larger result
// restarts the plugin. The gate redacts it (step 7), as every tool's. A
// door's relay gets res itself, redacted (text, structured content,
// _meta), after the text for the gate was taken from it.
func (p *Plugin) result(ctx context.Context, name string, res *mcp.CallToolResult) (tool.Result, error) {
	if resultSize(res) > p.h.cfg.MaxOutput {
		p.crashed(ctx, name, errors.New("output flood"))
		return tool.Result{}, capability.Denied(ReasonOutputTooLarge, name, fmt.Sprintf("result larger than %d bytes", p.h.cfg.MaxOutput))
	}
	var text string
	var b strings.Builder
	n := 0
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			if n++; n == 1 {
				text = t.Text // one block, the common case: not copied
				continue
			}
			if n == 2 {
				b.WriteString(text)
			}
			b.WriteString(t.Text)
		}
	}
	if n > 1 {
		text = b.String()
	}
	if r := relayOf(ctx); r != nil {
		redactToolResult(p.h.cfg.Redactor, res)
		r.set(res, nil)
	}
	return tool.Result{Content: text, IsError: res.IsError}, nil
}

// checkToolsLocked lists the served tools when the process starts: every
// one must be declared (else the plugin fails to load, TOOL_UNDECLARED),
// and each must match its pin or be seen for the first time (see
// admitLocked).
func (p *Plugin) checkToolsLocked(ctx context.Context) error {
	res, err := p.session.ListTools(ctx, nil)
	if err != nil {
		return &capability.Error{Decision: capability.Decision{Mode: capability.Deny, Reason: ReasonPluginStart, Layer: "host"}, Detail: "tools/list: " + err.Error()}
	}
	served, undeclared := p.served(res.Tools)
	p.servedRaw = declaredTools(p.m, res)
	if len(undeclared) > 0 {
		detail := "tools not in the manifest: " + strings.Join(undeclared, ", ")
		p.h.cfg.Audit.Record(context.WithoutCancel(ctx), audit.Event{Type: audit.TypeCapabilityDecision, RunID: p.h.cfg.RunID,
			Plugin: p.m.ID, PluginVersion: p.m.Version, ManifestDigest: p.m.Digest(), Decision: "deny",
			Reason: string(capability.ReasonToolUndeclared), Layer: string(capability.LayerPlugin), Detail: map[string]string{"tools": strings.Join(undeclared, ",")}})
		p.tools = nil
		return &capability.Error{Decision: capability.Decision{Mode: capability.Deny, Reason: capability.ReasonToolUndeclared, Layer: capability.LayerPlugin}, Detail: detail}
	}
	p.caps = serverCaps(p.session)
	if detail := p.admitLocked(served); detail != "" {
		p.mu.Unlock()
		err := p.hold(ctx, ReasonToolsChanged, detail)
		p.mu.Lock()
		return err
	}
	return p.writePins()
}

// admitLocked is the one rule for a list of served tools, at start and
// after a tools/list_changed: every served tool is declared (the caller
// checked) and either matches its pin or is seen for the first time since
// consent, and is then pinned. It returns why the list is refused, or "".
// A pinned tool that is no longer served is kept pinned: it comes back
// only as it was.
func (p *Plugin) admitLocked(served map[string]pinnedTool) string {
	var changed []string
	for name, pt := range served {
		if old, ok := p.tools[name]; ok && old.Digest != pt.Digest {
			changed = append(changed, name)
		}
	}
	if len(changed) > 0 {
		slices.Sort(changed)
		return "tool " + strings.Join(changed, ", ") + " changed since consent"
	}
	if p.tools == nil {
		p.tools = map[string]pinnedTool{}
	}
	for name, pt := range served {
		p.tools[name] = pt
	}
	return ""
}

// toolsChanged handles a tools/list_changed of session s: the new list is
// admitted by admitLocked, as at start; an undeclared tool or a changed
// pinned one holds the plugin. A tool first seen now is pinned, and
// callable from the next Load: the session registered the plugin's tools
// when it began, and a registry does not grow mid-run.
func (p *Plugin) toolsChanged(ctx context.Context, s *mcp.ClientSession) {
	p.relist.Lock()
	defer p.relist.Unlock()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	res, err := s.ListTools(ctx, nil)
	p.mu.Lock()
	if p.session != s || p.held != nil {
		p.mu.Unlock() // a stopped session, or already held
		return
	}
	if err != nil {
		p.mu.Unlock()
		p.hold(ctx, ReasonToolsChanged, "the plugin changed its tool list and tools/list failed: "+p.h.cfg.Redactor.Redact(err.Error()))
		return
	}
	served, undeclared := p.served(res.Tools)
	detail := ""
	if len(undeclared) > 0 {
		detail = "the plugin added tools not in the manifest: " + strings.Join(undeclared, ", ")
	} else {
		detail = p.admitLocked(served)
	}
	var werr error
	if detail == "" {
		werr = p.writePins()
		p.servedRaw = declaredTools(p.m, res)
	}
	p.mu.Unlock()
	if detail != "" {
		p.hold(ctx, ReasonToolsChanged, detail)
		return
	}
	if werr != nil {
		p.hold(ctx, ReasonToolsChanged, "the new tools cannot be pinned: "+werr.Error())
		return
	}
	p.relayNotification(ctx, Notification{Method: MethodToolsListChanged})
}

// declaredTools is the server's tools/list result, holding the tools
// that m declares, in their order.
func declaredTools(m *manifest.Manifest, res *mcp.ListToolsResult) *mcp.ListToolsResult {
	out := *res
	out.Tools = make([]*mcp.Tool, 0, len(res.Tools))
	for _, t := range res.Tools {
		if _, ok := m.Tool(t.Name); ok {
			out.Tools = append(out.Tools, t)
		}
	}
	return &out
}

// served returns the declared tools among ts with their digests, and the
// sorted names of the undeclared ones.
func (p *Plugin) served(ts []*mcp.Tool) (map[string]pinnedTool, []string) {
	served := map[string]pinnedTool{}
	var undeclared []string
	for _, t := range ts {
		if _, ok := p.m.Tool(t.Name); !ok {
			undeclared = append(undeclared, t.Name)
			continue
		}
		schema, _ := json.Marshal(t.InputSchema)
		pt := pinnedTool{Name: t.Name, Description: t.Description, InputSchema: schema}
		sum := sha256.Sum256(bytes.Join([][]byte{[]byte(t.Name), []byte(t.Description), schema}, []byte{0}))
		pt.Digest = "sha256:" + hex.EncodeToString(sum[:])
		served[t.Name] = pt
	}
	slices.Sort(undeclared)
	return served, undeclared
}
