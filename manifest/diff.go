package manifest

import (
	"fmt"
	"slices"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/norma-run/norma/capability"
)

// Change is one entry of a permission delta.
type Change struct {
	Kind string `json:"kind"` // filesystem.read, network, secret, tool, …
	From string `json:"from,omitempty"`
	To   string `json:"to,omitempty"`
	// Item names what changed the way a consent question lists it: a
	// workspace:// glob for the filesystem kinds (for filesystem.deny, the
	// deny glob that applied before), "METHOD ORIGIN PATH" for network, the
	// secret name for the secret kinds, the mode for process.spawn and
	// external_writes.default, the tool name for the tool kinds, the prefix
	// for network.allow_private. An added or widened change names the new
	// side, a removed or narrowed one the old side.
	Item string `json:"item,omitempty"`
}

func (c Change) String() string {
	switch {
	case c.From == "":
		return c.Kind + " " + c.To
	case c.To == "":
		return c.Kind + " " + c.From
	}
	return c.Kind + " " + c.From + " → " + c.To
}

// Delta is the permission difference between two manifests or permission
// sections. Added and Widened grant more than before and need re-consent;
// Removed and Narrowed grant less and apply at once.
type Delta struct {
	Added    []Change `json:"added"`
	Removed  []Change `json:"removed"`
	Widened  []Change `json:"widened"`
	Narrowed []Change `json:"narrowed"`
}

// NeedsConsent reports whether the delta grants anything new.
func (d Delta) NeedsConsent() bool { return len(d.Added) > 0 || len(d.Widened) > 0 }

// Empty reports whether nothing changed.
func (d Delta) Empty() bool {
	return len(d.Added)+len(d.Removed)+len(d.Widened)+len(d.Narrowed) == 0
}

// Diff compares two normalized manifests: their permissions and their tools.
// A new tool of any kind, a tool whose effects grow in either dimension
// (data none < read < send; external_state none < write) and a tool that no
// longer needs approval all count as widening. Diff is the one judgement of
// what an update asks for: package plugin holds an update, and asks about
// its items, exactly when [Delta.NeedsConsent].
func Diff(old, new *Manifest) Delta {
	d := DiffPermissions(old.Permissions, new.Permissions)
	for _, nt := range new.Tools {
		ot, ok := old.Tool(nt.Name)
		if !ok {
			d.Added = append(d.Added, Change{Kind: "tool", To: toolSummary(nt), Item: nt.Name})
			continue
		}
		if oe, ne := effectString(ot), effectString(nt); oe != ne {
			c := Change{Kind: "tool.effects", From: nt.Name + " " + oe, To: nt.Name + " " + ne, Item: nt.Name}
			if effectsWiden(ot, nt) {
				d.Widened = append(d.Widened, c)
			} else {
				d.Narrowed = append(d.Narrowed, c)
			}
		}
		switch {
		case ot.NeedsApproval() && !nt.NeedsApproval():
			d.Widened = append(d.Widened, Change{Kind: "tool.approval", From: nt.Name + " per_action", To: nt.Name + " never", Item: nt.Name})
		case !ot.NeedsApproval() && nt.NeedsApproval():
			d.Narrowed = append(d.Narrowed, Change{Kind: "tool.approval", From: nt.Name + " never", To: nt.Name + " per_action", Item: nt.Name})
		}
	}
	for _, ot := range old.Tools {
		if _, ok := new.Tool(ot.Name); !ok {
			d.Removed = append(d.Removed, Change{Kind: "tool", From: toolSummary(ot), Item: ot.Name})
		}
	}
	return d
}

func toolSummary(t Tool) string {
	return t.Name + " (" + effectString(t) + ", approval " + t.Approval + ")"
}

func effectString(t Tool) string {
	if t.Effects == nil {
		return "data send, external_state write"
	}
	return "data " + t.Effects.Data + ", external_state " + t.Effects.ExternalState
}

