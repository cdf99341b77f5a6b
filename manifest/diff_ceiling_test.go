package manifest

import (
	"slices"
	"testing"
)

// layer parses a workspace layer body ("" is no layer at all).
func layer(t *testing.T, body string) *Layer {
	t.Helper()
	if body == "none" {
		return nil
	}
	l, err := ParseLayer("p.yaml", []byte("schema_version: 2\nkind: workspace\npermissions:\n"+body))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestDiffCeiling: a ceiling layer leaves out what it does not bound, so
// its first appearance narrows, and dropping a section, an entry of a
// list it bounds, a deny or the whole file widens; both directions of
// every case are checked.
func TestDiffCeiling(t *testing.T) {
	const (
		none    = "none"
		empty   = "  {}\n"
		docs    = "  filesystem: {read: [\"workspace://docs/**\"]}\n"
		all     = "  filesystem: {read: [\"workspace://**\"]}\n"
		deny    = "  filesystem: {deny: [\"workspace://secrets/**\"]}\n"
		noNet   = "  network: {requests: []}\n"
		oneNet  = "  network: {requests: [{origin: \"https://a.example\", methods: [GET], paths: [\"/x\"]}]}\n"
		private = "  network: {allow_private: [\"127.0.0.1/32\"]}\n"
		netPriv = "  network: {requests: [], allow_private: [\"127.0.0.1/32\"]}\n"
		noSpawn = "  process: {spawn: deny}\n"
		noSecr  = "  secrets: []\n"
		askExt  = "  external_writes: {default: approval_required}\n"
	)
	for _, tc := range []struct {
		name     string
		old, new string
		widens   bool // old → new needs consent
		narrows  bool // old → new has a narrowing
	}{
		{"no file to an empty one", none, empty, false, false},
		{"no file to a read bound", none, docs, false, true},
		{"a read bound to everything", docs, all, true, false},
		{"a deny added", none, deny, false, true},
		{"no network to no bound", noNet, none, true, false},
		{"no network to one destination", noNet, oneNet, true, false},
		{"allow_private at first sight", none, private, true, false},
		{"allow_private beside an empty request list", noNet, netPriv, true, false},
		{"spawn denied", none, noSpawn, false, true},
		{"no secrets", none, noSecr, false, true},
		{"external writes ask", none, askExt, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := DiffCeiling(layer(t, tc.old), layer(t, tc.new))
			if d.NeedsConsent() != tc.widens || (len(d.Narrowed)+len(d.Removed) > 0) != tc.narrows {
				t.Errorf("DiffCeiling = %+v, want widens %v, narrows %v", d, tc.widens, tc.narrows)
			}
			back := DiffCeiling(layer(t, tc.new), layer(t, tc.old))
			if !d.Empty() && back.NeedsConsent() == tc.widens {
				t.Errorf("reverse NeedsConsent = %v: %+v", back.NeedsConsent(), back)
			}
		})
	}
}

// TestDiffList: equality is the only coverage, so a rewritten item is a
// new one; a restricting list flips the direction; a deciding list widens
// both ways.
func TestDiffList(t *testing.T) {
	kinds := func(cs []Change) []string {
		var out []string
		for _, c := range cs {
			out = append(out, c.Item)
		}
		return out
	}
	for _, tc := range []struct {
		name                              string
		old, new                          []string
		effect                            ListEffect
		added, removed, widened, narrowed []string
	}{
		{"allow added", []string{"Read"}, []string{"Read", "Bash(curl *)"}, Grants, []string{"Bash(curl *)"}, nil, nil, nil},
		{"allow dropped", []string{"Read", "Bash"}, []string{"Read"}, Grants, nil, []string{"Bash"}, nil, nil},
		{"allow rewritten wider", []string{"Bash(git *)"}, []string{"Bash"}, Grants, []string{"Bash"}, []string{"Bash(git *)"}, nil, nil},
		{"a covered-looking allow is still new", []string{"Bash(git *)"}, []string{"Bash(git *)", "Bash(git status; curl x)"}, Grants, []string{"Bash(git status; curl x)"}, nil, nil, nil},
		{"deny added", nil, []string{"Read(secrets/**)"}, Restricts, nil, nil, nil, []string{"Read(secrets/**)"}},
		{"deny dropped", []string{"Read(secrets/**)"}, nil, Restricts, nil, nil, []string{"Read(secrets/**)"}, nil},
		{"hook added", nil, []string{"PreToolUse ./h"}, Decides, []string{"PreToolUse ./h"}, nil, nil, nil},
		{"hook dropped", []string{"PreToolUse ./h"}, nil, Decides, nil, nil, []string{"PreToolUse ./h"}, nil},
		{"reordered", []string{"a", "b"}, []string{"b", "a"}, Grants, nil, nil, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := DiffList("k", tc.old, tc.new, tc.effect)
			for _, c := range []struct {
				what      string
				got, want []string
			}{{"added", kinds(d.Added), tc.added}, {"removed", kinds(d.Removed), tc.removed},
				{"widened", kinds(d.Widened), tc.widened}, {"narrowed", kinds(d.Narrowed), tc.narrowed}} {
				if !slices.Equal(c.got, c.want) {
					t.Errorf("%s = %q, want %q", c.what, c.got, c.want)
				}
			}
		})
	}
}

// TestDiffRank: up the order widens, down narrows, off the order widens
// either way.
func TestDiffRank(t *testing.T) {
	order := []string{"plan", "default", "bypassPermissions"}
	for _, tc := range []struct {
		old, new         string
		widens, narrowed bool
	}{
		{"default", "bypassPermissions", true, false},
		{"default", "plan", false, true},
		{"default", "default", false, false},
		{"default", "sometimes", true, false},
		{"sometimes", "plan", true, false},
	} {
		d := DiffRank("mode", tc.old, tc.new, order)
		if d.NeedsConsent() != tc.widens || (len(d.Narrowed) > 0) != tc.narrowed {
			t.Errorf("%s → %s = %+v", tc.old, tc.new, d)
		}
	}
}
