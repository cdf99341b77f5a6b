package policy

import (
	"context"
	"fmt"
	"net/netip"
	"unicode/utf8"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/manifest"
)

// Inputs are the layers a Set is compiled from.
type Inputs struct {
	// Manifest is required: the plugin's (or the built-in tools') manifest.
	Manifest *manifest.Manifest
	// Grant is what the user consented to at install. Nil means the layer
	// is absent (built-in tools, whose manifest ships with the binary, or
	// `policy explain` without --grant); an installed plugin always has one.
	Grant *manifest.Layer
	// Workspace and Run are ceilings; nil means no constraint.
	Workspace, Run *manifest.Layer
	// Host is the sandbox layer.
	Host Host
	// Generations supplied by the caller; they are part of the cache key
	// and reported in every decision.
	ConsentGeneration, PolicyGeneration uint64
}

// Set is a compiled policy for one plugin in one context. It is immutable
// and safe for concurrent use.
type Set struct {
	key          Key
	digest       string
	generation   uint64
	layers       []*layer
	allowPrivate []netip.Prefix
}

// Compile builds a Set. It fails when a layer is of the wrong kind or a rule
// cannot be compiled; it never returns a partially compiled Set.
func Compile(in Inputs) (*Set, error) {
	if in.Manifest == nil {
		return nil, errorf("compile: a manifest is required")
	}
	s := &Set{key: keyOf(in), digest: in.Manifest.Digest(), generation: in.PolicyGeneration}
	first := manifestLayer(in.Manifest)
	pl, err := compileLayer(first, allowList, in.Manifest.Permissions)
	if err != nil {
		return nil, err
	}
	pl.tools = make(map[string]toolRule, len(in.Manifest.Tools))
	for i, t := range in.Manifest.Tools {
		mode := capability.Allow
		if t.NeedsApproval() {
			mode = capability.ApprovalRequired
		}
		pl.tools[t.Name] = toolRule{writes: t.WritesExternal(), mode: mode, declared: true,
			rule: string(first) + ":tools[" + itoa(i) + "].approval"}
	}
	s.layers = append(s.layers, pl)
	for _, x := range []struct {
		name capability.Layer
		l    *manifest.Layer
		kind string
		lk   layerKind
	}{
		{capability.LayerGrant, in.Grant, manifest.KindGrant, allowList},
		{capability.LayerWorkspace, in.Workspace, manifest.KindWorkspace, ceiling},
		{capability.LayerRun, in.Run, manifest.KindRun, ceiling},
	} {
		if x.l == nil {
			continue
		}
		if x.l.Kind != x.kind {
			return nil, errorf("compile: the %s layer is a %q file, want kind: %s", x.name, x.l.Kind, x.kind)
		}
		cl, err := compileLayer(x.name, x.lk, x.l.Permissions)
		if err != nil {
			return nil, err
		}
		s.layers = append(s.layers, cl)
	}
	s.layers = append(s.layers, &layer{name: capability.LayerSandbox, kind: hostLayer, host: in.Host})
	if s.allowPrivate, err = intersectPrivate(in.Workspace, in.Run); err != nil {
		return nil, err
	}
	return s, nil
}

// Key returns the cache key the Set was compiled under.
func (s *Set) Key() Key { return s.key }

// ManifestDigest is the digest of the manifest layer.
func (s *Set) ManifestDigest() string { return s.digest }

// AllowPrivate returns the private prefixes every workspace/run layer that
// speaks of them admits (their intersection); none when no layer does.
// The network guard's dialer takes it.
func (s *Set) AllowPrivate() []netip.Prefix { return s.allowPrivate }

// Decide answers req. It does no I/O and, for a normalized request, no
// allocation. The Decision has no Trace; use Explain for that.
func (s *Set) Decide(_ context.Context, req capability.Request) capability.Decision {
	return s.decide(&req, nil)
}

// Explain is Decide with the normalized request and one trace entry per layer.
func (s *Set) Explain(_ context.Context, req capability.Request) capability.Decision {
	trace := make([]capability.LayerResult, 0, len(s.layers))
	d := s.decide(&req, &trace)
	d.Trace = trace
	d.Request = req.String()
	return d
}

func (s *Set) decide(req *capability.Request, trace *[]capability.LayerResult) (d capability.Decision) {
	d = capability.Decision{Mode: capability.Allow, Reason: capability.ReasonAllowed, ManifestDigest: s.digest, PolicyGeneration: s.generation}
	// Globs and rules are UTF-8 text; a path they cannot represent matches
	// nothing reliably, so it is refused rather than guessed at.
	if req.Kind == capability.KindInvalid || req.Kind > capability.ExternalWrite ||
		((req.Kind == capability.FSRead || req.Kind == capability.FSWrite) && !utf8.ValidString(req.Path)) {
		d.Mode, d.Reason, d.Layer = capability.Deny, capability.ReasonInvalidRequest, s.layers[0].name
		return d
	}
	for i, l := range s.layers {
		mode, reason, rule, declared := l.decide(req)
		if i == 0 {
			d.Declared = declared
		}
		if trace != nil {
			*trace = append(*trace, capability.LayerResult{Layer: l.name, Mode: mode, Reason: reason, Rule: rule})
		}
		switch {
		case mode < d.Mode:
			d.Mode, d.Reason, d.Layer, d.Rule = mode, reason, l.name, rule
		case mode == capability.Allow && d.Mode == capability.Allow && d.Rule == "":
			d.Rule = rule // the first allow rule, usually the plugin's own
		}
		if d.Mode == capability.Deny && trace == nil {
			return d // nothing can raise a deny; the trace wants every layer
		}
	}
	return d
}

// manifestLayer names the first layer: the built-in tools' manifest is
// their plugin layer, but it is no plugin's, so it is reported as builtin.
func manifestLayer(m *manifest.Manifest) capability.Layer {
	if m.ID == manifest.BuiltinID {
		return capability.LayerBuiltin
	}
	return capability.LayerPlugin
}

func intersectPrivate(layers ...*manifest.Layer) ([]netip.Prefix, error) {
	var out []netip.Prefix
	seen := false
	for _, l := range layers {
		if l == nil || l.Permissions.Network == nil || l.Permissions.Network.AllowPrivate == nil {
			continue
		}
		var ps []netip.Prefix
		for _, s := range l.Permissions.Network.AllowPrivate {
			p, err := netip.ParsePrefix(s)
			if err != nil {
				return nil, fmt.Errorf("policy: allow_private %q: %w", s, err)
			}
			ps = append(ps, p)
		}
		if !seen {
			out, seen = ps, true
			continue
		}
		var next []netip.Prefix
		for _, a := range out {
			for _, b := range ps {
				if a.Overlaps(b) {
					if a.Bits() >= b.Bits() {
						next = append(next, a)
					} else {
						next = append(next, b)
					}
				}
			}
		}
		out = next
	}
	return out, nil
}
