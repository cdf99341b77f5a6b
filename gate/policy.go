package gate

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/norma-run/norma/agentfiles"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/guard/fspath"
	"github.com/norma-run/norma/guard/netguard"
	"github.com/norma-run/norma/guard/netguard/weburl"
	"github.com/norma-run/norma/internal/shellcmd"
	"github.com/norma-run/norma/tool"
)

// decide is step 3 for the current input: the tool's own judgment, the
// permission rules and mode, and the capability decision of the policy for
// every normalized request. It sets x.reqs, x.known and x.unknown.
//
// Order: a tool hard-deny, a request that cannot be normalized, and a
// deny rule win over everything, bypass included; then plan denies
// mutating calls; then the capability policy (its denials and its own
// approval requirements stand in every mode); then ask rules, allow rules,
// the tool's judgment and the mode. dontAsk is applied by the caller.
func (x *exec) decide(ctx context.Context) capability.Decision {
	perm, d, ok := x.declare(ctx)
	if !ok {
		return d
	}
	if d = x.capability(ctx); d.Mode == capability.Deny {
		return d
	}
	if ed, ok := x.egress(); ok {
		return ed
	}
	return x.harness(d, perm)
}

// declare asks the tool for its judgment and its accesses, normalizes them
// into x.reqs, and applies what wins over everything: a hard deny, an
// access that cannot be normalized, a deny rule and plan mode.
func (x *exec) declare(ctx context.Context) (tool.Permission, capability.Decision, bool) {
	e, in := x.entry, x.in
	perm := e.CheckPermissions(ctx, in)
	if perm.Behavior == tool.Deny {
		return perm, deny(capability.ReasonToolDenied, "tool", boundMsg(perm.Reason, 200), e.Name()), false
	}
	acc, declared, err := e.Accesses(in)
	if err != nil {
		x.reqs, x.known, x.req0 = nil, false, ""
		if ce, ok := errors.AsType[*capability.Error](err); ok && ce.Decision.Mode == capability.Deny && ce.Decision.Reason != "" {
			// The tool refused the input with a code of its own (a Glob
			// pattern that leaves the workspace): decided here, before
			// the call, so that an unconfined caller (agenthook) that
			// runs the call itself is refused too.
			return perm, deny(ce.Decision.Reason, "tool", boundMsg(ce.Detail, 200), e.Name()), false
		}
		return perm, deny(capability.ReasonInvalidRequest, "tool", "access declaration failed", e.Name()), false
	}
	var u *unconfined
	if x.shell != nil {
		u = x.g.unconfined(*x.shell)
	}
	reqs, unknown, shape, bad := x.g.normalize(e.Name(), acc, u)
	if bad == nil && u != nil {
		var why string
		x.named, why, bad = u.namedFiles(acc)
		if unknown == "" {
			unknown = why
		}
	}
	// A compound command line (shellcmd.Effects.Compound: $(...), a
	// loop, a subshell) is known but not covered by an allow rule of its
	// commands: Claude Code asks for it.
	x.reqs, x.known, x.unknown, x.req0 = reqs, declared && unknown == "" && !shape.compound, unknown, ""
	x.rewritten = shape.rewritten
	if bad != nil {
		return perm, *bad, false
	}
	if u != nil {
		under, ok := x.g.filesUnder(acc)
		if !ok {
			return perm, deny(capability.ReasonHookSearchTooWide, "gate", fmt.Sprintf("more than %d files under the path", maxUnder), firstReq(reqs, e.Name())), false
		}
		x.named = append(x.named, under...)
	}
	if r, ok := x.g.rules.Deny(e.Name(), reqs); ok {
		return perm, deny(capability.ReasonRuleDenied, "rules", r, firstReq(reqs, e.Name())), false
	}
	if r, ok := x.g.rules.Deny("", x.named); ok {
		return perm, deny(capability.ReasonRuleDenied, "rules", r, firstReq(x.named, e.Name())), false
	}
	names, ok := e.RuleNames(in)
	if !ok {
		return perm, deny(capability.ReasonInvalidRequest, "tool", "rule names failed", e.Name()), false
	}
	x.names = names
	for _, n := range names {
		if r, ok := x.g.rules.Deny(n, nil); ok {
			return perm, deny(capability.ReasonRuleDenied, "rules", r, n), false
		}
	}
	if x.mode == ModePlan && !e.ReadOnly(in) {
		return perm, deny(capability.ReasonModeDenied, "mode", "mode:plan", e.Name()), false
	}
	return perm, capability.Decision{}, true
}

