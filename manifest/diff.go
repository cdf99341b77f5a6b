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
	diffLaunch(&d, old, new)
	return d
}

// diffLaunch reports a new command line or environment as widening (the
// user sees what will start before it does) and a data directory gained
// or dropped.
func diffLaunch(d *Delta, old, new *Manifest) {
	if o, n := launchLine(old), launchLine(new); o != n {
		d.Widened = append(d.Widened, Change{Kind: "launch", From: o, To: n, Item: n})
	}
	switch {
	case !old.DataDir && new.DataDir:
		d.Added = append(d.Added, Change{Kind: "data_dir", To: "a data directory of its own", Item: "data_dir"})
	case old.DataDir && !new.DataDir:
		d.Removed = append(d.Removed, Change{Kind: "data_dir", From: "a data directory of its own", Item: "data_dir"})
	}
}

// LaunchLine is the command line and environment of m's server as the
// install screen and a diff show them, templates unexpanded:
// "ENTRYPOINT ARG… [K=V …]", each word quoted when it needs it.
func LaunchLine(m *Manifest) string { return launchLine(m) }

func launchLine(m *Manifest) string {
	words := []string{quoteWord(m.Entrypoint)}
	for _, a := range m.Args {
		words = append(words, quoteWord(a))
	}
	keys := make([]string, 0, len(m.Env))
	for k := range m.Env {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if len(keys) > 0 {
		words = append(words, "[env")
		for _, k := range keys {
			words = append(words, k+"="+quoteWord(m.Env[k]))
		}
		words[len(words)-1] += "]"
	}
	return strings.Join(words, " ")
}

func quoteWord(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\n\"'\\[]=") {
		return s
	}
	return fmt.Sprintf("%q", s)
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
	diffRanked(d, kind, o, n, func(s string) (int, bool) {
		m, err := capability.ParseMode(s)
		return int(m), err == nil
	})
}

