// Package usage answers `norma plugin usage`: which permissions an
// installed plugin's manifest declares that no audited event of the last N
// days used, and the narrower manifest that would drop them. It only reads:
// the audit log and the installed manifest, never the grant or the state.
//
// A decision names the manifest entry the request matched by its stable
// position (capability.Decision.Declared, audited by the broker as
// detail.declared: "plugin:permissions.network.requests[1].paths[0]",
// with the method in detail.method), so a network entry is counted per
// method and path template; an older event without it names only the
// entry in its rule when the request was allowed, and then counts for
// every method and path of the entry (never a false "unused"). Secrets are counted by the names the broker injected
// (detail.secrets), tools by the calls the gate audited, external writes by
// the external.write decisions. File-system globs and process spawning are
// enforced by the sandbox in the kernel, which reports no per-use event:
// they are listed as not observable, never as unused, and kept.
//
// Only events of the installed manifest (its digest) count: the positions
// of another version's entries mean other entries. History shorter than
// the window (a recent install, a new store) is said, so nothing is called
// unused that merely had no time to be used.
package usage

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/norma-run/norma/audit"
	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/internal/textdiff"
	"github.com/norma-run/norma/manifest"
)

// Entry kinds, as `plugin usage` prints them.
const (
	KindFSRead         = "filesystem.read"
	KindFSWrite        = "filesystem.write"
	KindNetwork        = "network"
	KindSecret         = "secret"
	KindProcess        = "process.spawn"
	KindExternalWrites = "external_writes"
	KindTool           = "tool"
)

// Entry is one declared permission.
type Entry struct {
	Kind string `json:"kind"`
	// ID is the entry's stable position in the manifest, as decisions
	// name it without their layer; a network entry is one method and one
	// path of a request rule: permissions.network.requests[1].methods[0].paths[2].
	ID string `json:"id"`
	// Item is what it grants: a glob, "METHODS ORIGIN PATHS", a secret
	// name, a mode, a tool name.
	Item string `json:"item"`
	// Observable is false when no audited event can show a use.
	Observable bool      `json:"observable"`
	Uses       int       `json:"uses"`
	Last       time.Time `json:"last,omitzero"`
	// Kept says why an unused entry stays in the suggestion ("").
	Kept string `json:"kept,omitempty"`

	req, method, path int // a network entry's positions
}

// Input is what [Analyze] reads.
type Input struct {
	Manifest *manifest.Manifest
	// InstalledAt is when the installed version was installed.
	InstalledAt time.Time
	// ToolName maps a declared tool to the name the gate audits it under
	// (mcp__SERVER__TOOL).
	ToolName func(string) string
	Days     int
	Now      time.Time
}

// Report is the answer.
type Report struct {
	Plugin         string `json:"plugin"`
	Version        string `json:"version"`
	ManifestDigest string `json:"manifest_digest"`
	Days           int    `json:"days"`
	// Since is the start of the window (Now - Days).
	Since time.Time `json:"since"`
	// HistoryFrom is when the events that can count begin: the later of
	// the install and the log's first event (zero: an empty log).
	HistoryFrom time.Time `json:"history_from,omitzero"`
	// Complete is set when the history covers the whole window; only
	// then are the entries not used called unused.
	Complete bool    `json:"history_complete"`
	Events   int     `json:"events"`
	Entries  []Entry `json:"entries"`
	// Suggested is the manifest without the unused entries (YAML that
	// manifest.Parse accepts); Diff is the unified diff from the installed
	// one, both of the same rendering ([manifest.Manifest.Marshal]).
	Suggested string `json:"suggested_manifest"`
	Diff      string `json:"diff"`
}

// NotUsed returns the observable entries no event used.
func (r *Report) NotUsed() []Entry {
	var out []Entry
	for _, e := range r.Entries {
		if e.Observable && e.Uses == 0 {
			out = append(out, e)
		}
	}
	return out
}

// pageSize is how many events one query reads.
const pageSize = 1000