// explainer is a capability.Decider that can also give every layer's answer; explain
// uses it for the trace.
type explainer interface {
	Explain(ctx context.Context, req capability.Request) capability.Decision
}

// capability is the capability policy's decision: the most restrictive
// over all requests (Allow when there are none).
func (x *exec) capability(ctx context.Context) capability.Decision {
	d := capability.Decision{Mode: capability.Allow, Reason: capability.ReasonAllowed, Request: x.entry.Name()}
	ex, tracing := x.pol.(explainer)
	tracing = tracing && x.trace != nil
	for i := range x.reqs {
		var pd capability.Decision
		if tracing {
			pd = ex.Explain(ctx, x.reqs[i])
			*x.trace = append(*x.trace, pd.Trace...)
		} else {
			pd = x.pol.Decide(ctx, x.reqs[i])
		}
		if pd.Mode != capability.Deny {
			if ad, ok := x.addrDenied(ctx, &x.reqs[i]); ok {
				pd = ad
			}
		}
		if pd.Mode < d.Mode || i == 0 {
			d = pd
			if d.Request == "" {
				d.Request = x.reqString(i)
			}
		}
		if d.Mode == capability.Deny {
			break
		}
	}
	if d.Mode != capability.Deny {
		if nd, ok := x.namedDenied(ctx); ok {
			d = nd
		}
	}
	if d.Mode != capability.Deny {
		if fd, ok := x.agentFloor(); ok && fd.Mode < d.Mode {
			d = fd
		}
	}
	d.Trace = nil
	return d
}

// addrDenied refuses a network request to a literal IP address that the
// network guard would refuse to dial (private, loopback, link-local,
// metadata, ...; netguard.CheckAddr with the policy's allow_private, as
// the dialer has them) once the policy allowed the destination, in the
// order of a run (the destination rules, then the dial). The decision is
// then what the dial would refuse, and it stands for a call that does not
// dial through Norma's guard (a fetch another agent makes, package
// agenthook). A host name is left to the guard at connect time, which
// resolves it; for an unconfined call, which meets no guard, the name is
// resolved now and checked as the dialer checks it (netguard.CheckHost:
// any refused address refuses, a lookup that fails or takes longer than
// resolveTimeout refuses).
func (x *exec) addrDenied(ctx context.Context, r *capability.Request) (capability.Decision, bool) {
	if r.Kind != capability.NetRequest {
		return capability.Decision{}, false
	}
	u, err := url.Parse(r.Origin)
	if err != nil {
		return capability.Decision{}, false
	}
	var allow []netip.Prefix
	if ap, ok := x.pol.(interface{ AllowPrivate() []netip.Prefix }); ok {
		allow = ap.AllowPrivate()
	}
	a, err := netip.ParseAddr(u.Hostname())
	switch {
	case err == nil:
		err = netguard.CheckAddr(a, allow)
	case x.shell != nil:
		rctx, cancel := context.WithTimeout(ctx, resolveTimeout)
		err = netguard.CheckHost(rctx, x.g.resolver, u.Hostname(), allow)
		cancel()
	default:
		return capability.Decision{}, false
	}
	ce, ok := errors.AsType[*capability.Error](err)
	if !ok {
		return capability.Decision{}, false
	}
	d := ce.Decision
	d.Layer, d.Request = capability.LayerGuard, r.String()
	if x.trace != nil {
		*x.trace = append(*x.trace, capability.LayerResult{Layer: d.Layer, Mode: d.Mode, Reason: d.Reason})
	}
	return d, true
}

