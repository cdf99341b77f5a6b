package agenthook

import (
	"strings"
)

// The apply_patch envelope of Codex CLI, as its apply_patch tool
// instructions and parser (openai/codex, codex-rs/apply-patch) define it:
//
//	*** Begin Patch
//	*** Add File: PATH        followed by +lines, the new file
//	*** Delete File: PATH
//	*** Update File: PATH     optionally *** Move to: NEWPATH, then hunks
//	                          (@@ headers, and lines starting ' ', '-', '+')
//	*** End of File           (inside an update hunk)
//	*** End Patch
//
// Codex hands the PreToolUse hook the envelope as tool_input.command (the
// raw text, or an `apply_patch <<'EOF'` heredoc around it).

// patchOp is what a patch does to one path.
type patchOp string

const (
	patchAdd    patchOp = "add"
	patchUpdate patchOp = "update"
	patchDelete patchOp = "delete"
	// patchMove is the destination of an update's *** Move to: the source
	// is a patchUpdate target too (it is removed).
	patchMove patchOp = "move"
)

// patchTarget is one path a patch writes, with the lines it adds there.
type patchTarget struct {
	Op    patchOp
	Path  string
	Added string
}

// patchMarkers are the file-level header lines, by prefix.
var patchMarkers = []struct {
	prefix string
	op     patchOp
}{
	{"*** Add File:", patchAdd},
	{"*** Delete File:", patchDelete},
	{"*** Update File:", patchUpdate},
	{"*** Move to:", patchMove},
}

// patchTargets lists every path patch writes. It over-approximates on
// purpose: a header is recognised on any line whose trimmed text starts
// with it, wherever it stands, so a target that Codex's parser would find
// is never missed (an extra target can only make Norma refuse more). A
// line that starts with "***" and is no marker Codex knows, a marker with
// no path, a *** Move to: that follows no *** Update File:, or a patch
// with no target at all is an error: Norma does not guess what it would
// write.
func patchTargets(patch string) ([]patchTarget, error) {
	var out []patchTarget
	cur := -1        // index in out of the target whose +lines are collected
	lastUpdate := -1 // index of the last update target (for *** Move to:)
	for _, line := range strings.Split(patch, "\n") {
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, "***") {
			op, path, ok := patchHeader(t)
			switch {
			case !ok:
				return nil, invalid("the apply_patch input has a line Norma cannot read: %q", clip(t, 80))
			case op == "":
				// Begin Patch, End Patch, End of File.
				continue
			case path == "" || strings.ContainsRune(path, 0):
				return nil, invalid("the apply_patch input has a %q header with no path", op)
			case op == patchMove && lastUpdate < 0:
				return nil, invalid("the apply_patch input moves a file it does not update")
			}
			out = append(out, patchTarget{Op: op, Path: path})
			cur = len(out) - 1
			if op == patchUpdate {
				lastUpdate = cur
			} else if op != patchMove {
				lastUpdate = -1
			}
			continue
		}
		if cur >= 0 && strings.HasPrefix(line, "+") {
			out[cur].Added += strings.TrimSuffix(line[1:], "\r") + "\n"
		}
	}
	if len(out) == 0 {
		return nil, invalid("the apply_patch input names no file")
	}
	return out, nil
}

// patchHeader reads a trimmed line that starts with "***": a file header
// (its op and path), a structural marker (no op), or neither (ok false).
func patchHeader(t string) (op patchOp, path string, ok bool) {
	switch t {
	case "*** Begin Patch", "*** End Patch", "*** End of File":
		return "", "", true
	}
	for _, m := range patchMarkers {
		if rest, found := strings.CutPrefix(t, m.prefix); found {
			return m.op, strings.TrimSpace(rest), true
		}
	}
	return "", "", false
}

// clip shortens s to at most n bytes for a message.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