// Analyze reads the events of in.Manifest's plugin from b and reports.
func Analyze(ctx context.Context, b audit.Backend, in Input) (*Report, error) {
	m := in.Manifest
	if in.Days < 1 {
		return nil, fmt.Errorf("usage: days must be at least 1, not %d", in.Days)
	}
	r := &Report{Plugin: m.ID, Version: m.Version, ManifestDigest: m.Digest(), Days: in.Days,
		Since: in.Now.Add(-time.Duration(in.Days) * 24 * time.Hour).UTC(), Entries: entries(m)}
	first, err := b.QueryAudit(ctx, audit.Filter{Limit: 1})
	if err != nil {
		return nil, fmt.Errorf("usage: audit query: %w", err)
	}
	if len(first) > 0 {
		r.HistoryFrom = time.Unix(0, first[0].TimeNS).UTC()
		if in.InstalledAt.After(r.HistoryFrom) {
			r.HistoryFrom = in.InstalledAt.UTC()
		}
		r.Complete = !r.HistoryFrom.After(r.Since)
	}
	idx := map[string]int{}
	secrets := map[string]int{}
	tools := map[string]int{}
	for i, e := range r.Entries {
		idx[e.ID] = i
		switch e.Kind {
		case KindSecret:
			secrets[e.Item] = i
		case KindTool:
			tools[in.ToolName(e.Item)] = i
		}
	}
	use := func(i int, t time.Time) {
		e := &r.Entries[i]
		e.Uses++
		if t.After(e.Last) {
			e.Last = t.UTC()
		}
	}
	err = each(ctx, b, audit.Filter{Plugin: m.ID, Since: r.Since}, func(ev audit.Event) {
		if ev.ManifestDigest != r.ManifestDigest {
			return // another version's positions name other entries
		}
		r.Events++
		if id := declared(ev); id != "" {
			if i, ok := idx[id]; ok {
				use(i, ev.Time)
			}
			for _, i := range netUses(r.Entries, m, id, ev.Detail["method"]) {
				use(i, ev.Time)
			}
		}
		for _, s := range strings.Split(ev.Detail["secrets"], ",") {
			if i, ok := secrets[s]; ok && s != "" {
				use(i, ev.Time)
			}
		}
		if ev.Type == audit.TypeToolCallFinished {
			return // a call that ran was counted when it started
		}
		if i, ok := tools[ev.Tool]; ok && ev.Tool != "" {
			use(i, ev.Time)
		}
		if ev.CapabilityKind == capability.ExternalWrite.String() {
			if i, ok := idx[idExternalWrites]; ok {
				use(i, ev.Time)
			}
		}
	})
	if err != nil {
		return nil, err
	}
	if err := r.suggest(m); err != nil {
		return nil, err
	}
	return r, nil
}

// each calls fn for every event that matches f, in sequence order, a page
// of rows at a time.
func each(ctx context.Context, b audit.Backend, f audit.Filter, fn func(audit.Event)) error {
	f.Limit = pageSize
	for {
		rows, err := b.QueryAudit(ctx, f)
		if err != nil {
			return fmt.Errorf("usage: audit query: %w", err)
		}
		for _, row := range rows {
			var ev audit.Event
			if err := json.Unmarshal(row.Body, &ev); err != nil {
				return fmt.Errorf("usage: audit event %d: %w", row.Seq, err)
			}
			if ev.Plugin == f.Plugin {
				fn(ev)
			}
		}
		if len(rows) < pageSize {
			return nil
		}
		f.AfterSeq = rows[len(rows)-1].Seq
	}
}

// declared is the manifest entry an event names: detail.declared, or an
// older event's rule when the manifest layer decided it. The layer prefix
// and a tool rule's ".approval" are dropped.
func declared(ev audit.Event) string {
	id := ev.Detail["declared"]
	if id == "" {
		id = ev.Rule
	}
	id, ok := strings.CutPrefix(id, string(capability.LayerPlugin)+":")
	if !ok {
		return ""
	}
	return strings.TrimSuffix(id, ".approval")
}