// namedDenied is the policy's deny of a file an unconfined call's command
// names, if any: a command that names a file the policy denies reading
// (cat .env, cp .env x, grep -f .env) is refused, whatever it does with
// it. The sandbox hides such files from the commands Norma runs; this
// refusal is what stands for a command that another agent runs outside it
// (package agenthook).
func (x *exec) namedDenied(ctx context.Context) (capability.Decision, bool) {
	for i := range x.named {
		pd := x.pol.Decide(ctx, x.named[i])
		if pd.Mode == capability.Deny {
			if pd.Request == "" {
				pd.Request = x.named[i].String()
			}
			if x.trace != nil {
				*x.trace = append(*x.trace, capability.LayerResult{Layer: pd.Layer, Mode: pd.Mode, Reason: pd.Reason, Rule: pd.Rule})
			}
			return pd, true
		}
	}
	return capability.Decision{}, false
}

// harness is the permission of the harness — mode, ask and allow rules,
// the tool's judgment — combined with the capability decision d.
func (x *exec) harness(d capability.Decision, perm tool.Permission) capability.Decision {
	name, reqs := x.entry.Name(), x.reqs
	harness := capability.Allow
	var layer capability.Layer
	rule, reason := "", capability.ReasonApprovalRequired
	switch {
	case x.mode == ModeBypass && x.unknown == "":
		layer, rule = "mode", "mode:bypassPermissions"
	case x.unknown != "":
		harness, layer, rule, reason = capability.ApprovalRequired, "rules", x.unknown, capability.ReasonCommandUnparseable
	default:
		if r, ok := x.g.rules.Ask(name, reqs); ok {
			harness, layer, rule = capability.ApprovalRequired, "rules", r
		} else if r, ok := x.g.rules.Ask("", x.named); ok {
			// A file the command names (cat notes/a.txt under
			// ask: Read(./notes/**)), as a deny rule denies it.
			harness, layer, rule = capability.ApprovalRequired, "rules", r
		} else if r, ok := x.askNames(); ok {
			harness, layer, rule = capability.ApprovalRequired, "rules", r
		} else if p, ok := protectedWrite(reqs); ok {
			// .git/, .claude/, .bashrc, ...: asked whatever allows it.
			harness, layer, rule = capability.ApprovalRequired, "mode", "protected:"+p
		} else if r, ok := x.allow(name, reqs); ok {
			layer, rule = "rules", r
		} else if perm.Behavior == tool.Allow {
			layer, rule = "tool", "tool:checkPermissions"
		} else if x.mode == ModeAcceptEdits && x.known && x.editsAccepted(reqs) {
			layer, rule = "mode", "mode:acceptEdits"
		} else {
			harness, layer, rule = capability.ApprovalRequired, "tool", "tool:"+perm.Behavior.String()
		}
	}
	if harness < d.Mode {
		d.Mode, d.Reason, d.Layer, d.Rule = harness, reason, layer, rule
	} else if d.Mode == capability.Allow && d.Rule == "" {
		d.Layer, d.Rule = layer, rule
	}
	return d
}

func deny(reason capability.Reason, layer capability.Layer, rule, req string) capability.Decision {
	return capability.Decision{Mode: capability.Deny, Reason: reason, Layer: layer, Rule: rule, Request: req}
}

func firstReq(reqs []capability.Request, name string) string {
	if len(reqs) > 0 {
		return reqs[0].String()
	}
	return name
}

