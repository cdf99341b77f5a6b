package gate

import (
	"path"
	"slices"
	"strings"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/internal/command"
	"github.com/norma-run/norma/internal/shellcmd"
)

// editsAccepted reports whether the acceptEdits mode runs a call of
// these requests without asking, as Claude Code's does: every request is
// a file read or write, or a command that only reads (command.ReadOnly)
// or is a file-system command of the mode (command.FileOp: mkdir, touch,
// rm, rmdir, mv, cp, sed, on paths below the working directory); no cd
// moves where those paths are; and nothing is written under a path the
// mode protects (protectedPath: .git/ and the like), whether a request
// names it or a command's operand. The rules and the policy have decided
// each request before (a deny stands, an ask rule asks); an ask rule on
// the file tools themselves (ask: [Write, Edit]) makes a command that
// writes by its arguments ask too, as their edits do.
func (x *exec) editsAccepted(reqs []capability.Request) bool {
	if len(reqs) == 0 {
		return false
	}
	askEdits := -1 // whether an ask rule names a file tool, computed once
	fileToolsAsk := func() bool {
		if askEdits < 0 {
			askEdits = 0
			for _, n := range [...]string{"Write", "Edit", "MultiEdit", "NotebookEdit"} {
				if _, ok := x.g.rules.Ask(n, nil); ok {
					askEdits = 1
				}
			}
		}
		return askEdits == 1
	}
	for i := range reqs {
		r := &reqs[i]
		switch r.Kind {
		case capability.FSRead:
		case capability.FSWrite:
			if protectedPath(r.Path) {
				return false
			}
		case capability.ProcessSpawn:
			if len(r.Argv) == 0 {
				return false
			}
			switch r.Argv[0] {
			case "cd", "pushd", "popd":
				return false // the operands of the next command are elsewhere
			}
			if command.ReadOnly(r.Argv) {
				continue
			}
			if !command.FileOp(r.Argv) || fileToolsAsk() {
				return false
			}
			for _, w := range command.Writes(r.Argv) {
				if protectedPath(w.Path) {
					return false
				}
			}
		default:
			return false
		}
	}
	return true
}

// protectedDirs and protectedFiles are the paths whose writes Claude
// Code's acceptEdits mode never accepts without asking (its
// permission-modes documentation: repository state and tool
// configuration), matched here by name at any depth, in any case.
var (
	protectedDirs  = []string{".git", ".vscode", ".idea", ".husky", ".claude"}
	protectedFiles = []string{".gitconfig", ".bashrc", ".zshrc", ".profile", ".mcp.json"}
)

// protectedPath reports whether the workspace path p (cleaned, relative;
// a command's operand as written) is or lies under a protected
// directory, or is a protected file.
func protectedPath(p string) bool {
	p = strings.ToLower(path.Clean(strings.TrimPrefix(p, "./")))
	for seg := range strings.SplitSeq(p, "/") {
		for _, d := range protectedDirs {
			if seg == d {
				return true
			}
		}
	}
	base := path.Base(p)
	for _, f := range protectedFiles {
		if base == f {
			return true
		}
	}
	return false
}

// argFiles appends, for a call Norma runs in its sandbox, the files se's
// commands write or read by their arguments where the shell uses them
// (cd followed): the writes of cp's destination, rm's and mv's operands,
// sed -i's files (command.Writes), and the reads of git's REV:PATH
// operands (command.RevPaths: git show HEAD:.env reads .env's content
// from the repository, past the sandbox). The rules and the policy then
// decide them as they decide a redirection's: deny: Edit(./x/**) denies
// rm x/a, deny: Read(./.env) denies git show HEAD:.env, an ask rule asks,
// and the acceptEdits mode accepts only what they let through. A name in
// the home directory or written absolute is left to the sandbox, which
// shows nothing of the host writable; one that leaves the workspace
// (../x) is refused as a redirection to it is.
func (g *Gate) argFiles(reqs []capability.Request, se shellcmd.Effects) ([]capability.Request, string, error) {
	for _, n := range se.Names {
		k, done := capability.FSWrite, se.Writes
		switch {
		case n.Access == shellcmd.Read:
			k, done = capability.FSRead, se.Reads
		case n.Access != shellcmd.Write:
			continue
		}
		if n.Home || path.IsAbs(n.Word) {
			continue
		}
		for _, d := range n.Dirs {
			if d.Home || path.IsAbs(d.Path) {
				continue
			}
			if d.Path == "." && slices.Contains(done, n.Word) {
				continue // a redirection's, requested already
			}
			var what string
			var err error
			if reqs, what, err = g.fsRequests(reqs, k, path.Join(d.Path, n.Word)); err != nil {
				return reqs, what, err
			}
		}
	}
	return reqs, "", nil
}

// allow returns the allow rule covering the call, if any; for a command
// line not written as plain words, no exact command rule (see lineShape).
func (x *exec) allow(name string, reqs []capability.Request) (string, bool) {
	if x.rewritten {
		return x.g.rules.current().AllowRewritten(name, reqs, x.known)
	}
	return x.g.rules.Allow(name, reqs, x.known)
}