// netUses returns the network entries a declared id names: one method of
// one path template (…requests[i].paths[j] and the event's method), or,
// from an older event that names only the rule (…requests[i]), every
// method and path of it.
func netUses(es []Entry, m *manifest.Manifest, id, method string) []int {
	var i, j int
	var out []int
	switch {
	case scan(id, "permissions.network.requests[%d].paths[%d]", &i, &j):
		for x, e := range es {
			if e.Kind == KindNetwork && e.req == i && e.path == j && m.Permissions.Network.Requests[i].Methods[e.method] == method {
				out = append(out, x)
			}
		}
	case scan(id, "permissions.network.requests[%d]", &i):
		for x, e := range es {
			if e.Kind == KindNetwork && e.req == i {
				out = append(out, x)
			}
		}
	}
	return out
}

// scan reports whether s is exactly format with its numbers.
func scan(s, format string, n ...any) bool {
	if c, err := fmt.Sscanf(s, format, n...); err != nil || c != len(n) {
		return false
	}
	args := make([]any, len(n))
	for i, p := range n {
		args[i] = *(p.(*int))
	}
	return fmt.Sprintf(format, args...) == s
}

const (
	idProcess        = "permissions.process.spawn"
	idExternalWrites = "permissions.external_writes.default"
)

// entries lists what m declares, in manifest order. Deny globs are no
// permission and a deny mode grants nothing: neither is listed.
func entries(m *manifest.Manifest) []Entry {
	var out []Entry
	p := m.Permissions
	if fs := p.Filesystem; fs != nil {
		for i, g := range fs.Read {
			out = append(out, Entry{Kind: KindFSRead, ID: fmt.Sprintf("permissions.filesystem.read[%d]", i), Item: g})
		}
		for i, g := range fs.Write {
			out = append(out, Entry{Kind: KindFSWrite, ID: fmt.Sprintf("permissions.filesystem.write[%d]", i), Item: g})
		}
	}
	if n := p.Network; n != nil {
		for i, q := range n.Requests {
			for k, meth := range q.Methods {
				for j, path := range q.Paths {
					out = append(out, Entry{Kind: KindNetwork, ID: fmt.Sprintf("permissions.network.requests[%d].methods[%d].paths[%d]", i, k, j),
						Item: meth + " " + q.Origin + " " + path, Observable: true, req: i, method: k, path: j})
				}
			}
		}
	}
	for i, s := range p.Secrets {
		out = append(out, Entry{Kind: KindSecret, ID: fmt.Sprintf("permissions.secrets[%d]", i), Item: s.Name, Observable: true})
	}
	if mode := manifest.ProcessMode(p); mode != "deny" {
		out = append(out, Entry{Kind: KindProcess, ID: idProcess, Item: mode})
	}
	if mode := manifest.ExternalWriteMode(p); mode != "deny" {
		out = append(out, Entry{Kind: KindExternalWrites, ID: idExternalWrites, Item: mode, Observable: true})
	}
	for i, t := range m.Tools {
		out = append(out, Entry{Kind: KindTool, ID: fmt.Sprintf("tools[%d]", i), Item: t.Name, Observable: true})
	}
	return out
}

