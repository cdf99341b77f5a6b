package plugin

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/manifest"
)

// Group is a capability group the user consents to as a unit.
type Group string

// Capability groups, in the order they are asked.
const (
	GroupFilesystemRead  Group = "filesystem.read"
	GroupFilesystemWrite Group = "filesystem.write"
	GroupNetwork         Group = "network"
	GroupSecrets         Group = "secrets"
	GroupProcess         Group = "process"
	GroupExternalWrites  Group = "external_writes"
)

// Groups lists every group in asking order.
var Groups = []Group{GroupFilesystemRead, GroupFilesystemWrite, GroupNetwork, GroupSecrets, GroupProcess, GroupExternalWrites}

// Question asks the user about one group.
type Question struct {
	Plugin  string // id
	Version string
	Group   Group
	// Requested items: workspace:// globs for the file-system groups,
	// "METHOD ORIGIN PATH" for network, secret names for secrets, one mode
	// (deny | approval_required | allow) for process and external_writes.
	Requested []string
	// Untrusted is set for an unsigned --dev package.
	Untrusted bool
}

// Consenter asks the user. Ask returns what the user grants for the group:
// a subset of Requested, or narrower items (a glob that Requested covers,
// a lower mode). An empty answer grants nothing in the group. The install
// screen has been written before the first question. Implementations are
// the terminal prompt in cmd/norma and scripted answers in tests.
type Consenter interface {
	Ask(ctx context.Context, q Question) ([]string, error)
}

// ConsenterFunc adapts a function to [Consenter].
type ConsenterFunc func(ctx context.Context, q Question) ([]string, error)

// Ask calls f.
func (f ConsenterFunc) Ask(ctx context.Context, q Question) ([]string, error) { return f(ctx, q) }

// Items renders a permissions section as consent items per group. Groups
// with nothing requested are absent; a mode group is present only when the
// mode is not deny.
func Items(p manifest.Permissions) map[Group][]string {
	out := map[Group][]string{}
	if fs := p.Filesystem; fs != nil {
		if len(fs.Read) > 0 {
			out[GroupFilesystemRead] = slices.Clone(fs.Read)
		}
		if len(fs.Write) > 0 {
			out[GroupFilesystemWrite] = slices.Clone(fs.Write)
		}
	}
	if n := p.Network; n != nil {
		for _, r := range n.Requests {
			for _, m := range r.Methods {
				for _, path := range r.Paths {
					out[GroupNetwork] = append(out[GroupNetwork], m+" "+r.Origin+" "+path)
				}
			}
		}
	}
	for _, s := range p.Secrets {
		out[GroupSecrets] = append(out[GroupSecrets], s.Name)
	}
	if m := manifest.ProcessMode(p); m != "" && m != "deny" {
		out[GroupProcess] = []string{m}
	}
	if m := manifest.ExternalWriteMode(p); m != "" && m != "deny" {
		out[GroupExternalWrites] = []string{m}
	}
	for g := range out {
		slices.Sort(out[g])
		out[g] = slices.Compact(out[g])
	}
	return out
}

// GrantItems is [Items] for a grant layer, where what is not listed is not
// granted: an absent external_writes section grants no external writes
// (a manifest's absent section requests approval_required).
func GrantItems(p manifest.Permissions) map[Group][]string {
	out := Items(p)
	if p.ExternalWrites == nil || p.ExternalWrites.Default == "" {
		delete(out, GroupExternalWrites)
	}
	return out
}

var modeRank = map[string]int{"deny": 0, "approval_required": 1, "allow": 2}

// covers reports whether requested item r admits granted item g in group.
func covers(group Group, r, g string) bool {
	switch group {
	case GroupFilesystemRead, GroupFilesystemWrite:
		return manifest.GlobCovers(r, g)
	case GroupProcess, GroupExternalWrites:
		rr, ok1 := modeRank[r]
		gr, ok2 := modeRank[g]
		return ok1 && ok2 && gr <= rr
	}
	return r == g
}

