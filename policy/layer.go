package policy

import (
	"fmt"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/manifest"
)

func errorf(format string, args ...any) error { return fmt.Errorf("policy: "+format, args...) }

type layerKind uint8

const (
	allowList layerKind = iota // manifest, grant: not listed = not granted
	ceiling                    // workspace, run: absent = no constraint
	hostLayer                  // sandbox: what the host can enforce
)

// layer is one compiled layer.
type layer struct {
	name capability.Layer
	kind layerKind

	read, write, deny globList
	denyWrite         globList // a deny of fs.write alone (manifest.Filesystem.DenyWrite)
	readSet, writeSet bool

	net    *netIndex
	netSet bool

	secrets    map[string]secretRule
	secretsSet bool

	spawn     capability.Mode
	spawnSet  bool
	spawnRule string

	ext     capability.Mode
	extSet  bool
	extRule string

	tools map[string]toolRule // plugin layer only

	host Host
}

type secretRule struct {
	purpose string
	rule    string
}

type toolRule struct {
	writes   bool
	mode     capability.Mode
	rule     string
	declared bool
}

func compileLayer(name capability.Layer, kind layerKind, p manifest.Permissions) (*layer, error) {
	l := &layer{name: name, kind: kind}
	if fs := p.Filesystem; fs != nil {
		l.read, l.readSet = compileGlobs(string(name), "read", fs.Read), fs.Read != nil
		l.write, l.writeSet = compileGlobs(string(name), "write", fs.Write), fs.Write != nil
		l.deny = compileGlobs(string(name), "deny", fs.Deny)
		l.denyWrite = compileGlobs(string(name), "deny_write", fs.DenyWrite)
	}
	var err error
	if l.net, err = compileNet(name, p.Network); err != nil {
		return nil, err
	}
	l.netSet = p.Network != nil && p.Network.Requests != nil
	l.secretsSet = p.Secrets != nil
	l.secrets = make(map[string]secretRule, len(p.Secrets))
	for i, s := range p.Secrets {
		l.secrets[s.Name] = secretRule{purpose: s.Purpose, rule: string(name) + ":permissions.secrets[" + itoa(i) + "]"}
	}
	if p.Process != nil && p.Process.Spawn != "" {
		if l.spawn, err = capability.ParseMode(p.Process.Spawn); err != nil {
			return nil, err
		}
		l.spawnSet, l.spawnRule = true, string(name)+":permissions.process.spawn"
	}
	if p.ExternalWrites != nil && p.ExternalWrites.Default != "" {
		if l.ext, err = capability.ParseMode(p.ExternalWrites.Default); err != nil {
			return nil, err
		}
		l.extSet, l.extRule = true, string(name)+":permissions.external_writes.default"
	}
	if kind == allowList {
		// Absent means the closed choice: no spawn; external writes only
		// with approval (the manifest format's documented default).
		if !l.spawnSet {
			l.spawn, l.spawnSet = capability.Deny, true
		}
		if !l.extSet {
			l.ext, l.extSet = capability.ApprovalRequired, true
		}
	}
	return l, nil
}

func compileGlobs(layer, list string, gs []string) globList {
	out := make(globList, 0, len(gs))
	for i, g := range gs {
		out = append(out, compileGlob(manifest.WorkspaceGlob(g), layer+":permissions.filesystem."+list+"["+itoa(i)+"]"))
	}
	return out
}

// decide answers req for this layer alone: the mode, the reason, the
// rule that decided and the declared entry the request matched (the rule,
// or for a network request the rule with its path template's position).
func (l *layer) decide(req *capability.Request) (capability.Mode, capability.Reason, string, string) {
	if l.kind != hostLayer && req.Kind == capability.NetRequest {
		if l.kind == ceiling && !l.netSet {
			return capability.Allow, capability.ReasonAllowed, "", ""
		}
		return l.net.decide(req)
	}
	mode, reason, rule := l.decideRule(req)
	return mode, reason, rule, rule
}