// suggest fills Suggested and Diff: m without the observable entries no
// event used, parsed back to prove it is a valid manifest.
func (r *Report) suggest(m *manifest.Manifest) error {
	orig, err := m.Marshal()
	if err != nil {
		return err
	}
	s, err := clone(m)
	if err != nil {
		return err
	}
	drop := map[string]bool{}
	for i := range r.Entries {
		e := &r.Entries[i]
		if !e.Observable || e.Uses > 0 {
			continue
		}
		if e.Kind == KindSecret && referenced(m, e.Item) {
			e.Kept = "the launch line uses ${secret:" + e.Item + "}"
			continue
		}
		drop[e.ID] = true
	}
	if !slices.ContainsFunc(r.Entries, func(e Entry) bool { return e.Kind == KindTool && !drop[e.ID] }) {
		// A manifest declares one tool at least.
		for i := range r.Entries {
			if e := &r.Entries[i]; e.Kind == KindTool {
				delete(drop, e.ID)
				e.Kept = "no tool was used; a manifest declares one at least: consider removing the plugin"
			}
		}
	}
	if drop[idExternalWrites] && slices.ContainsFunc(r.Entries, func(e Entry) bool {
		t, _ := m.Tool(e.Item)
		return e.Kind == KindTool && !drop[e.ID] && t.WritesExternal()
	}) {
		delete(drop, idExternalWrites)
		for i := range r.Entries {
			if e := &r.Entries[i]; e.ID == idExternalWrites {
				e.Kept = "a tool that stays writes external state"
			}
		}
	}
	p := &s.Permissions
	if n := p.Network; n != nil {
		n.Requests = narrowNet(n.Requests, r.Entries, drop)
		if len(n.Requests) == 0 && len(n.AllowPrivate) == 0 {
			p.Network = nil
		}
	}
	p.Secrets = keep(p.Secrets, "permissions.secrets", drop)
	if drop[idExternalWrites] {
		p.ExternalWrites = &manifest.ExternalWrites{Default: "deny"}
	}
	s.Tools = keep(s.Tools, "tools", drop)
	out, err := s.Marshal()
	if err != nil {
		return err
	}
	if _, err := manifest.Parse("suggested-manifest.yaml", out); err != nil {
		return fmt.Errorf("usage: the suggested manifest does not validate: %w", err)
	}
	r.Suggested = string(out)
	r.Diff = textdiff.Unified("installed/manifest.yaml", "suggested/manifest.yaml", string(orig), string(out))
	return nil
}

// narrowNet returns the request rules with only the methods and paths
// that are kept: a rule's kept methods are grouped by the set of paths
// kept for them, one rule per group, so the result admits exactly the
// kept (method, path) pairs; a rule with none kept is gone.
func narrowNet(rules []manifest.NetRule, es []Entry, drop map[string]bool) []manifest.NetRule {
	kept := map[[3]int]bool{}
	for _, e := range es {
		if e.Kind == KindNetwork && !drop[e.ID] {
			kept[[3]int{e.req, e.method, e.path}] = true
		}
	}
	var out []manifest.NetRule
	for i, q := range rules {
		var groups []manifest.NetRule
		for k, meth := range q.Methods {
			var paths []string
			for j, p := range q.Paths {
				if kept[[3]int{i, k, j}] {
					paths = append(paths, p)
				}
			}
			if len(paths) == 0 {
				continue
			}
			if g := slices.IndexFunc(groups, func(g manifest.NetRule) bool { return slices.Equal(g.Paths, paths) }); g >= 0 {
				groups[g].Methods = append(groups[g].Methods, meth)
				continue
			}
			groups = append(groups, manifest.NetRule{Origin: q.Origin, Methods: []string{meth}, Paths: paths, Approval: q.Approval})
		}
		out = append(out, groups...)
	}
	return out
}

// keep returns the elements of list whose id (prefix[i]) is not dropped.
func keep[T any](list []T, prefix string, drop map[string]bool) []T {
	out := make([]T, 0, len(list))
	for i, x := range list {
		if !drop[fmt.Sprintf("%s[%d]", prefix, i)] {
			out = append(out, x)
		}
	}
	return out
}

// referenced reports whether m's args or env use secret name.
func referenced(m *manifest.Manifest, name string) bool {
	ref := "${secret:" + name + "}"
	for _, a := range m.Args {
		if strings.Contains(a, ref) {
			return true
		}
	}
	for _, v := range m.Env {
		if strings.Contains(v, ref) {
			return true
		}
	}
	return false
}

// clone copies m through its JSON form (a Manifest holds a sync.Once).
func clone(m *manifest.Manifest) (*manifest.Manifest, error) {
	b, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	var c manifest.Manifest
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&c); err != nil {
		return nil, err
	}
	c.Tools = slices.Clone(c.Tools)
	return &c, nil
}
