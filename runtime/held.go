package runtime

import (
	"fmt"
	"slices"
	"strings"

	"github.com/norma-run/norma/manifest"
	"github.com/norma-run/norma/settings"
)

// A held change of a trusted file is not applied as a whole, and not
// ignored as a whole either: the version in force is the accepted one
// (at first sight: none) with every part of the change that narrows it,
// as the manifest diff engine classified the change (the Removed and
// Narrowed entries of [FileChange.Delta]). New deny and ask rules, allow
// rules the file dropped, a lower default mode, deny globs and lower
// ceilings of the policy apply at once; what widens (Added, Widened)
// waits for `norma policy trust`. The engine decides; the functions here
// only carry out its entries, and applied.hold asks the engine again
// that the result widens nothing.

// appliedKinds are the kinds of narrowing change that heldSettings and
// heldLayer apply. A narrowing of another kind waits with the widening
// parts (and the held message says so).
var appliedKinds = []string{
	"permissions.allow", "permissions.ask", "permissions.deny", "permissions.defaultMode",
	"permissions.additionalDirectories", "env",
	"network", "network.allow_private", "network.requests",
	"filesystem.read", "filesystem.write", "filesystem.deny",
	"secrets", "secret", "secret.scope", "process.spawn", "external_writes.default",
}

// appliesNow reports whether the narrowing change c is applied while its
// file is held.
func appliesNow(c manifest.Change) bool { return slices.Contains(appliedKinds, c.Kind) }

// narrowings are the changes of d that narrow and apply while held.
func narrowings(d manifest.Delta) []manifest.Change {
	var out []manifest.Change
	for _, c := range slices.Concat(d.Removed, d.Narrowed) {
		if appliesNow(c) {
			out = append(out, c)
		}
	}
	return out
}

// heldSettings is the version of a held settings file in force: acc,
// the accepted version (nil: none), with the narrowing changes of d (the
// delta from acc to cur) applied.
func heldSettings(acc, cur *settings.File, d manifest.Delta) *settings.File {
	var n settings.Narrowing
	net := fileSettings(acc).Network
	netChanged := false
	for _, c := range narrowings(d) {
		switch c.Kind {
		case "permissions.allow":
			n.DropAllow = append(n.DropAllow, c.Item)
		case "permissions.ask":
			n.Ask = append(n.Ask, c.To)
		case "permissions.deny":
			n.Deny = append(n.Deny, c.To)
		case "permissions.defaultMode":
			n.Mode = c.To
		case "permissions.additionalDirectories":
			n.DropDirs = append(n.DropDirs, c.Item)
		case "env":
			n.DropEnv = append(n.DropEnv, c.Item)
		case "network", "network.allow_private":
			net, netChanged = narrowNetwork(net, c), true
		}
	}
	if netChanged {
		n.Network = net
	}
	return settings.Narrow(acc, cur, n)
}