// Effect ranks, per dimension; an unknown value ranks highest (fail closed).
var (
	dataRank     = []string{"none", "read", "send"}
	externalRank = []string{"none", "write"}
)

// effectsWiden reports whether nt's effects grow in either dimension. Nil
// effects (not normalized) mean the widest: data send, external write.
func effectsWiden(ot, nt Tool) bool {
	r := func(order []string, s string) int {
		if i := slices.Index(order, s); i >= 0 {
			return i
		}
		return len(order)
	}
	dims := func(t Tool) (int, int) {
		if t.Effects == nil {
			return len(dataRank) - 1, len(externalRank) - 1
		}
		return r(dataRank, t.Effects.Data), r(externalRank, t.Effects.ExternalState)
	}
	od, ox := dims(ot)
	nd, nx := dims(nt)
	return nd > od || nx > ox
}

// DiffPermissions compares two normalized permission sections. Globs are
// compared by coverage (docs/** → ** widens, ** → docs/** narrows), network
// rules per (origin, method, path template), secrets by name, scopes and
// purpose; modes by [capability.Mode] (deny < approval_required < allow).
// Reordering changes nothing.
func DiffPermissions(old, new Permissions) Delta {
	var d Delta
	ofs, nfs := old.Filesystem, new.Filesystem
	if ofs == nil {
		ofs = &Filesystem{}
	}
	if nfs == nil {
		nfs = &Filesystem{}
	}
	diffGlobs(&d, "filesystem.read", ofs.Read, nfs.Read, false)
	diffGlobs(&d, "filesystem.write", ofs.Write, nfs.Write, false)
	diffGlobs(&d, "filesystem.deny", ofs.Deny, nfs.Deny, true)
	diffNetwork(&d, old.Network, new.Network)
	diffSecrets(&d, old.Secrets, new.Secrets)
	diffMode(&d, "process.spawn", ProcessMode(old), ProcessMode(new))
	diffMode(&d, "external_writes.default", ExternalWriteMode(old), ExternalWriteMode(new))
	return d
}

// ProcessMode is the declared spawn mode; absent means deny.
func ProcessMode(p Permissions) string {
	if p.Process == nil || p.Process.Spawn == "" {
		return "deny"
	}
	return p.Process.Spawn
}

// ExternalWriteMode is the declared external-write mode; absent means
// approval_required (external writes are never silent by default).
func ExternalWriteMode(p Permissions) string {
	if p.ExternalWrites == nil || p.ExternalWrites.Default == "" {
		return "approval_required"
	}
	return p.ExternalWrites.Default
}

// diffMode compares two mode spellings by [capability.Mode]; a spelling
// that does not parse makes any change a widening (fail closed).
func diffMode(d *Delta, kind, o, n string) {
	if o == n {
		return
	}
	c := Change{Kind: kind, From: o, To: n, Item: n}
	mo, err1 := capability.ParseMode(o)
	mn, err2 := capability.ParseMode(n)
	switch {
	case err1 != nil || err2 != nil || mn > mo:
		d.Widened = append(d.Widened, c)
	case mn < mo:
		c.Item = o
		d.Narrowed = append(d.Narrowed, c)
	}
}

// diffGlobs classifies glob changes. For deny lists the direction flips:
// a new deny narrows, a dropped deny widens.
//
// Item is the glob of the side the change is about: the new glob of an
// allow list that grew, the old deny glob that no longer applies.
func diffGlobs(d *Delta, kind string, old, new []string, deny bool) {
	wider, narrower := &d.Widened, &d.Narrowed
	added, removed := &d.Added, &d.Removed
	if deny {
		wider, narrower = narrower, wider
		added, removed = wider, narrower
	}
	for _, n := range new {
		if coveredByAny(n, old) {
			continue
		}
		if o, ok := findCovered(n, old, new); ok {
			c := Change{Kind: kind, From: o, To: n, Item: n}
			if deny {
				c.Item = o // a deny that grew: a narrowing, named by its old side
			}
			*wider = append(*wider, c)
		} else {
			*added = append(*added, Change{Kind: kind, To: n, Item: n})
		}
	}
	for _, o := range old {
		if coveredByAny(o, new) {
			continue
		}
		if n, ok := findCovered(o, new, old); ok {
			*narrower = append(*narrower, Change{Kind: kind, From: o, To: n, Item: o})
		} else {
			*removed = append(*removed, Change{Kind: kind, From: o, Item: o})
		}
	}
}