// normalize turns declared accesses into normalized capability requests:
// the one derivation of a call's requests and target, which the policy,
// the permission rules, the approval preview, the audit event and Explain
// all see. unknown is non-empty when part of the effect cannot be known (an
// unparseable command); bad is a denial for an access that cannot be
// normalized (a path escaping the workspace, an invalid URL).
//
// For an unconfined call (u non-nil), a redirection's file is where the
// shell is when it opens it (cd followed), and one outside the workspace
// is refused as the sandbox would have kept it out (see unconfined).
func (g *Gate) normalize(toolName string, acc []tool.Access, u *unconfined) (reqs []capability.Request, unknown string, shape lineShape, bad *capability.Decision) {
	if len(acc) == 0 {
		return nil, "", shape, nil
	}
	reqs = make([]capability.Request, 0, len(acc))
	for _, a := range acc {
		var err error
		var what string
		switch a.Kind {
		case capability.ProcessSpawn:
			var why string
			var sh lineShape
			if reqs, why, sh, what, err = g.spawn(reqs, a, u); why != "" && unknown == "" {
				unknown = why
			}
			shape.compound = shape.compound || sh.compound
			shape.rewritten = shape.rewritten || sh.rewritten
		case capability.ExternalWrite:
			t := a.Tool
			if t == "" {
				t = toolName
			}
			reqs = append(reqs, capability.Request{Kind: a.Kind, Tool: t, Target: a.Target})
		case capability.FSRead, capability.FSWrite:
			n := len(reqs)
			if reqs, what, err = g.fsRequests(reqs, a.Kind, a.Path); err == nil && u != nil && a.Kind == capability.FSWrite {
				err = g.linkedWrite(reqs[n])
				what = reqs[n].String()
			}
		default:
			var r capability.Request
			if r, what, err = g.request(a); err == nil {
				reqs = append(reqs, r)
			}
		}
		if err != nil {
			return nil, "", shape, refusal(err, what)
		}
	}
	return reqs, unknown, shape, nil
}

// lineShape is what a command line's form keeps allow rules from
// covering, as in Claude Code: a compound line (shellcmd.Effects.Compound)
// is covered by no rule of its commands, a rewritten one
// (shellcmd.Effects.Rewritten) by no exact rule.
type lineShape struct{ compound, rewritten bool }

// refusal is the denial of an access that cannot be normalized.
func refusal(err error, what string) *capability.Decision {
	r := capability.ReasonOf(err)
	if r == "" {
		r = capability.ReasonInvalidRequest
	}
	d := deny(r, capability.LayerGate, "", what)
	return &d
}

// errUnnormalizable is the cause of a refusal whose access has no reason
// of its own (an empty argv, an unknown kind).
var errUnnormalizable = capability.Denied(capability.ReasonInvalidRequest, "", "the access cannot be normalized")

// request normalizes a file, network or secret access; what names it in
// a refusal.
func (g *Gate) request(a tool.Access) (capability.Request, string, error) {
	switch a.Kind {
	case capability.NetRequest:
		u, err := weburl.Normalize(a.URL)
		m := strings.ToUpper(a.Method)
		if m == "" {
			m = "GET"
		}
		return capability.Request{Kind: a.Kind, Method: m, Origin: u.Origin, Path: u.Path}, "net.request", err
	case capability.SecretUse:
		o, err := weburl.NormalizeOrigin(a.Origin)
		if err == nil && a.Secret == "" {
			err = errUnnormalizable
		}
		return capability.Request{Kind: a.Kind, Secret: a.Secret, Origin: o}, "secret.use", err
	}
	return capability.Request{}, "unknown capability kind", errUnnormalizable
}