// within returns the first granted item no requested item covers.
func within(group Group, requested, granted []string) (string, bool) {
	for _, g := range granted {
		if !slices.ContainsFunc(requested, func(r string) bool { return covers(group, r, g) }) {
			return g, false
		}
	}
	return "", true
}

// uncovered returns the items of next that no item of prev covers: what an
// update adds or widens, per group.
func uncovered(prev, next map[Group][]string) map[Group][]string {
	out := map[Group][]string{}
	for _, g := range Groups {
		for _, it := range next[g] {
			if !slices.ContainsFunc(prev[g], func(p string) bool { return covers(g, p, it) }) {
				out[g] = append(out[g], it)
			}
		}
	}
	return out
}

// restrict keeps the granted items that next still requests: an item is
// kept when a requested item covers it, and replaced by the requested items
// it covers when the request narrowed. Modes take the minimum.
func restrict(granted, next map[Group][]string) map[Group][]string {
	out := map[Group][]string{}
	for _, g := range Groups {
		for _, it := range granted[g] {
			switch g {
			case GroupProcess, GroupExternalWrites:
				if len(next[g]) > 0 {
					out[g] = append(out[g], minMode(it, next[g][0]))
				}
				continue
			}
			if slices.ContainsFunc(next[g], func(r string) bool { return covers(g, r, it) }) {
				out[g] = append(out[g], it)
				continue
			}
			for _, r := range next[g] {
				if covers(g, it, r) {
					out[g] = append(out[g], r)
				}
			}
		}
		slices.Sort(out[g])
		out[g] = slices.Compact(out[g])
	}
	return out
}

func minMode(a, b string) string {
	if modeRank[a] <= modeRank[b] {
		return a
	}
	return b
}

// permissionsFrom builds grant permissions from consent items, taking
// rule details (approval, secret purpose, deny globs) from the manifest.
func permissionsFrom(m *manifest.Manifest, items map[Group][]string) manifest.Permissions {
	var p manifest.Permissions
	mp := m.Permissions
	if len(items[GroupFilesystemRead]) > 0 || len(items[GroupFilesystemWrite]) > 0 {
		p.Filesystem = &manifest.Filesystem{Read: items[GroupFilesystemRead], Write: items[GroupFilesystemWrite]}
		if mp.Filesystem != nil {
			p.Filesystem.Deny = slices.Clone(mp.Filesystem.Deny)
		}
	}
	if len(items[GroupNetwork]) > 0 && mp.Network != nil {
		p.Network = &manifest.Network{}
		for _, r := range mp.Network.Requests {
			var methods, paths []string
			for _, m := range r.Methods {
				for _, path := range r.Paths {
					if slices.Contains(items[GroupNetwork], m+" "+r.Origin+" "+path) {
						methods = append(methods, m)
						paths = append(paths, path)
					}
				}
			}
			// One rule per granted (method, path) pair keeps the grant exact.
			for i := range methods {
				p.Network.Requests = append(p.Network.Requests, manifest.NetRule{Origin: r.Origin, Methods: []string{methods[i]}, Paths: []string{paths[i]}, Approval: r.Approval})
			}
		}
	}
	for _, s := range mp.Secrets {
		if slices.Contains(items[GroupSecrets], s.Name) {
			p.Secrets = append(p.Secrets, s)
		}
	}
	if v := items[GroupProcess]; len(v) > 0 {
		p.Process = &manifest.Process{Spawn: v[0]}
	} else {
		p.Process = &manifest.Process{Spawn: "deny"}
	}
	if v := items[GroupExternalWrites]; len(v) > 0 {
		p.ExternalWrites = &manifest.ExternalWrites{Default: v[0]}
	} else {
		p.ExternalWrites = &manifest.ExternalWrites{Default: "deny"}
	}
	return p
}