// findCovered returns an element of from that g covers and that is not
// itself in keep (so the pair describes a replacement).
func findCovered(g string, from, keep []string) (string, bool) {
	for _, x := range from {
		if !slices.Contains(keep, x) && GlobCovers(g, x) {
			return x, true
		}
	}
	return "", false
}

func coveredByAny(g string, set []string) bool {
	for _, s := range set {
		if GlobCovers(s, g) {
			return true
		}
	}
	return false
}

const globMeta = "*?[{\\"

// GlobCovers reports whether every path matched by glob a is also matched by
// glob b. It is exact for the common shapes (literals, prefix/** and equal
// patterns) and otherwise answers false, which callers treat as "wider":
// a judgement that errs toward asking for consent.
func GlobCovers(b, a string) bool {
	b, a = WorkspaceGlob(b), WorkspaceGlob(a)
	if a == b || b == "**" {
		return true
	}
	if p, ok := strings.CutSuffix(b, "/**"); ok && !strings.ContainsAny(p, globMeta) {
		lit := a
		if i := strings.IndexAny(a, globMeta); i >= 0 {
			lit = a[:i]
			if !strings.HasSuffix(lit, "/") {
				if j := strings.LastIndexByte(lit, '/'); j >= 0 {
					lit = lit[:j+1]
				} else {
					lit = ""
				}
			}
		}
		if a == p || strings.HasPrefix(lit, p+"/") {
			return true
		}
	}
	if !strings.ContainsAny(a, globMeta) {
		ok, err := doublestar.Match(b, a)
		return err == nil && ok
	}
	return false
}

type netKey struct{ origin, method, path string }

// netEntry is the mode of one (origin, method, template shape) and one
// spelling of its template.
type netEntry struct {
	mode  capability.Mode
	spell string
}

// item is the consent item of k: "METHOD ORIGIN PATH".
func (e netEntry) item(k netKey) string { return k.method + " " + k.origin + " " + e.spell }

// desc is how a change shows it: "METHOD ORIGINPATH", with its approval.
func (e netEntry) desc(k netKey) string {
	s := k.method + " " + k.origin + e.spell
	if e.mode == capability.ApprovalRequired {
		s += " (approval per action)"
	}
	return s
}

// netTriples flattens rules to (origin, method, template shape) → the most
// permissive mode of the rules that name it (a rule without approval is
// allow, one with approval per_action is approval_required).
func netTriples(n *Network) map[netKey]netEntry {
	out := map[netKey]netEntry{}
	if n == nil {
		return out
	}
	for _, r := range n.Requests {
		mode := capability.Allow
		if r.Approval == "per_action" {
			mode = capability.ApprovalRequired
		}
		for _, m := range r.Methods {
			for _, p := range r.Paths {
				k := netKey{r.Origin, m, templateShape(p)}
				if prev, ok := out[k]; !ok || mode > prev.mode {
					out[k] = netEntry{mode: mode, spell: p}
				}
			}
		}
	}
	return out
}

// SameTemplate reports whether two path templates match the same paths:
// they differ at most in the names of their parameters (/a/{x} and /a/{y}).
func SameTemplate(a, b string) bool { return templateShape(a) == templateShape(b) }

// templateShape makes parameter names irrelevant: /a/{x} and /a/{y} are the same.
func templateShape(p string) string {
	segs, err := ParseTemplate(p)
	if err != nil {
		return p
	}
	var b strings.Builder
	for _, s := range segs {
		b.WriteByte('/')
		if s.Param != "" {
			b.WriteString("{}")
		} else {
			b.WriteString(s.Literal)
		}
	}
	if b.Len() == 0 {
		return "/"
	}
	return b.String()
}

