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
	// GroupDenyLifted lists deny globs an update no longer applies. Granting
	// one drops it from the grant; declining keeps it denied.
	GroupDenyLifted     Group = "filesystem.deny_lifted"
	GroupNetwork        Group = "network"
	GroupSecrets        Group = "secrets"
	GroupProcess        Group = "process"
	GroupExternalWrites Group = "external_writes"
	// GroupTools lists what an update changes in its tools: a new tool,
	// wider effects, an approval no longer asked. A grant cannot narrow a
	// tool, so the changes are accepted together or the update stays held.
	// An install does not ask it: its screen lists every tool.
	GroupTools Group = "tools"
)

// Groups lists every group in asking order.
var Groups = []Group{GroupFilesystemRead, GroupFilesystemWrite, GroupDenyLifted, GroupNetwork, GroupSecrets, GroupProcess, GroupExternalWrites, GroupTools}

// Question asks the user about one group.
type Question struct {
	Plugin  string // id
	Version string
	Group   Group
	// Requested items: workspace:// globs for the file-system groups (for
	// filesystem.deny_lifted, the deny globs that would no longer apply),
	// "METHOD ORIGIN PATH" for network, secret names for secrets, one mode
	// (deny | approval_required | allow) for process and external_writes,
	// one line per tool change for tools.
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

// changeGroup maps each kind of change [manifest.Diff] reports to the group
// that asks about it.
var changeGroup = map[string]Group{
	"filesystem.read":         GroupFilesystemRead,
	"filesystem.write":        GroupFilesystemWrite,
	"filesystem.deny":         GroupDenyLifted,
	"network":                 GroupNetwork,
	"secret":                  GroupSecrets,
	"secret.purpose":          GroupSecrets,
	"secret.injection":        GroupSecrets,
	"secret.scope":            GroupSecrets,
	"process.spawn":           GroupProcess,
	"external_writes.default": GroupExternalWrites,
	"tool":                    GroupTools,
	"tool.effects":            GroupTools,
	"tool.approval":           GroupTools,
	// What starts, and a data directory of its own: accepted with the tools.
	"launch":   GroupTools,
	"data_dir": GroupTools,
}

// questions turns what delta d adds or widens into consent items per group.
// It is the only place that decides what to ask: everything
// [manifest.Delta.NeedsConsent] counts is asked, nothing else. A change no
// group can ask about is refused (PLUGIN_GRANT_MISMATCH), never dropped.
func questions(id string, d manifest.Delta) (map[Group][]string, error) {
	out := map[Group][]string{}
	for _, c := range slices.Concat(d.Added, d.Widened) {
		g, ok := changeGroup[c.Kind]
		if !ok || c.Item == "" {
			return nil, newErr(capability.ReasonPluginGrantMismatch, "consent", id, "no consent question can ask about "+c.String(), nil)
		}
		it := c.Item
		if g == GroupTools {
			it = c.String()
		}
		out[g] = append(out[g], it)
	}
	for g := range out {
		out[g] = slices.Compact(slices.Sorted(slices.Values(out[g])))
	}
	return out, nil
}

// nothing is what a plugin may do before it is installed.
var nothing = manifest.Permissions{Process: &manifest.Process{Spawn: "deny"}, ExternalWrites: &manifest.ExternalWrites{Default: "deny"}}

// installQuestions is what an install asks: the delta from nothing to mf,
// without the tools (the install screen lists them).
func installQuestions(mf *manifest.Manifest) (map[Group][]string, error) {
	q, err := questions(mf.ID, manifest.Diff(&manifest.Manifest{Permissions: nothing}, mf))
	delete(q, GroupTools)
	return q, err
}

// beyond returns the first answered item of group g that asks for more than
// the requested items, as [manifest.DiffPermissions] judges it: globs by
// coverage, modes by [capability.Mode]; other items must be requested ones.
func beyond(g Group, requested, answer []string) (string, bool) {
	for _, a := range answer {
		wider := false
		switch g {
		case GroupFilesystemRead, GroupFilesystemWrite:
			wider = manifest.DiffPermissions(globPerms(g, requested), globPerms(g, []string{a})).NeedsConsent()
		case GroupProcess, GroupExternalWrites:
			wider = len(requested) == 0 || manifest.DiffPermissions(modePerms(g, requested[0]), modePerms(g, a)).NeedsConsent()
		default:
			wider = !slices.Contains(requested, a)
		}
		if wider {
			return a, true
		}
	}
	return "", false
}

func globPerms(g Group, globs []string) manifest.Permissions {
	fs := &manifest.Filesystem{}
	if g == GroupFilesystemRead {
		fs.Read = globs
	} else {
		fs.Write = globs
	}
	return manifest.Permissions{Filesystem: fs}
}

func modePerms(g Group, mode string) manifest.Permissions {
	p := manifest.Permissions{Process: &manifest.Process{Spawn: "deny"}, ExternalWrites: &manifest.ExternalWrites{Default: "deny"}}
	if g == GroupProcess {
		p.Process.Spawn = mode
	} else {
		p.ExternalWrites.Default = mode
	}
	return p
}

// buildGrant returns the grant for mf: what prev (the grant in force; nil
// at install) gives, restricted to what mf requests, plus the consented
// items. Nothing comes from mf that prev did not give or the user did not
// consent to: a glob is kept when mf still requests it (or replaced by the
// narrower globs mf requests under it), a network item keeps the stricter
// approval of the two, a secret is kept only toward the same purpose with
// the same injection (scopes intersected), a mode takes the minimum, and a
// deny glob prev applied stays unless its lifting was consented to.
//
// Rule details of consented items come from mf for an interactive answer
// (file nil). For a grant file they come from the file restricted to mf
// (buildGrant(mf, file, nil, nil), the same intersection as above), and
// every deny glob of the file applies: the stored grant is never wider
// than the file on any dimension (deny globs, approvals, secret scopes
// and injection, modes) nor than mf. At install, with prev nil and every
// group asked, the result is exactly that intersection, so the stored
// grant decides as the file does.
func buildGrant(mf *manifest.Manifest, prev *manifest.Permissions, consented map[Group][]string, file *manifest.Permissions) manifest.Permissions {
	mp := mf.Permissions
	detail := mp
	if file != nil {
		detail = buildGrant(mf, file, nil, nil)
	}
	req := Items(mp)
	var had map[Group][]string
	pp := manifest.Permissions{}
	if prev != nil {
		had, pp = GrantItems(*prev), *prev
	}
	p := manifest.Permissions{Filesystem: &manifest.Filesystem{Deny: []string{}}, Network: &manifest.Network{Requests: []manifest.NetRule{}}, Secrets: []manifest.Secret{}}
	p.Filesystem.Read = carryGlobs(req[GroupFilesystemRead], had[GroupFilesystemRead], consented[GroupFilesystemRead])
	p.Filesystem.Write = carryGlobs(req[GroupFilesystemWrite], had[GroupFilesystemWrite], consented[GroupFilesystemWrite])
	if mp.Filesystem != nil {
		p.Filesystem.Deny = append(p.Filesystem.Deny, mp.Filesystem.Deny...)
	}
	if file != nil {
		p.Filesystem.Deny = append(p.Filesystem.Deny, detail.Filesystem.Deny...)
	}
	if pp.Filesystem != nil {
		for _, d := range pp.Filesystem.Deny {
			if !slices.Contains(consented[GroupDenyLifted], d) {
				p.Filesystem.Deny = append(p.Filesystem.Deny, d)
			}
		}
	}
	p.Filesystem.Deny = slices.Compact(slices.Sorted(slices.Values(p.Filesystem.Deny)))
	if mp.Network != nil {
		for _, r := range mp.Network.Requests {
			for _, method := range r.Methods {
				for _, path := range r.Paths {
					from := pp.Network // what grants the item: prev, or the consent's details
					if slices.ContainsFunc(consented[GroupNetwork], func(it string) bool { return sameNetItem(it, method, r.Origin, path) }) {
						from = detail.Network
					}
					a, ok := grantedApproval(from, method, r.Origin, path)
					if !ok {
						continue
					}
					approval := r.Approval
					if a == "per_action" {
						approval = a
					}
					// One rule per granted (method, path) pair keeps the grant exact.
					p.Network.Requests = append(p.Network.Requests, manifest.NetRule{Origin: r.Origin, Methods: []string{method}, Paths: []string{path}, Approval: approval})
				}
			}
		}
	}
	for _, s := range mp.Secrets {
		from := pp.Secrets // what grants the secret: prev, or the consent's details
		if slices.Contains(consented[GroupSecrets], s.Name) {
			from = detail.Secrets
		}
		i := slices.IndexFunc(from, func(ps manifest.Secret) bool { return ps.Name == s.Name })
		if i < 0 {
			continue
		}
		ps := from[i]
		if ps.Purpose != s.Purpose || ps.InjectAs != s.InjectAs || ps.Header != s.Header || ps.Env != s.Env {
			continue // retargeted without consent: not granted
		}
		c := s
		c.Scopes = slices.DeleteFunc(slices.Clone(s.Scopes), func(sc string) bool { return !slices.Contains(ps.Scopes, sc) })
		p.Secrets = append(p.Secrets, c)
	}
	var prevSpawn, prevWrites string
	if pp.Process != nil {
		prevSpawn = pp.Process.Spawn
	}
	if pp.ExternalWrites != nil {
		prevWrites = pp.ExternalWrites.Default
	}
	p.Process = &manifest.Process{Spawn: carryMode(consented[GroupProcess], prevSpawn, manifest.ProcessMode(mp))}
	p.ExternalWrites = &manifest.ExternalWrites{Default: carryMode(consented[GroupExternalWrites], prevWrites, manifest.ExternalWriteMode(mp))}
	return p
}

// carryGlobs keeps the globs of had that a requested glob covers, replaces
// one that covers requested globs by those, and adds the consented ones.
func carryGlobs(req, had, consented []string) []string {
	out := slices.Clone(consented)
	for _, h := range had {
		if slices.ContainsFunc(req, func(r string) bool { return manifest.GlobCovers(r, h) }) {
			out = append(out, h)
			continue
		}
		for _, r := range req {
			if manifest.GlobCovers(h, r) {
				out = append(out, r)
			}
		}
	}
	return slices.Compact(slices.Sorted(slices.Values(out)))
}

// sameNetItem reports whether consent item it ("METHOD ORIGIN PATH") names
// method, origin and a template of the same shape as path.
func sameNetItem(it, method, origin, path string) bool {
	f := strings.Fields(it)
	return len(f) == 3 && f[0] == method && f[1] == origin && manifest.SameTemplate(f[2], path)
}

// grantedApproval returns the approval under which n grants the request:
// never when any rule admits it without approval (the most permissive rule
// of a layer wins), else per_action; ok is false when no rule admits it.
func grantedApproval(n *manifest.Network, method, origin, path string) (approval string, ok bool) {
	if n == nil {
		return "", false
	}
	for _, r := range n.Requests {
		if r.Origin != origin || !slices.Contains(r.Methods, method) || !slices.ContainsFunc(r.Paths, func(p string) bool { return manifest.SameTemplate(p, path) }) {
			continue
		}
		if r.Approval != "per_action" {
			return "never", true
		}
		approval, ok = "per_action", true
	}
	return approval, ok
}

// carryMode is the consented mode, else the minimum of what was granted and
// what is requested (deny when nothing was granted or a mode does not parse).
func carryMode(consented []string, granted, requested string) string {
	if len(consented) > 0 {
		return consented[0]
	}
	g, err1 := capability.ParseMode(granted)
	r, err2 := capability.ParseMode(requested)
	if err1 != nil || err2 != nil {
		return capability.Deny.String()
	}
	return capability.Min(g, r).String()
}

// checkGrant refuses a grant that gives more than the manifest requests
// (PLUGIN_GRANT_MISMATCH), naming the first item.
func checkGrant(m *manifest.Manifest, granted map[Group][]string) error {
	req := Items(m.Permissions)
	for _, g := range Groups {
		if it, bad := beyond(g, req[g], granted[g]); bad {
			return newErr(capability.ReasonPluginGrantMismatch, "consent", m.ID,
				fmt.Sprintf("grant gives %s %s, which %s@%s does not request", g, it, m.ID, m.Version), nil)
		}
	}
	return nil
}

// checkGrantSecrets refuses (PLUGIN_GRANT_MISMATCH) a grant file secret
// that m does not request as the file names it: toward another purpose,
// injected otherwise, or with a scope m does not request. ([checkGrant]
// compares secrets by name only.)
func checkGrantSecrets(m *manifest.Manifest, file manifest.Permissions) error {
	d := manifest.DiffPermissions(manifest.Permissions{Secrets: m.Permissions.Secrets}, manifest.Permissions{Secrets: file.Secrets})
	if !d.NeedsConsent() {
		return nil
	}
	return newErr(capability.ReasonPluginGrantMismatch, "consent", m.ID,
		fmt.Sprintf("grant gives %s, which %s@%s does not request", slices.Concat(d.Added, d.Widened)[0], m.ID, m.Version), nil)
}

// verifyGrant refuses (PLUGIN_GRANT_MISMATCH) a built grant that
// [manifest.DiffPermissions] finds wider than what m requests: the last
// check before a grant is stored.
func verifyGrant(m *manifest.Manifest, grant manifest.Permissions) error {
	d := manifest.DiffPermissions(m.Permissions, grant)
	if !d.NeedsConsent() {
		return nil
	}
	return newErr(capability.ReasonPluginGrantMismatch, "consent", m.ID,
		fmt.Sprintf("grant would give %s, which %s@%s does not request", slices.Concat(d.Added, d.Widened)[0], m.ID, m.Version), nil)
}

// modeAtMost reports whether mode m is no more than ceiling.
func modeAtMost(m, ceiling string) bool {
	a, err1 := capability.ParseMode(m)
	b, err2 := capability.ParseMode(ceiling)
	return err1 == nil && err2 == nil && a <= b
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
	if wp.Process != nil && len(req[GroupProcess]) > 0 && !modeAtMost(req[GroupProcess][0], wp.Process.Spawn) {
		return forbid("process.spawn: "+wp.Process.Spawn, "process.spawn "+req[GroupProcess][0])
	}
	if wp.ExternalWrites != nil && len(req[GroupExternalWrites]) > 0 && !modeAtMost(req[GroupExternalWrites][0], wp.ExternalWrites.Default) {
		return forbid("external_writes.default: "+wp.ExternalWrites.Default, "external_writes "+req[GroupExternalWrites][0])
	}
	return nil
}

// ask runs the consent dialogue for the groups in items. Typed globs are
// normalized; an answer wider than the question is refused
// (PLUGIN_GRANT_MISMATCH); tool changes not all accepted decline
// (PLUGIN_CONSENT_DECLINED).
func ask(ctx context.Context, c Consenter, m *manifest.Manifest, items map[Group][]string, untrusted bool) (map[Group][]string, error) {
	out := map[Group][]string{}
	for _, g := range Groups {
		if len(items[g]) == 0 {
			continue
		}
		ans, err := c.Ask(ctx, Question{Plugin: m.ID, Version: m.Version, Group: g, Requested: slices.Clone(items[g]), Untrusted: untrusted})
		if err != nil {
			return nil, newErr(capability.ReasonPluginConsentDeclined, "consent", m.ID, "consent not given for "+string(g), err)
		}
		if g == GroupFilesystemRead || g == GroupFilesystemWrite {
			ans = slices.Clone(ans)
			for i, a := range ans {
				if ans[i], err = manifest.NormalizeGlob(a); err != nil {
					return nil, newErr(capability.ReasonPluginGrantMismatch, "consent", m.ID, fmt.Sprintf("answer %s %s", g, a), err)
				}
			}
		}
		if it, bad := beyond(g, items[g], ans); bad {
			return nil, newErr(capability.ReasonPluginGrantMismatch, "consent", m.ID, fmt.Sprintf("answer %s %s is wider than requested", g, it), nil)
		}
		if g == GroupTools && slices.ContainsFunc(items[g], func(it string) bool { return !slices.Contains(ans, it) }) {
			return nil, newErr(capability.ReasonPluginConsentDeclined, "consent", m.ID, "the tool changes were not accepted; the update stays held", nil)
		}
		if len(ans) > 0 {
			out[g] = slices.Compact(slices.Sorted(slices.Values(ans)))
		}
	}
	return out, nil
}