// checkGrant refuses a grant that gives more than the manifest requests
// (PLUGIN_GRANT_MISMATCH), naming the first item.
func checkGrant(m *manifest.Manifest, granted map[Group][]string) error {
	req := Items(m.Permissions)
	for _, g := range Groups {
		if it, ok := within(g, req[g], granted[g]); !ok {
			return newErr(capability.ReasonPluginGrantMismatch, "consent", m.ID,
				fmt.Sprintf("grant gives %s %s, which %s@%s does not request", g, it, m.ID, m.Version), nil)
		}
	}
	return nil
}

// checkWorkspace refuses (PLUGIN_WORKSPACE_FORBIDS) a manifest requesting a
// capability that the workspace policy ws forbids, naming the rule. An
// absent section does not constrain; a present one is a ceiling; deny globs
// always apply.
func checkWorkspace(m *manifest.Manifest, ws *manifest.Layer) error {
	if ws == nil {
		return nil
	}
	forbid := func(rule, what string) error {
		return newErr(capability.ReasonPluginWorkspaceForbids, "install", m.ID,
			fmt.Sprintf("workspace policy rule %s forbids %s", rule, what), nil)
	}
	req := Items(m.Permissions)
	wp := ws.Permissions
	if fs := wp.Filesystem; fs != nil {
		for _, g := range []Group{GroupFilesystemRead, GroupFilesystemWrite} {
			for _, it := range req[g] {
				for _, d := range fs.Deny {
					if manifest.GlobCovers(d, it) {
						return forbid("filesystem.deny "+d, string(g)+" "+it)
					}
				}
				ceiling := fs.Read
				if g == GroupFilesystemWrite {
					ceiling = fs.Write
				}
				if ceiling != nil && !slices.ContainsFunc(ceiling, func(c string) bool { return manifest.GlobCovers(c, it) }) {
					return forbid(string(g)+" ["+strings.Join(ceiling, ", ")+"]", string(g)+" "+it)
				}
			}
		}
	}
	if n := wp.Network; n != nil && n.Requests != nil {
		ceil := Items(manifest.Permissions{Network: n})[GroupNetwork]
		for _, it := range req[GroupNetwork] {
			if !slices.Contains(ceil, it) {
				return forbid("network.requests", "network "+it)
			}
		}
	}
	if wp.Secrets != nil {
		ceil := Items(manifest.Permissions{Secrets: wp.Secrets})[GroupSecrets]
		for _, it := range req[GroupSecrets] {
			if !slices.Contains(ceil, it) {
				return forbid("secrets", "secret "+it)
			}
		}
	}
	if wp.Process != nil && len(req[GroupProcess]) > 0 && !covers(GroupProcess, wp.Process.Spawn, req[GroupProcess][0]) {
		return forbid("process.spawn: "+wp.Process.Spawn, "process.spawn "+req[GroupProcess][0])
	}
	if wp.ExternalWrites != nil && len(req[GroupExternalWrites]) > 0 && !covers(GroupExternalWrites, wp.ExternalWrites.Default, req[GroupExternalWrites][0]) {
		return forbid("external_writes.default: "+wp.ExternalWrites.Default, "external_writes "+req[GroupExternalWrites][0])
	}
	return nil
}

// ask runs the consent dialogue for the groups in items.
func ask(ctx context.Context, c Consenter, m *manifest.Manifest, items map[Group][]string, untrusted bool) (map[Group][]string, error) {
	out := map[Group][]string{}
	for _, g := range Groups {
		if len(items[g]) == 0 {
			continue
		}
		ans, err := c.Ask(ctx, Question{Plugin: m.ID, Version: m.Version, Group: g, Requested: items[g], Untrusted: untrusted})
		if err != nil {
			return nil, newErr(capability.ReasonPluginConsentDeclined, "consent", m.ID, "consent not given for "+string(g), err)
		}
		if it, ok := within(g, items[g], ans); !ok {
			return nil, newErr(capability.ReasonPluginGrantMismatch, "consent", m.ID, fmt.Sprintf("answer %s %s is wider than requested", g, it), nil)
		}
		if len(ans) > 0 {
			out[g] = slices.Compact(slices.Sorted(slices.Values(ans)))
		}
	}
	return out, nil
}