// heldLayer is the version of a held policy file in force: acc, the
// accepted ceiling (nil: none), with the narrowing changes of d (the delta
// from acc to cur, by [manifest.DiffCeiling]) applied.
func heldLayer(acc, cur *manifest.Layer, d manifest.Delta) *manifest.Layer {
	list := narrowings(d)
	if len(list) == 0 {
		return acc
	}
	out := &manifest.Layer{SchemaVersion: 2, Kind: manifest.KindWorkspace}
	var curP manifest.Permissions
	if cur != nil {
		curP = cur.Permissions
		out.Kind = cur.Kind // a file of the wrong kind fails as the file would
	}
	if acc != nil {
		cp := *acc
		out = &cp
	}
	p := &out.Permissions
	fs := &manifest.Filesystem{}
	if p.Filesystem != nil {
		cp := *p.Filesystem
		fs = &cp
	}
	curFS := &manifest.Filesystem{}
	if curP.Filesystem != nil {
		curFS = curP.Filesystem
	}
	net := &manifest.Network{}
	if p.Network != nil {
		cp := *p.Network
		net = &cp
	}
	fsChanged, netChanged := false, false
	for _, c := range list {
		switch c.Kind {
		case "filesystem.read":
			fs.Read, fsChanged = narrowGlobs(fs.Read, curFS.Read, c), true
		case "filesystem.write":
			fs.Write, fsChanged = narrowGlobs(fs.Write, curFS.Write, c), true
		case "filesystem.deny":
			if !slices.Contains(fs.Deny, c.To) {
				fs.Deny, fsChanged = append(slices.Clone(fs.Deny), c.To), true
			}
		case "network.requests":
			// From any destination to the listed ones: the list is the
			// bound.
			if curP.Network != nil {
				net.Requests, netChanged = slices.Clone(curP.Network.Requests), true
			}
		case "network", "network.allow_private":
			net, netChanged = narrowNetwork(net, c), true
		case "secrets":
			// From any secret to the listed ones.
			p.Secrets = slices.Clone(curP.Secrets)
			if p.Secrets == nil {
				p.Secrets = []manifest.Secret{}
			}
		case "secret":
			p.Secrets = slices.DeleteFunc(slices.Clone(p.Secrets), func(s manifest.Secret) bool { return s.Name == c.Item })
		case "secret.scope":
			scope := strings.TrimPrefix(c.From, c.Item+" ")
			p.Secrets = slices.Clone(p.Secrets)
			for i, s := range p.Secrets {
				if s.Name == c.Item {
					p.Secrets[i].Scopes = slices.DeleteFunc(slices.Clone(s.Scopes), func(x string) bool { return x == scope })
				}
			}
		case "process.spawn":
			p.Process = &manifest.Process{Spawn: c.To}
		case "external_writes.default":
			p.ExternalWrites = &manifest.ExternalWrites{Default: c.To}
		}
	}
	if fsChanged {
		p.Filesystem = fs
	}
	if netChanged {
		p.Network = net
	}
	return out
}

// narrowGlobs applies a removed or narrowed glob of a ceiling list
// (nil: no bound, which the engine spells workspace://**): the old glob
// goes, and for a narrowed one every glob of the held list cur that it
// covers comes in its place. The result is never nil: an absent list
// bounds nothing, an empty one everything.
func narrowGlobs(list, cur []string, c manifest.Change) []string {
	out := slices.DeleteFunc(slices.Clone(list), func(g string) bool { return g == c.From })
	if out == nil {
		out = []string{}
	}
	if c.To == "" {
		return out
	}
	for _, g := range cur {
		if manifest.GlobCovers(c.From, g) && !slices.Contains(out, g) {
			out = append(out, g)
		}
	}
	return out
}

// narrowNetwork applies a removed or narrowed network change to n (nil:
// none), as a new section: a removed request ("METHOD ORIGIN PATH") is
// taken out of every rule that lists it; a request that now needs
// approval is taken out of the rules that allow it without, and listed
// with approval per action; a removed private range is dropped.
func narrowNetwork(n *manifest.Network, c manifest.Change) *manifest.Network {
	out := &manifest.Network{}
	if n != nil {
		cp := *n
		out = &cp
	}
	if c.Kind == "network.allow_private" {
		out.AllowPrivate = slices.DeleteFunc(slices.Clone(out.AllowPrivate), func(p string) bool { return p == c.Item })
		return out
	}
	parts := strings.SplitN(c.Item, " ", 3)
	if len(parts) != 3 {
		return out
	}
	method, origin, path := parts[0], parts[1], parts[2]
	names := func(r manifest.NetRule) bool {
		return r.Origin == origin && slices.Contains(r.Methods, method) &&
			slices.ContainsFunc(r.Paths, func(p string) bool { return manifest.SameTemplate(p, path) })
	}
	perAction := func(r manifest.NetRule) bool { return r.Approval == "per_action" }
	var rules []manifest.NetRule
	for _, r := range out.Requests {
		if !names(r) || c.From != "" && c.To != "" && perAction(r) {
			rules = append(rules, r)
			continue
		}
		if ms := slices.DeleteFunc(slices.Clone(r.Methods), func(m string) bool { return m == method }); len(ms) > 0 {
			x := r
			x.Methods = ms
			rules = append(rules, x)
		}
		if ps := slices.DeleteFunc(slices.Clone(r.Paths), func(p string) bool { return manifest.SameTemplate(p, path) }); len(ps) > 0 {
			rules = append(rules, manifest.NetRule{Origin: r.Origin, Methods: []string{method}, Paths: ps, Approval: r.Approval})
		}
	}
	if c.From != "" && c.To != "" && !slices.ContainsFunc(rules, names) {
		rules = append(rules, manifest.NetRule{Origin: origin, Methods: []string{method}, Paths: []string{path}, Approval: "per_action"})
	}
	if rules == nil && out.Requests != nil {
		rules = []manifest.NetRule{} // a listed bound stays listed
	}
	out.Requests = rules
	return out
}

