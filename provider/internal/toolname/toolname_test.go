package toolname

import (
	"strings"
	"testing"
)

func TestEncode(t *testing.T) {
	tests := []struct {
		name string
		in   string
		same bool
	}{
		{name: "valid kept", in: "Read", same: true},
		{name: "dash underscore kept", in: "mcp__a-b_c", same: true},
		{name: "dots sanitized", in: "mcp__com.example.issue-helper__issues.comment"},
		{name: "too long", in: strings.Repeat("a", 70)},
		{name: "unicode", in: "lire_fichier_é"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Encode(tt.in)
			if !Valid(got) {
				t.Errorf("Encode(%q) = %q, not a valid wire name", tt.in, got)
			}
			if (got == tt.in) != tt.same {
				t.Errorf("Encode(%q) = %q, want unchanged=%v", tt.in, got, tt.same)
			}
			if Encode(tt.in) != got {
				t.Errorf("Encode(%q) is not deterministic", tt.in)
			}
		})
	}
}

func TestMapRoundTrip(t *testing.T) {
	m := New()
	names := []string{"Read", "a.b", "a_b", "mcp__com.example.issue-helper__issues.comment"}
	for _, n := range names {
		w, err := m.Add(n)
		if err != nil {
			t.Fatalf("Add(%q): %v", n, err)
		}
		if got := m.Decode(w); got != n {
			t.Errorf("Decode(Add(%q)) = %q, want %q", n, got, n)
		}
	}
	// "a.b" must not be confused with "a_b": the hash suffix separates them.
	if Encode("a.b") == "a_b" {
		t.Errorf("Encode(%q) collides with a valid name", "a.b")
	}
	if got := m.Decode("unknown_tool"); got != "unknown_tool" {
		t.Errorf("Decode(unknown) = %q, want unchanged", got)
	}
}
