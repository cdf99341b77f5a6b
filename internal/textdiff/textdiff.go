// Package textdiff computes a line diff of two texts and writes it in the
// unified format (`diff -u`), for the approval preview of a file change.
//
// The diff is Myers' O(ND) algorithm on the lines that differ once the
// common head and tail are set aside, so the usual change (a few lines
// of a long file) costs little. When the middle is longer than
// [MaxMiddle] lines or needs more than [MaxEdits] edits, it is reported as
// removed and added whole: still a correct diff, only not the shortest.
//
// This package should be considered internal; its API is not stable.
package textdiff

import (
	"fmt"
	"strings"
)

// MaxEdits bounds the edit distance the Myers search explores, and
// MaxMiddle the lines of the differing middle it searches at all; past
// either, the middle is shown as one removal and one addition. Together
// they bound the work to about MaxMiddle×MaxEdits comparisons.
const (
	MaxEdits  = 1000
	MaxMiddle = 20000
)

// Context is the number of unchanged lines shown around each change.
const Context = 3

type opKind byte

const (
	opEqual opKind = ' '
	opDel   opKind = '-'
	opAdd   opKind = '+'
)

type op struct {
	kind opKind
	line string
}

// Unified returns the unified diff of old and new with [Context] lines of
// context, under the headers "--- oldName" and "+++ newName"; it is ""
// when the texts are equal. A last line without a newline is marked with
// "\ No newline at end of file", as diff does.
func Unified(oldName, newName, old, new string) string {
	if old == new {
		return ""
	}
	a, b := splitLines(old), splitLines(new)
	ops, base := diffLines(a, b)
	var w strings.Builder
	fmt.Fprintf(&w, "--- %s\n+++ %s\n", oldName, newName)
	writeHunks(&w, ops, base)
	return w.String()
}

// splitLines splits s after each newline; the last line keeps no newline
// when s does not end in one.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// diffLines returns the edit script turning a into b, without the lines
// of the common head that no hunk shows: base is how many were left out
// (they are equal in both texts), so a long file with a small change
// costs a script of a few lines.
func diffLines(a, b []string) (ops []op, base int) {
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	base = max(0, pre-Context)
	for _, l := range a[base:pre] {
		ops = append(ops, op{opEqual, l})
	}
	ops = append(ops, myers(a[pre:len(a)-suf], b[pre:len(b)-suf])...)
	for _, l := range a[len(a)-suf : len(a)-suf+min(suf, Context)] {
		ops = append(ops, op{opEqual, l})
	}
	return ops, base
}

// myers is the greedy O(ND) search of Myers (1986), with the trace kept to
// walk the path back. Past MaxEdits it gives up on a shortest script.
func myers(a, b []string) []op {
	n, m := len(a), len(b)
	whole := func() []op {
		ops := make([]op, 0, n+m)
		for _, l := range a {
			ops = append(ops, op{opDel, l})
		}
		for _, l := range b {
			ops = append(ops, op{opAdd, l})
		}
		return ops
	}
	if n == 0 || m == 0 || n+m > MaxMiddle {
		return whole()
	}
	maxD := min(n+m, MaxEdits)
	off := maxD + 1
	v := make([]int, 2*maxD+3)
	var trace [][]int
	found := -1
	for d := 0; d <= maxD && found < 0; d++ {
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
				x = v[off+k+1] // down: an insertion
			} else {
				x = v[off+k-1] + 1 // right: a deletion
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x, y = x+1, y+1
			}
			v[off+k] = x
			if x >= n && y >= m {
				found = d
				break
			}
		}
		// Keep the frontier of this step, k in [-d-1, d+1] (what the
		// walk back reads), at index k+d+1.
		trace = append(trace, append([]int(nil), v[off-d-1:off+d+2]...))
	}
	if found < 0 {
		return whole()
	}
	// Walk back from (n, m) through the saved frontiers.
	var rev []op
	x, y := n, m
	for d := found; d > 0; d-- {
		prev, po := trace[d-1], d // frontier of step d-1, offset d
		k := x - y
		var pk int
		if k == -d || (k != d && prev[po+k-1] < prev[po+k+1]) {
			pk = k + 1
		} else {
			pk = k - 1
		}
		px := prev[po+pk]
		py := px - pk
		for x > px && y > py {
			x, y = x-1, y-1
			rev = append(rev, op{opEqual, a[x]})
		}
		if x == px {
			y--
			rev = append(rev, op{opAdd, b[y]})
		} else {
			x--
			rev = append(rev, op{opDel, a[x]})
		}
	}
	for x > 0 && y > 0 {
		x, y = x-1, y-1
		rev = append(rev, op{opEqual, a[x]})
	}
	ops := make([]op, len(rev))
	for i, o := range rev {
		ops[len(rev)-1-i] = o
	}
	return ops
}

// writeHunks writes the hunks of ops, each change with Context lines of
// context, neighbouring changes merged into one hunk.
func writeHunks(w *strings.Builder, ops []op, base int) {
	for i := 0; i < len(ops); {
		if ops[i].kind == opEqual {
			i++
			continue
		}
		start := max(0, i-Context)
		end := i
		for end < len(ops) {
			if ops[end].kind != opEqual {
				end++
				continue
			}
			run := end
			for run < len(ops) && ops[run].kind == opEqual {
				run++
			}
			if run == len(ops) || run-end > 2*Context {
				end = min(run, end+Context)
				break
			}
			end = run
		}
		writeHunk(w, ops, base, start, end)
		i = end
	}
}

func writeHunk(w *strings.Builder, ops []op, base, start, end int) {
	oldLine, newLine := base+1, base+1
	for _, o := range ops[:start] {
		if o.kind != opAdd {
			oldLine++
		}
		if o.kind != opDel {
			newLine++
		}
	}
	oldN, newN := 0, 0
	for _, o := range ops[start:end] {
		if o.kind != opAdd {
			oldN++
		}
		if o.kind != opDel {
			newN++
		}
	}
	fmt.Fprintf(w, "@@ -%s +%s @@\n", hunkRange(oldLine, oldN), hunkRange(newLine, newN))
	for _, o := range ops[start:end] {
		w.WriteByte(byte(o.kind))
		w.WriteString(o.line)
		if !strings.HasSuffix(o.line, "\n") {
			w.WriteString("\n\\ No newline at end of file\n")
		}
	}
}

// hunkRange is "start,count" as diff writes it: a count of one is left
// out, and an empty range starts at the line before.
func hunkRange(start, n int) string {
	switch n {
	case 0:
		return fmt.Sprintf("%d,0", start-1)
	case 1:
		return fmt.Sprint(start)
	}
	return fmt.Sprintf("%d,%d", start, n)
}