// diffRanked compares two values by their rank; a value rank does not know
// makes any change a widening (fail closed).
func diffRanked(d *Delta, kind, o, n string, rank func(string) (int, bool)) {
	if o == n {
		return
	}
	c := Change{Kind: kind, From: o, To: n, Item: n}
	ro, ok1 := rank(o)
	rn, ok2 := rank(n)
	switch {
	case !ok1 || !ok2 || rn > ro:
		d.Widened = append(d.Widened, c)
	case rn < ro:
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
	diffList(d, kind, old, new, deny, GlobCovers)
}

// diffList classifies the changes of a list whose items cover one another
// by covers(b, a) (b covers a); for a deny list the direction flips.
func diffList(d *Delta, kind string, old, new []string, deny bool, covers func(b, a string) bool) {
	wider, narrower := &d.Widened, &d.Narrowed
	added, removed := &d.Added, &d.Removed
	if deny {
		wider, narrower = narrower, wider
		added, removed = wider, narrower
	}
	for _, n := range new {
		if coveredByAny(n, old, covers) {
			continue
		}
		if o, ok := findCovered(n, old, new, covers); ok {
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
		if coveredByAny(o, new, covers) {
			continue
		}
		if n, ok := findCovered(o, new, old, covers); ok {
			*narrower = append(*narrower, Change{Kind: kind, From: o, To: n, Item: o})
		} else {
			*removed = append(*removed, Change{Kind: kind, From: o, Item: o})
		}
	}
}

// findCovered returns an element of from that g covers and that is not
// itself in keep (so the pair describes a replacement).
func findCovered(g string, from, keep []string, covers func(b, a string) bool) (string, bool) {
	for _, x := range from {
		if !slices.Contains(keep, x) && covers(g, x) {
			return x, true
		}
	}
	return "", false
}

func coveredByAny(g string, set []string, covers func(b, a string) bool) bool {
	for _, s := range set {
		if covers(s, g) {
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

// Join adds o's changes to d.
func (d *Delta) Join(o Delta) {
	d.Added = append(d.Added, o.Added...)
	d.Removed = append(d.Removed, o.Removed...)
	d.Widened = append(d.Widened, o.Widened...)
	d.Narrowed = append(d.Narrowed, o.Narrowed...)
}

// ListEffect says what the items of a list compared by [DiffList] do.
type ListEffect uint8

const (
	// Grants: an item lets more happen (an allow rule); a new one widens.
	Grants ListEffect = iota
	// Restricts: an item lets less happen (a deny rule); a dropped one widens.
	Restricts
	// Decides: an item may do either (a hook program that allows or
	// blocks); every change widens.
	Decides
)

// DiffList compares two lists of items of kind that are equal or not, such
// as permission rules by their text: the same judgement as a deny or an
// allow glob list, with equality for coverage (an item is never taken to
// cover another, so a rewritten item counts as new: it errs toward
// asking). A new item is Added (for Restricts, Narrowed), a dropped one
// Removed (for Restricts and Decides, Widened).
func DiffList(kind string, old, new []string, effect ListEffect) Delta {
	var d Delta
	same := func(b, a string) bool { return a == b }
	diffList(&d, kind, old, new, effect == Restricts, same)
	if effect == Decides {
		d.Widened = append(d.Widened, d.Removed...)
		d.Removed = nil
	}
	return d
}

// DiffRank compares two values of one setting ordered from the narrowest
// to the widest: a value not in order ranks above them all (fail closed).
func DiffRank(kind, old, new string, order []string) Delta {
	var d Delta
	rank := func(s string) (int, bool) {
		i := slices.Index(order, s)
		return i, i >= 0
	}
	diffRanked(&d, kind, old, new, rank)
	return d
}

// DiffCeiling compares two ceiling layers (workspace, run), which bound
// what a manifest may be granted: unlike a manifest, a nil layer and
// every section a layer leaves out is no bound at all (an absent read
// list allows every read; absent network requests allow every
// destination; an absent spawn or external-write mode allows). The
// absent parts are read as that, then compared by [DiffPermissions];
// only network requests and secrets, which have no spelling for
// "everything", are compared here as a whole when one side leaves them
// out.
func DiffCeiling(old, new *Layer) Delta {
	o, n := ceilingPermissions(old), ceilingPermissions(new)
	var d Delta
	net := func(p Permissions) bool { return p.Network != nil && p.Network.Requests != nil }
	if net(o) != net(n) {
		c := Change{Kind: "network.requests", From: "any destination", To: "the listed destinations", Item: "any destination"}
		if net(o) {
			c = Change{Kind: "network.requests", From: "the listed destinations", To: "any destination", Item: "any destination"}
			d.Widened = append(d.Widened, c)
		} else {
			d.Narrowed = append(d.Narrowed, c)
		}
		// Compare allow_private alone: neither side's requests count.
		o.Network, n.Network = onlyPrivate(o.Network), onlyPrivate(n.Network)
	}
	if (o.Secrets == nil) != (n.Secrets == nil) {
		c := Change{Kind: "secrets", From: "any secret", To: "the listed secrets", Item: "any secret"}
		if o.Secrets != nil {
			d.Widened = append(d.Widened, Change{Kind: "secrets", From: "the listed secrets", To: "any secret", Item: "any secret"})
		} else {
			d.Narrowed = append(d.Narrowed, c)
		}
		o.Secrets, n.Secrets = nil, nil
	}
	d.Join(DiffPermissions(o, n))
	return d
}

func onlyPrivate(n *Network) *Network {
	if n == nil {
		return nil
	}
	return &Network{AllowPrivate: n.AllowPrivate}
}

// ceilingPermissions are l's permissions with every absent bound spelled
// as the widest grant of its kind.
func ceilingPermissions(l *Layer) Permissions {
	var p Permissions
	if l != nil {
		p = l.Permissions
	}
	fs := Filesystem{}
	if p.Filesystem != nil {
		fs = *p.Filesystem
	}
	if fs.Read == nil {
		fs.Read = []string{"workspace://**"}
	}
	if fs.Write == nil {
		fs.Write = []string{"workspace://**"}
	}
	p.Filesystem = &fs
	if p.Process == nil || p.Process.Spawn == "" {
		p.Process = &Process{Spawn: "allow"}
	}
	if p.ExternalWrites == nil || p.ExternalWrites.Default == "" {
		p.ExternalWrites = &ExternalWrites{Default: "allow"}
	}
	return p
}
