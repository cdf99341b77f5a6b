package suggest

import "testing"

func TestDistance(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"", "abc", 3},
		{"abc", "", 3},
		{"Read", "Read", 0},
		{"Raed", "Read", 1},   // a transposition is one edit
		{"Wirte", "Write", 1}, // so is this one
		{"alow", "allow", 1},
		{"tol", "tool", 1},
		{"kitten", "sitting", 3},
		{"ca", "abc", 3}, // optimal string alignment: no substring is edited twice
		{"read", "Read", 1},
	} {
		if got := Distance(tt.a, tt.b); got != tt.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
		if got := Distance(tt.b, tt.a); got != tt.want {
			t.Errorf("Distance(%q, %q) = %d, want %d (symmetric)", tt.b, tt.a, got, tt.want)
		}
	}
}

func TestClosest(t *testing.T) {
	tools := []string{"Read", "Write", "Edit", "LS", "Glob", "Grep", "Bash", "WebFetch"}
	for _, tt := range []struct {
		name  string
		known []string
		want  string
	}{
		{"Raed", tools, "Read"},
		{"Wirte", tools, "Write"},
		{"bash", tools, "Bash"},
		{"WEBFETCH", tools, "WebFetch"}, // case alone: whatever the distance
		{"ls", tools, "LS"},
		{"Read", tools, "Read"},
		{"Grpe", tools, "Grep"},
		{"Gerp", tools, "Grep"},
		{"Globs", tools, "Glob"},
		{"cd", tools, ""},     // two letters: one edit at most
		{"FooBar", tools, ""}, // nothing close
		{"run_shell_command", tools, ""},
		{"", tools, ""},
		{"x", nil, ""},
		// Of equally close names, the first in the list.
		{"Gleb", []string{"Glob", "Glib"}, "Glob"},
		{"Gleb", []string{"Glib", "Glob"}, "Glib"},
		{"alow", []string{"allow", "ask", "deny"}, "allow"},
		{"aks", []string{"allow", "ask", "deny"}, "ask"},
	} {
		if got := Closest(tt.name, tt.known); got != tt.want {
			t.Errorf("Closest(%q, %q) = %q, want %q", tt.name, tt.known, got, tt.want)
		}
	}
}

func BenchmarkClosest(b *testing.B) {
	known := []string{"permissions", "allow", "ask", "deny", "defaultMode", "additionalDirectories", "hooks", "matcher"}
	b.ReportAllocs()
	for b.Loop() {
		Closest("additionalDirectory", known)
	}
}