// kindNames are the change kinds of the settings and policy deltas as the
// held message counts them: singular and plural.
var kindNames = map[string][2]string{
	"permissions.allow":                 {"allow rule", "allow rules"},
	"permissions.ask":                   {"ask rule", "ask rules"},
	"permissions.deny":                  {"deny rule", "deny rules"},
	"permissions.defaultMode":           {"default mode", "default modes"},
	"permissions.additionalDirectories": {"additional directory", "additional directories"},
	"env":                               {"environment entry", "environment entries"},
	"hook":                              {"hook", "hooks"},
	"network":                           {"network request", "network requests"},
	"network.allow_private":             {"private address range", "private address ranges"},
	"network.requests":                  {"network bound", "network bounds"},
	"filesystem.read":                   {"read glob", "read globs"},
	"filesystem.write":                  {"write glob", "write globs"},
	"filesystem.deny":                   {"deny glob", "deny globs"},
	"secrets":                           {"secrets bound", "secrets bounds"},
	"secret":                            {"secret", "secrets"},
	"secret.purpose":                    {"secret purpose", "secret purposes"},
	"secret.injection":                  {"secret injection", "secret injections"},
	"secret.scope":                      {"secret scope", "secret scopes"},
	"process.spawn":                     {"spawn mode", "spawn modes"},
	"external_writes.default":           {"external-write mode", "external-write modes"},
}

// heldSummary is the held message's summary of d: what waits for `norma
// policy trust` and what applies now, counted by kind ("held: 1 allow
// rule waits for `norma policy trust`; 1 deny rule applies now").
func heldSummary(d manifest.Delta) string {
	var waits, now []manifest.Change
	waits = slices.Concat(d.Added, d.Widened)
	for _, c := range slices.Concat(d.Removed, d.Narrowed) {
		if appliesNow(c) {
			now = append(now, c)
		} else {
			waits = append(waits, c)
		}
	}
	s := "held: " + countChanges(waits, "waits", "wait") + " for `norma policy trust`"
	if len(now) > 0 {
		s += "; " + countChanges(now, "applies", "apply") + " now"
	}
	return s
}

// countChanges counts cs by what they are ("2 allow rules and 1 removed
// deny rule") and adds the verb in the number of the whole.
func countChanges(cs []manifest.Change, one, many string) string {
	type key struct{ how, kind string }
	var order []key
	count := map[key]int{}
	for _, c := range cs {
		k := key{kind: c.Kind}
		switch {
		case c.From == "":
		case c.To == "":
			k.how = "removed "
		default:
			k.how = "changed "
		}
		if count[k] == 0 {
			order = append(order, k)
		}
		count[k]++
	}
	parts := make([]string, 0, len(order))
	for _, k := range order {
		name, ok := kindNames[k.kind]
		if !ok {
			name = [2]string{k.kind + " change", k.kind + " changes"}
		}
		noun := name[0]
		if count[k] > 1 {
			noun = name[1]
		}
		parts = append(parts, fmt.Sprintf("%d %s%s", count[k], k.how, noun))
	}
	list := strings.Join(parts, ", ")
	if i := strings.LastIndex(list, ", "); i >= 0 {
		list = list[:i] + " and " + list[i+2:]
	}
	verb := many
	if len(cs) == 1 {
		verb = one
	}
	return list + " " + verb
}
