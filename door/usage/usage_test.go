package usage

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/norma-run/norma/audit"
	"github.com/norma-run/norma/manifest"
)

var now = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

func toolName(n string) string { return "mcp__usage__" + n }

// logWith returns a backend holding evs (their times as given).
func logWith(t *testing.T, evs []audit.Event) audit.Backend {
	t.Helper()
	b := audit.NewMemoryBackend()
	l, err := audit.Open(b, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		if err := l.Record(context.Background(), e); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return b
}

func notUsed(r *Report) []string {
	var out []string
	for _, e := range r.NotUsed() {
		out = append(out, e.ID)
	}
	return out
}

func TestAnalyze(t *testing.T) {
	m, err := manifest.ParseFile("testdata/manifest.yaml")
	if err != nil {
		t.Fatal(err)
	}
	d := m.Digest()
	old := now.Add(-40 * 24 * time.Hour)
	installed := now.Add(-35 * 24 * time.Hour)
	recent := now.Add(-2 * time.Hour)
	start := audit.Event{Type: audit.TypePluginInstalled, Plugin: m.ID, ManifestDigest: d, Time: old}
	get := audit.Event{Type: audit.TypeCapabilityDecision, Plugin: m.ID, ManifestDigest: d, CapabilityKind: "net.request", Decision: "allow",
		Rule: "plugin:permissions.network.requests[0]", Detail: map[string]string{"declared": "plugin:permissions.network.requests[0].paths[0]", "method": "GET", "secrets": "api_token"}, Time: recent}
	everyTool := []audit.Event{
		{Type: audit.TypeToolCallStarted, Plugin: m.ID, ManifestDigest: d, Tool: toolName("fetch"), Time: recent},
		{Type: audit.TypeToolCallStarted, Plugin: m.ID, ManifestDigest: d, Tool: toolName("post"), CapabilityKind: "external.write", Time: recent},
	}
	all := []string{"permissions.network.requests[0].methods[0].paths[0]", "permissions.network.requests[1].methods[0].paths[0]", "permissions.network.requests[2].methods[0].paths[0]",
		"permissions.secrets[0]", "permissions.secrets[1]", "permissions.secrets[2]", "permissions.external_writes.default", "tools[0]", "tools[1]"}
	for _, tc := range []struct {
		name     string
		evs      []audit.Event
		days     int
		complete bool
		notUsed  []string
	}{
		{"nothing used", []audit.Event{start}, 30, true, all},
		{"one request with its secret, every tool", append([]audit.Event{start, get}, everyTool...), 30, true,
			[]string{"permissions.network.requests[1].methods[0].paths[0]", "permissions.network.requests[2].methods[0].paths[0]", "permissions.secrets[1]", "permissions.secrets[2]"}},
		// A grant refused the POST (rule is the grant's): the declared
		// entry was still reached for.
		{"refused by a later layer", []audit.Event{start, {Type: audit.TypeCapabilityDecision, Plugin: m.ID, ManifestDigest: d, Decision: "deny",
			Layer: "grant", Detail: map[string]string{"declared": "plugin:permissions.network.requests[1].paths[0]", "method": "POST"}, Time: recent}}, 30, true,
			slices.DeleteFunc(slices.Clone(all), func(s string) bool { return s == "permissions.network.requests[1].methods[0].paths[0]" })},
		// An event written before decisions named the entry: its rule does.
		{"old event, rule only", []audit.Event{start, {Type: audit.TypeCapabilityDecision, Plugin: m.ID, ManifestDigest: d, Decision: "allow",
			Rule: "plugin:permissions.network.requests[2]", Time: recent}}, 30, true,
			slices.DeleteFunc(slices.Clone(all), func(s string) bool { return s == "permissions.network.requests[2].methods[0].paths[0]" })},
		// Another plugin's, another version's and a too old event do not count.
		{"other plugin, other digest, out of the window", []audit.Event{start,
			{Type: audit.TypeToolCallStarted, Plugin: "com.example.other", ManifestDigest: d, Tool: toolName("fetch"), Time: recent},
			{Type: audit.TypeToolCallStarted, Plugin: m.ID, ManifestDigest: "sha256:other", Tool: toolName("fetch"), Time: recent},
			{Type: audit.TypeToolCallStarted, Plugin: m.ID, ManifestDigest: d, Tool: toolName("post"), Time: now.Add(-31 * 24 * time.Hour)},
		}, 30, true, all},
		// The install is 35 days old: 40 days are not covered.
		{"window longer than the history", []audit.Event{start, get}, 40, false, nil},
		{"empty log", nil, 30, false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Analyze(context.Background(), logWith(t, tc.evs), Input{Manifest: m, InstalledAt: installed, ToolName: toolName, Days: tc.days, Now: now})
			if err != nil {
				t.Fatal(err)
			}
			if r.Complete != tc.complete {
				t.Errorf("Complete = %v, want %v (history from %v, since %v)", r.Complete, tc.complete, r.HistoryFrom, r.Since)
			}
			if tc.notUsed != nil && !slices.Equal(notUsed(r), tc.notUsed) {
				t.Errorf("not used = %v\nwant %v", notUsed(r), tc.notUsed)
			}
			// Globs and spawning are never called unused.
			for _, e := range r.Entries {
				if (e.Kind == KindFSRead || e.Kind == KindFSWrite || e.Kind == KindProcess) && e.Observable {
					t.Errorf("%s is marked observable", e.ID)
				}
			}
			// The suggestion parses and keeps what was used.
			s, err := manifest.Parse("s.yaml", []byte(r.Suggested))
			if err != nil {
				t.Fatalf("suggested manifest: %v\n%s", err, r.Suggested)
			}
			if len(s.Permissions.Filesystem.Read) != 2 || s.Permissions.Process.Spawn != "allow" {
				t.Errorf("the suggestion dropped what cannot be observed: %+v", s.Permissions)
			}
			if !slices.ContainsFunc(s.Permissions.Secrets, func(x manifest.Secret) bool { return x.Name == "launch_token" }) {
				t.Errorf("the suggestion dropped a secret the launch line uses")
			}
		})
	}
}