func diffNetwork(d *Delta, old, new *Network) {
	o, n := netTriples(old), netTriples(new)
	keys := make([]netKey, 0, len(n)+len(o))
	for k := range n {
		keys = append(keys, k)
	}
	for k := range o {
		if _, ok := n[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b netKey) int {
		return strings.Compare(a.origin+" "+a.path+" "+a.method, b.origin+" "+b.path+" "+b.method)
	})
	for _, k := range keys {
		oe, inOld := o[k]
		ne, inNew := n[k]
		switch {
		case !inOld:
			d.Added = append(d.Added, Change{Kind: "network", To: ne.desc(k), Item: ne.item(k)})
		case !inNew:
			d.Removed = append(d.Removed, Change{Kind: "network", From: oe.desc(k), Item: oe.item(k)})
		case ne.mode > oe.mode:
			d.Widened = append(d.Widened, Change{Kind: "network", From: oe.desc(k), To: ne.desc(k), Item: ne.item(k)})
		case ne.mode < oe.mode:
			d.Narrowed = append(d.Narrowed, Change{Kind: "network", From: oe.desc(k), To: ne.desc(k), Item: oe.item(k)})
		}
	}
	var op, np []string
	if old != nil {
		op = old.AllowPrivate
	}
	if new != nil {
		np = new.AllowPrivate
	}
	for _, p := range np {
		if !slices.Contains(op, p) {
			d.Added = append(d.Added, Change{Kind: "network.allow_private", To: p, Item: p})
		}
	}
	for _, p := range op {
		if !slices.Contains(np, p) {
			d.Removed = append(d.Removed, Change{Kind: "network.allow_private", From: p, Item: p})
		}
	}
}

func diffSecrets(d *Delta, old, new []Secret) {
	find := func(list []Secret, name string) (Secret, bool) {
		i := slices.IndexFunc(list, func(s Secret) bool { return s.Name == name })
		if i < 0 {
			return Secret{}, false
		}
		return list[i], true
	}
	for _, ns := range new {
		os, ok := find(old, ns.Name)
		if !ok {
			d.Added = append(d.Added, Change{Kind: "secret", To: fmt.Sprintf("%s for %s scopes [%s]", ns.Name, ns.Purpose, strings.Join(ns.Scopes, " ")), Item: ns.Name})
			continue
		}
		if os.Purpose != ns.Purpose {
			d.Widened = append(d.Widened, Change{Kind: "secret.purpose", From: os.Name + " " + os.Purpose, To: ns.Name + " " + ns.Purpose, Item: ns.Name})
		}
		if os.Header != ns.Header || os.Env != ns.Env || os.InjectAs != ns.InjectAs {
			d.Widened = append(d.Widened, Change{Kind: "secret.injection", From: os.Name + " " + injection(os), To: ns.Name + " " + injection(ns), Item: ns.Name})
		}
		for _, sc := range ns.Scopes {
			if !slices.Contains(os.Scopes, sc) {
				d.Widened = append(d.Widened, Change{Kind: "secret.scope", To: ns.Name + " " + sc, Item: ns.Name})
			}
		}
		for _, sc := range os.Scopes {
			if !slices.Contains(ns.Scopes, sc) {
				d.Narrowed = append(d.Narrowed, Change{Kind: "secret.scope", From: os.Name + " " + sc, Item: os.Name})
			}
		}
	}
	for _, os := range old {
		if _, ok := find(new, os.Name); !ok {
			d.Removed = append(d.Removed, Change{Kind: "secret", From: os.Name + " for " + os.Purpose, Item: os.Name})
		}
	}
}

func injection(s Secret) string {
	h := s.Header
	if h == "" {
		h = "Authorization"
	}
	out := s.InjectAs + " " + h
	if s.Env != "" {
		out += " env " + s.Env
	}
	return out
}
