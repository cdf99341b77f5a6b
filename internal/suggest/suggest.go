// Package suggest finds the known name a misspelt one most likely meant,
// for the "did you mean" of every message that refuses a name: a
// manifest's or a settings file's unknown field, a permission rule's
// unknown tool, a command line's unknown flag. It is the one edit distance
// of the module, so that each of those messages suggests by the same rule.
package suggest

import "strings"

// Closest returns the name of known that name most likely misspells, or ""
// when none is close enough to be a typo.
//
// A name equal to a known one but for case is that one. Otherwise the
// closest by [Distance] is returned when it is at most 2 edits away (1 for
// names of one or two characters, where 2 edits would make anything a
// suggestion); of several equally close, the first in known. A name that
// is itself in known is returned as it is.
func Closest(name string, known []string) string {
	for _, k := range known {
		if k == name {
			return k
		}
	}
	for _, k := range known {
		if strings.EqualFold(k, name) {
			return k
		}
	}
	limit := 2
	if len(name) <= 2 {
		limit = 1
	}
	best, bestD := "", limit+1
	for _, k := range known {
		if d := Distance(name, k); d < bestD {
			best, bestD = k, d
		}
	}
	return best
}

// Distance returns the edit distance between a and b, in bytes: the
// fewest insertions, deletions, substitutions and transpositions of two
// adjacent bytes (each counting 1, a substring edited at most once) that
// turn a into b.
func Distance(a, b string) int {
	// Three rows of the optimal-string-alignment table.
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