// spawn appends the requests of a process access: every program a shell
// command (or an exact argv) runs, and the files its redirections read and
// write. unknown names what cannot be known about it; shape is what its
// form keeps allow rules from covering.
func (g *Gate) spawn(reqs []capability.Request, a tool.Access, u *unconfined) (_ []capability.Request, unknown string, shape lineShape, what string, err error) {
	var se shellcmd.Effects
	switch {
	case a.Command != "":
		se = shellcmd.Parse(a.Command)
	case len(a.Argv) > 0:
		// Without a shell, argv is exact; a wrapper still hides nothing
		// from the deny rules.
		se = shellcmd.Argv(a.Argv)
	default:
		return reqs, "", shape, "process.spawn", errUnnormalizable
	}
	shape = lineShape{compound: se.Compound != "", rewritten: se.Rewritten}
	for _, argv := range se.Spawns {
		reqs = append(reqs, capability.Request{Kind: capability.ProcessSpawn, Argv: argv})
	}
	if u != nil {
		reqs, what, err = u.redirects(reqs, se)
		return reqs, se.Unknown, shape, what, err
	}
	for _, l := range [2]struct {
		k     capability.Kind
		paths []string
	}{{capability.FSRead, se.Reads}, {capability.FSWrite, se.Writes}} {
		for _, p := range l.paths {
			if reqs, what, err = g.fsRequests(reqs, l.k, p); err != nil {
				return reqs, "", shape, what, err
			}
		}
	}
	if reqs, what, err = g.argFiles(reqs, se); err != nil {
		return reqs, "", shape, what, err
	}
	return reqs, se.Unknown, shape, "", nil
}

// fsRequests appends the requests of a file access to p: its canonical
// path, and, when symbolic links make that differ from the name as given
// (cleaned lexically), that name too. The agent or the process opens the
// name; the policy's globs, the permission rules and the agent-file floor
// are written for names: a deny of .claude/settings.local.json must hold
// when .claude is a link to cfg, and a deny of cfg/** when cfg is reached
// as .claude. A path under the target of such a link is also requested by
// the link's name (agentfiles.Aliases): cfg/settings.json is what the
// agent loads as .claude/settings.json. Every request must be allowed,
// so any name matching a deny protects.
func (g *Gate) fsRequests(reqs []capability.Request, k capability.Kind, p string) ([]capability.Request, string, error) {
	np, err := g.path(p)
	if err != nil {
		return reqs, k.String() + " " + boundMsg(p, 200), err
	}
	reqs = append(reqs, capability.Request{Kind: k, Path: np})
	if lp, err := fspath.Clean(p); err == nil && lp != np {
		reqs = append(reqs, capability.Request{Kind: k, Path: lp})
	}
	if g.wsDir != "" {
		// A catalogued directory that links lead elsewhere (.claude → cfg):
		// cfg/settings.json is .claude/settings.json to the agent.
		for _, n := range agentfiles.Names(g.aliases.Get(g.wsDir), np) {
			reqs = append(reqs, capability.Request{Kind: k, Path: n})
		}
	}
	return reqs, "", nil
}

// linkedWrite refuses an unconfined write (another agent writes the file
// itself, perhaps in place) of a file with more than one name
// (HARDLINK_REFUSED): a second name of it may be an agent's file or a
// denied one, and the other names are not known. r is the write's
// canonical request.
func (g *Gate) linkedWrite(r capability.Request) error {
	if g.wsDir == "" || !hardLinked(filepath.Join(g.wsDir, filepath.FromSlash(r.Path))) {
		return nil
	}
	return capability.Denied(capability.ReasonHardlinkRefused, r.String(), "the file has more than one name")
}

// path canonicalizes a workspace path: resolved when possible, cleaned
// when it does not exist yet. A refusal (PATH_ESCAPE, ...) is returned.
func (g *Gate) path(p string) (string, error) {
	r, err := g.resolve(p)
	if err == nil {
		return r, nil
	}
	if capability.ReasonOf(err) != "" {
		return "", err
	}
	return fspath.Clean(p)
}

// askNames returns the first ask rule matching one of the call's further
// rule names (tool.RuleNamer).
func (x *exec) askNames() (string, bool) {
	for _, n := range x.names {
		if r, ok := x.g.rules.Ask(n, nil); ok {
			return r, true
		}
	}
	return "", false
}
