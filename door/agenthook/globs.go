package agenthook

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/internal/shellcmd"
)

// maxGlobFiles bounds the workspace files a Bash command's patterns may
// name before its decision is left to the user.
const maxGlobFiles = 128

// globReads decides the workspace files a Bash command names by pathname
// patterns (cat secrets/*, grep x .e*): a shell expands them on the disk,
// so the gate, which sees the words, does not see the files. Each file is
// decided as a Read of it by the same gate (the runtime's Explain), so
// that the file rules apply to what the command reads, as Claude Code
// applies them: a file whose Read is denied denies the command, one an
// ask rule names makes it ask. decided is false when no pattern changes
// d, the command's own decision.
//
// Files outside the workspace are left to the gate's own treatment of the
// host (the sandbox's view); directories are not read by a pattern's
// match. More than maxGlobFiles files ask.
func (e *Engine) globReads(ctx context.Context, en *rtEntry, ev Event, call *Call, d capability.Decision) (Verdict, bool) {
	if d.Mode == capability.Deny {
		return Verdict{}, false
	}
	cmd, ok := bashCommand(call.Input)
	if !ok || !strings.ContainsAny(cmd, "*?[") {
		return Verdict{}, false // no pathname pattern can be in it
	}
	se := shellcmd.Parse(cmd)
	if len(se.Globs) == 0 {
		return Verdict{}, false
	}
	ws := resolved(ev.Cwd)
	home := resolved(e.o.Shell.Home)
	n := 0
	var ask *Verdict
	for _, g := range se.Globs {
		for _, dir := range g.Dirs {
			base := filepath.Join(ws, dir.Path)
			switch {
			case filepath.IsAbs(g.Word):
				base = ""
			case filepath.IsAbs(dir.Path):
				base = dir.Path
			case dir.Home && home == "":
				continue
			case dir.Home:
				base = filepath.Join(home, dir.Path)
			}
			matches, err := filepath.Glob(filepath.Join(base, g.Word))
			if err != nil {
				continue
			}
			for _, m := range matches {
				rel, inside := workspaceFile(ws, m)
				if !inside {
					continue
				}
				if n++; n > maxGlobFiles {
					v := Verdict{Decision: capability.Decision{Mode: capability.ApprovalRequired, Reason: capability.ReasonApprovalRequired,
						Layer: capability.LayerRules, Request: d.Request},
						Message: fmt.Sprintf("the command's patterns name more than %d files; Norma asks the user to approve it", maxGlobFiles)}
					return v, true
				}
				in, _ := json.Marshal(map[string]string{"path": rel})
				x, err := en.explain(ctx, &Call{Tool: "Read", Input: in})
				if err != nil {
					return FailVerdict(err), true
				}
				rd, msg := explained(x)
				switch {
				case rd.Mode == capability.Deny:
					if msg == "" {
						msg = fmt.Sprintf("the command reads %s (by the pattern %s), which Norma denies", rel, g.Word)
					}
					return Verdict{Decision: rd, Message: msg}, true
				case rd.Mode == capability.ApprovalRequired && rd.Layer == capability.LayerRules && ask == nil && d.Mode == capability.Allow:
					ask = &Verdict{Decision: rd, Message: fmt.Sprintf("the command reads %s (by the pattern %s), which a permission rule asks about", rel, g.Word)}
				}
			}
		}
	}
	if ask != nil {
		return *ask, true
	}
	return Verdict{}, false
}

// workspaceFile returns the regular file (or link to one) m as a path
// relative to the workspace ws, and whether it is one inside it.
func workspaceFile(ws, m string) (string, bool) {
	fi, err := os.Stat(m)
	if err != nil || fi.IsDir() {
		return "", false
	}
	rel, err := filepath.Rel(ws, m)
	if err != nil || !filepath.IsLocal(rel) {
		return "", false
	}
	return filepath.ToSlash(rel), true
}
