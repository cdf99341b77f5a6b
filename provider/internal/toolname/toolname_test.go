package toolname

import (
	"regexp"
	"strings"
	"testing"

	"github.com/norma-run/norma/provider"
)

var wireName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// TestBuild: a valid name goes out unchanged, a name with invalid bytes is
// sanitized, and a suffix appears only when two names would share a wire
// form or a name is cut to 64 bytes.
func TestBuild(t *testing.T) {
	long := strings.Repeat("a", 70)
	tests := []struct {
		name  string
		set   []string
		want  map[string]string // name → wire ("" : a suffixed form of the sanitized prefix)
		plain map[string]string // name → the prefix a suffixed wire name starts with
	}{
		{name: "valid kept", set: []string{"Read", "mcp__memory__read_graph", "mcp__a-b_c"},
			want: map[string]string{"Read": "Read", "mcp__memory__read_graph": "mcp__memory__read_graph", "mcp__a-b_c": "mcp__a-b_c"}},
		{name: "dots sanitized, no suffix", set: []string{"mcp__com.example.issue-helper__issues.comment", "Read"},
			want: map[string]string{"mcp__com.example.issue-helper__issues.comment": "mcp__com_example_issue-helper__issues_comment", "Read": "Read"}},
		{name: "unicode sanitized", set: []string{"lire_fichier_é"}, want: map[string]string{"lire_fichier_é": "lire_fichier___"}},
		{name: "a valid name keeps its form, the other is suffixed", set: []string{"a.b", "a_b"},
			want: map[string]string{"a_b": "a_b"}, plain: map[string]string{"a.b": "a_b_"}},
		{name: "two sanitize alike: both suffixed", set: []string{"a.b", "a b"},
			plain: map[string]string{"a.b": "a_b_", "a b": "a_b_"}},
		{name: "64 bytes fits", set: []string{strings.Repeat("b", 64)}, want: map[string]string{strings.Repeat("b", 64): strings.Repeat("b", 64)}},
		{name: "cut to 64", set: []string{long}, plain: map[string]string{long: strings.Repeat("a", 55) + "_"}},
		{name: "empty", set: []string{""}, plain: map[string]string{"": "_"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := Build(tt.set)
			checkMap(t, tt.set, m)
			for n, w := range tt.want {
				if got := m.Wire(n); got != w {
					t.Errorf("Wire(%q) = %q, want %q", n, got, w)
				}
			}
			for n, prefix := range tt.plain {
				got := m.Wire(n)
				if !strings.HasPrefix(got, prefix) || len(got) != len(prefix)+suffixLen-1 {
					t.Errorf("Wire(%q) = %q, want %q and a hash suffix", n, got, prefix)
				}
			}
		})
	}
}

// TestBuildOrderFree: the map depends on the set of names, not on their
// order or repetition.
func TestBuildOrderFree(t *testing.T) {
	a := Build([]string{"a.b", "a_b", "x.y", "a b", "a.b"})
	b := Build([]string{"a b", "x.y", "a_b", "a.b"})
	for _, n := range []string{"a.b", "a_b", "x.y", "a b"} {
		if a.Wire(n) != b.Wire(n) {
			t.Errorf("Wire(%q) = %q in one order, %q in another", n, a.Wire(n), b.Wire(n))
		}
	}
}

// TestTakenSuffix: a name that spells out another's suffixed form keeps
// it (it is valid), and the other is rehashed.
func TestTakenSuffix(t *testing.T) {
	taken := Build([]string{"a.b", "a_b"}).Wire("a.b")
	set := []string{"a.b", "a_b", taken}
	m := Build(set)
	checkMap(t, set, m)
	if m.Wire(taken) != taken || m.Wire("a.b") == taken {
		t.Fatalf("Wire(%q) = %q, Wire(a.b) = %q", taken, m.Wire(taken), m.Wire("a.b"))
	}
}

func TestDecodeUnknown(t *testing.T) {
	m := Build([]string{"Read"})
	if got := m.Decode("unknown_tool"); got != "unknown_tool" {
		t.Errorf("Decode(unknown) = %q, want unchanged", got)
	}
}

// TestForRequest: the names of the tools and of the history's tool uses
// are one set.
func TestForRequest(t *testing.T) {
	req := provider.Request{
		Tools: []provider.ToolSpec{{Name: "a_b"}},
		Messages: []provider.Message{{Role: provider.RoleAssistant, Blocks: []provider.Block{
			{Type: provider.BlockToolUse, ID: "1", Name: "a.b"}}}},
	}
	m := ForRequest(req)
	if m.Wire("a_b") != "a_b" || m.Wire("a.b") == "a_b" || m.Decode(m.Wire("a.b")) != "a.b" {
		t.Fatalf("a_b → %q, a.b → %q", m.Wire("a_b"), m.Wire("a.b"))
	}
}

// checkMap asserts the Map's contract for set: every wire name is valid,
// no two names share one, each decodes back, and valid names are kept.
func checkMap(t *testing.T, set []string, m *Map) {
	t.Helper()
	seen := map[string]string{}
	for _, n := range set {
		w := m.Wire(n)
		if !wireName.MatchString(w) {
			t.Fatalf("Wire(%q) = %q, not a wire name", n, w)
		}
		if other, ok := seen[w]; ok && other != n {
			t.Fatalf("%q and %q share the wire name %q", other, n, w)
		}
		seen[w] = n
		if got := m.Decode(w); got != n {
			t.Fatalf("Decode(Wire(%q)) = %q", n, got)
		}
		if Valid(n) && w != n {
			t.Fatalf("valid name %q went out as %q", n, w)
		}
	}
}

// FuzzBuild: for any set of names (one per line), the Map's contract holds.
func FuzzBuild(f *testing.F) {
	for _, s := range []string{"Read\nmcp__memory__read_graph", "a.b\na_b\na b", strings.Repeat("x.", 40) + "\n" + strings.Repeat("x_", 40), "\n\n", "é\n__"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		set := strings.Split(s, "\n")
		checkMap(t, set, Build(set))
	})
}