// TestSuggestion: exactly the unused entries are gone, the rest is the
// installed manifest, and the diff says so.
func TestSuggestion(t *testing.T) {
	m, err := manifest.ParseFile("testdata/manifest.yaml")
	if err != nil {
		t.Fatal(err)
	}
	d := m.Digest()
	recent := now.Add(-time.Hour)
	evs := []audit.Event{
		{Type: audit.TypePluginInstalled, Plugin: m.ID, ManifestDigest: d, Time: now.Add(-60 * 24 * time.Hour)},
		{Type: audit.TypeCapabilityDecision, Plugin: m.ID, ManifestDigest: d, Detail: map[string]string{"declared": "plugin:permissions.network.requests[0].paths[0]", "method": "GET", "secrets": "api_token"}, Time: recent},
		{Type: audit.TypeToolCallStarted, Plugin: m.ID, ManifestDigest: d, Tool: toolName("fetch"), Time: recent},
	}
	r, err := Analyze(context.Background(), logWith(t, evs), Input{Manifest: m, ToolName: toolName, Days: 30, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	s, err := manifest.Parse("s.yaml", []byte(r.Suggested))
	if err != nil {
		t.Fatal(err)
	}
	p := s.Permissions
	var names []string
	for _, x := range p.Secrets {
		names = append(names, x.Name)
	}
	if len(p.Network.Requests) != 1 || p.Network.Requests[0].Paths[0] != "/items/{id}" || !slices.Equal(names, []string{"api_token", "launch_token"}) ||
		len(s.Tools) != 1 || s.Tools[0].Name != "fetch" || p.ExternalWrites.Default != "deny" {
		t.Fatalf("suggested:\n%s", r.Suggested)
	}
	delta := manifest.Diff(m, s)
	if len(delta.Added) != 0 || len(delta.Widened) != 0 {
		t.Errorf("the suggestion widens: %+v", delta)
	}
	for _, line := range []string{"-          - /items\n", "-      name: spare_token\n", "-    name: post\n", "+    default: deny\n"} {
		if !strings.Contains(r.Diff, line) {
			t.Errorf("diff lacks %q:\n%s", line, r.Diff)
		}
	}
	for _, e := range r.Entries {
		if e.Item == "launch_token" && e.Kept == "" {
			t.Errorf("launch_token kept without a reason")
		}
	}
}

// TestNarrowNetwork: a rule of two methods and two paths of which GET /a
// and POST /b were used becomes two rules that admit exactly those; an
// event of another method on a used path does not count.
func TestNarrowNetwork(t *testing.T) {
	m, err := manifest.Parse("m.yaml", []byte(`schema_version: 2
id: com.example.net
version: 1.0.0
entrypoint: bin/server
tools:
  - {name: fetch, risk: read, approval: never}
permissions:
  network:
    requests:
      - {origin: https://api.example.invalid, methods: [GET, POST], paths: ["/a", "/b"], approval: per_action}
`))
	if err != nil {
		t.Fatal(err)
	}
	d := m.Digest()
	recent := now.Add(-time.Hour)
	dec := func(path, method string) audit.Event {
		return audit.Event{Type: audit.TypeCapabilityDecision, Plugin: m.ID, ManifestDigest: d, Time: recent,
			Detail: map[string]string{"declared": "plugin:permissions.network.requests[0].paths[" + path + "]", "method": method}}
	}
	evs := []audit.Event{{Type: audit.TypePluginInstalled, Plugin: m.ID, ManifestDigest: d, Time: now.Add(-60 * 24 * time.Hour)},
		dec("0", "GET"), dec("1", "POST"), dec("1", "DELETE"),
		{Type: audit.TypeToolCallStarted, Plugin: m.ID, ManifestDigest: d, Tool: toolName("fetch"), Time: recent}}
	r, err := Analyze(context.Background(), logWith(t, evs), Input{Manifest: m, ToolName: toolName, Days: 30, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := notUsed(r), []string{"permissions.network.requests[0].methods[0].paths[1]", "permissions.network.requests[0].methods[1].paths[0]",
		"permissions.external_writes.default"}; !slices.Equal(got, want) {
		t.Fatalf("not used %v, want %v", got, want)
	}
	s, err := manifest.Parse("s.yaml", []byte(r.Suggested))
	if err != nil {
		t.Fatal(err)
	}
	want := []manifest.NetRule{
		{Origin: "https://api.example.invalid:443", Methods: []string{"GET"}, Paths: []string{"/a"}, Approval: "per_action"},
		{Origin: "https://api.example.invalid:443", Methods: []string{"POST"}, Paths: []string{"/b"}, Approval: "per_action"},
	}
	if !reflect.DeepEqual(s.Permissions.Network.Requests, want) {
		t.Fatalf("suggested requests %+v, want %+v", s.Permissions.Network.Requests, want)
	}
	if delta := manifest.Diff(m, s); len(delta.Added)+len(delta.Widened) != 0 {
		t.Errorf("the suggestion widens: %+v", delta)
	}
}

// TestManyEvents: events past the first page count, once each.
func TestManyEvents(t *testing.T) {
	m, err := manifest.ParseFile("testdata/manifest.yaml")
	if err != nil {
		t.Fatal(err)
	}
	evs := []audit.Event{{Type: audit.TypePluginInstalled, Plugin: m.ID, ManifestDigest: m.Digest(), Time: now.Add(-60 * 24 * time.Hour)}}
	for i := range 2*pageSize + 7 {
		typ := audit.TypeToolCallStarted
		if i%2 == 1 {
			typ = audit.TypeToolCallFinished
		}
		evs = append(evs, audit.Event{Type: typ, Plugin: m.ID, ManifestDigest: m.Digest(), Tool: toolName("fetch"), Time: now.Add(-time.Hour)})
	}
	evs = append(evs, audit.Event{Type: audit.TypeToolCallStarted, Plugin: m.ID, ManifestDigest: m.Digest(), Tool: toolName("post"), Time: now.Add(-time.Minute)})
	r, err := Analyze(context.Background(), logWith(t, evs), Input{Manifest: m, ToolName: toolName, Days: 30, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range r.Entries {
		switch e.Item {
		case "fetch":
			if e.Uses != pageSize+4 {
				t.Errorf("fetch uses %d, want %d (each call once)", e.Uses, pageSize+4)
			}
		case "post":
			if e.Uses != 1 || !e.Last.Equal(now.Add(-time.Minute)) {
				t.Errorf("post, the last event: %+v", e)
			}
		}
	}
}

// FuzzNetUses: whatever an event's declared id and method say (the log is
// data), netUses never panics and names only network entries, of the rule
// and path the id names.
func FuzzNetUses(f *testing.F) {
	m, err := manifest.ParseFile("testdata/manifest.yaml")
	if err != nil {
		f.Fatal(err)
	}
	es := entries(m)
	f.Fuzz(func(t *testing.T, id, method string) {
		for _, i := range netUses(es, m, id, method) {
			e := es[i]
			if e.Kind != KindNetwork {
				t.Fatalf("%q %q named %+v", id, method, e)
			}
			if !strings.HasPrefix(id, fmt.Sprintf("permissions.network.requests[%d]", e.req)) {
				t.Fatalf("%q named an entry of rule %d", id, e.req)
			}
		}
	})
}
