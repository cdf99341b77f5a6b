package textdiff

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestUnified(t *testing.T) {
	tests := []struct {
		name, old, new, want string
	}{
		{"equal", "a\nb\n", "a\nb\n", ""},
		{"new file", "", "one\ntwo\n", "--- a\n+++ b\n@@ -0,0 +1,2 @@\n+one\n+two\n"},
		{"emptied", "one\n", "", "--- a\n+++ b\n@@ -1 +0,0 @@\n-one\n"},
		{"one line changed", "1\n2\n3\n4\n5\n6\n7\n8\n9\n", "1\n2\n3\n4\nFIVE\n6\n7\n8\n9\n",
			"--- a\n+++ b\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+FIVE\n 6\n 7\n 8\n"},
		{"no newline at end", "a\nb", "a\nc",
			"--- a\n+++ b\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n"},
		{"two hunks", "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n", "x\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\ny\n",
			"--- a\n+++ b\n@@ -1,4 +1,4 @@\n-1\n+x\n 2\n 3\n 4\n@@ -9,4 +9,4 @@\n 9\n 10\n 11\n-12\n+y\n"},
	}
	for _, tt := range tests {
		if got := Unified("a", "b", tt.old, tt.new); got != tt.want {
			t.Errorf("%s:\ngot\n%s\nwant\n%s", tt.name, got, tt.want)
		}
	}
}

// apply applies a unified diff written by Unified to old.
func apply(t *testing.T, old, diff string) string {
	t.Helper()
	a := splitLines(old)
	lines := splitLines(diff)
	if len(lines) < 2 {
		t.Fatalf("short diff %q", diff)
	}
	var out []string
	pos := 0 // next line of a to copy
	for i := 2; i < len(lines); i++ {
		l := lines[i]
		if strings.HasPrefix(l, "@@ ") {
			f := strings.Fields(l)
			s, _, _ := strings.Cut(strings.TrimPrefix(f[1], "-"), ",")
			start, _ := strconv.Atoi(s)
			if !strings.Contains(f[1], ",") || !strings.HasSuffix(f[1], ",0") {
				start-- // 1-based, except for an empty range
			}
			out = append(out, a[pos:start]...)
			pos = start
			continue
		}
		noNL := i+1 < len(lines) && strings.HasPrefix(lines[i+1], `\ No newline`)
		text := l[1:]
		if noNL {
			text = strings.TrimSuffix(text, "\n")
			i++
		}
		switch l[0] {
		case ' ':
			out = append(out, text)
			pos++
		case '-':
			pos++
		case '+':
			out = append(out, text)
		}
	}
	out = append(out, a[pos:]...)
	return strings.Join(out, "")
}

// TestUnifiedApplies: for random texts, applying the diff to the old text
// gives the new one, and the diff is never longer than what GNU diff
// needs (when diff is installed): a shortest script.
func TestUnifiedApplies(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	gen := func() string {
		var b strings.Builder
		for range r.IntN(30) {
			fmt.Fprintf(&b, "l%d\n", r.IntN(6))
		}
		if r.IntN(4) == 0 {
			b.WriteString("tail")
		}
		return b.String()
	}
	diffBin, _ := exec.LookPath("diff")
	dir := t.TempDir()
	for i := range 300 {
		old, new := gen(), gen()
		d := Unified("a", "b", old, new)
		if old == new {
			if d != "" {
				t.Fatalf("equal texts gave %q", d)
			}
			continue
		}
		if got := apply(t, old, d); got != new {
			t.Fatalf("case %d: applying\n%s\nto %q gives %q, want %q", i, d, old, got, new)
		}
		if diffBin == "" || i%10 != 0 {
			continue
		}
		pa, pb := filepath.Join(dir, "a"), filepath.Join(dir, "b")
		os.WriteFile(pa, []byte(old), 0o644)
		os.WriteFile(pb, []byte(new), 0o644)
		gnu, _ := exec.Command(diffBin, "-d", "-u", pa, pb).Output()
		if count(string(gnu)) < count(d) {
			t.Errorf("case %d: %d changed lines, GNU diff needs %d:\n%s\n%s", i, count(d), count(string(gnu)), d, gnu)
		}
	}
}

func count(d string) int {
	n := 0
	for i, l := range strings.Split(d, "\n") {
		if i >= 2 && (strings.HasPrefix(l, "+") || strings.HasPrefix(l, "-")) {
			n++
		}
	}
	return n
}

// TestUnifiedLarge: a change of every line of a long text past MaxEdits
// still gives a diff that applies, quickly.
func TestUnifiedLarge(t *testing.T) {
	var a, b strings.Builder
	for i := range 5000 {
		fmt.Fprintf(&a, "a%d\n", i)
		fmt.Fprintf(&b, "b%d\n", i)
	}
	d := Unified("a", "b", a.String(), b.String())
	if got := apply(t, a.String(), d); got != b.String() {
		t.Fatal("the diff of two long texts does not apply")
	}
}

// FuzzUnified: for any two texts, the diff applies to the old one and
// gives the new one, and it is empty exactly when they are equal.
func FuzzUnified(f *testing.F) {
	f.Add("a\nb\nc\n", "a\nB\nc\n")
	f.Add("", "x")
	f.Add("x\n", "")
	f.Add("1\n2\n3\n4\n5\n6\n7\n8\n9\n", "0\n2\n3\n4\n5\n6\n7\n8\n")
	f.Add("a\r\nb", "a\nb\r\n")
	f.Fuzz(func(t *testing.T, old, new string) {
		d := Unified("a", "b", old, new)
		if (d == "") != (old == new) {
			t.Fatalf("Unified(%q, %q) = %q", old, new, d)
		}
		if d != "" {
			if got := apply(t, old, d); got != new {
				t.Fatalf("applying\n%s\nto %q gives %q, want %q", d, old, got, new)
			}
		}
	})
}

// TestUnifiedBoundedWork: two unrelated texts of 200,000 short lines each
// are diffed in bounded time (the whole middle, no search).
func TestUnifiedBoundedWork(t *testing.T) {
	var a, b strings.Builder
	for i := range 200_000 {
		fmt.Fprintf(&a, "%d\n", i%7)
		fmt.Fprintf(&b, "%d\n", i%5)
	}
	start := time.Now()
	d := Unified("a", "b", a.String(), b.String())
	if el := time.Since(start); el > 5*time.Second || d == "" {
		t.Errorf("diff of two large texts took %v (%d bytes)", el, len(d))
	}
}

// TestUnifiedLocalChange: one changed line deep in a long text gives one
// small hunk with the right line numbers.
func TestUnifiedLocalChange(t *testing.T) {
	var a strings.Builder
	for i := 1; i <= 200_000; i++ {
		fmt.Fprintf(&a, "line %d\n", i)
	}
	old := a.String()
	new := strings.Replace(old, "line 100003\n", "LINE\n", 1)
	d := Unified("a", "b", old, new)
	want := "--- a\n+++ b\n@@ -100000,7 +100000,7 @@\n line 100000\n line 100001\n line 100002\n-line 100003\n+LINE\n line 100004\n line 100005\n line 100006\n"
	if d != want {
		t.Fatalf("diff =\n%s\nwant\n%s", d, want)
	}
	if apply(t, old, d) != new {
		t.Fatal("the diff does not apply")
	}
}