// decideRule is decide for every kind but net.request (which decide
// answers; here it is refused, fail closed).
func (l *layer) decideRule(req *capability.Request) (capability.Mode, capability.Reason, string) {
	if l.kind == hostLayer {
		return l.host.decide(req)
	}
	switch req.Kind {
	case capability.FSRead, capability.FSWrite:
		reason, list, set := capability.ReasonFilesystemReadDenied, l.read, l.readSet
		if req.Kind == capability.FSWrite {
			reason, list, set = capability.ReasonFilesystemWriteDenied, l.write, l.writeSet
		}
		if g := l.deny.first(req.Path); g != nil {
			return capability.Deny, reason, g.rule
		}
		if req.Kind == capability.FSWrite {
			if g := l.denyWrite.first(req.Path); g != nil {
				return capability.Deny, reason, g.rule
			}
		}
		if l.kind == ceiling && !set {
			return capability.Allow, capability.ReasonAllowed, ""
		}
		if g := list.first(req.Path); g != nil {
			return capability.Allow, capability.ReasonAllowed, g.rule
		}
		return capability.Deny, reason, ""

	case capability.SecretUse:
		if l.kind == ceiling && !l.secretsSet {
			return capability.Allow, capability.ReasonAllowed, ""
		}
		s, ok := l.secrets[req.Secret]
		if !ok {
			return capability.Deny, capability.ReasonSecretUndeclared, ""
		}
		if s.purpose != req.Origin {
			return capability.Deny, capability.ReasonSecretOriginMismatch, s.rule
		}
		return capability.Allow, capability.ReasonAllowed, s.rule

	case capability.ProcessSpawn:
		if !l.spawnSet {
			return capability.Allow, capability.ReasonAllowed, ""
		}
		return modeResult(l.spawn, capability.ReasonProcessSpawnDenied, l.spawnRule)

	case capability.ExternalWrite:
		mode, rule := capability.Allow, ""
		if l.extSet {
			mode, rule = l.ext, l.extRule
		}
		if l.tools != nil {
			t, ok := l.tools[req.Tool]
			if !ok {
				return capability.Deny, capability.ReasonToolUndeclared, ""
			}
			if !t.writes {
				// A tool that declared no external writes must not make one.
				return capability.Deny, capability.ReasonExternalWriteDenied, t.rule
			}
			if t.mode < mode {
				mode, rule = t.mode, t.rule
			}
		}
		return modeResult(mode, capability.ReasonExternalWriteDenied, rule)
	}
	return capability.Deny, capability.ReasonInvalidRequest, ""
}

func modeResult(m capability.Mode, denied capability.Reason, rule string) (capability.Mode, capability.Reason, string) {
	switch m {
	case capability.Allow:
		return m, capability.ReasonAllowed, rule
	case capability.ApprovalRequired:
		return m, capability.ReasonApprovalRequired, rule
	}
	return capability.Deny, denied, rule
}

// Host is the sandbox layer: what this host can actually enforce.
type Host struct {
	// Sandbox is true when the OS sandbox (namespaces, Landlock, seccomp)
	// is available for this principal's processes.
	Sandbox bool
	// Unsafe is the operator's explicit --unsafe-no-sandbox; callers audit it.
	Unsafe bool
	// OutOfProcess is true for plugins that run as their own process: their
	// network only exists through the sandbox's broker.
	OutOfProcess bool
}

func (h Host) decide(req *capability.Request) (capability.Mode, capability.Reason, string) {
	confined := h.Sandbox || h.Unsafe
	switch {
	case req.Kind == capability.ProcessSpawn && !confined:
		return capability.Deny, capability.ReasonSandboxUnavailable, "sandbox:process.spawn"
	case req.Kind == capability.NetRequest && h.OutOfProcess && !confined:
		return capability.Deny, capability.ReasonSandboxUnavailable, "sandbox:network"
	}
	return capability.Allow, capability.ReasonAllowed, ""
}
