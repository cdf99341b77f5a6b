package gate

import (
	"io/fs"
	"os"
	"path"
	"path/filepath"
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
	var written []string // what the line's file commands write, in order
	askEdits := -1       // whether an ask rule names a file tool, computed once
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
			for _, w := range written {
				if strings.HasPrefix(r.Path, w+"/") {
					return false // mv D E && echo x > E/L/f
				}
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
			// A path under one an earlier command of the line wrote
			// (mv D E && cp x E/L/y): what it leads to is only known
			// once that command ran (E/L may be a link D held).
			for _, a := range r.Argv[1:] {
				for _, w := range written {
					if strings.HasPrefix(path.Clean(a), w+"/") {
						return false
					}
				}
			}
			for _, w := range command.Writes(r.Argv) {
				if protectedPath(w.Path) {
					return false
				}
				// cp config dst, cp -r src/. dst: what is written is named
				// inside dst, where a link (or a second name of a file)
				// leads elsewhere; the request for dst does not name it.
				if (r.Argv[0] == "cp" || r.Argv[0] == "mv") && x.g.linksInside(w.Path) {
					return false
				}
				if makesLinks(r.Argv) {
					written = append(written, path.Clean(w.Path))
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
	protectedDirs  = []string{".git", ".vscode", ".idea", ".husky", ".claude", ".cargo", ".devcontainer", ".yarn", ".mvn"}
	protectedFiles = []string{".gitconfig", ".gitmodules", ".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".bash_aliases",
		".zshrc", ".zprofile", ".zshenv", ".zlogin", ".zlogout", ".profile", ".mcp.json", ".claude.json", ".ripgreprc",
		".npmrc", ".yarnrc", ".yarnrc.yml", ".pnp.cjs", ".pnp.loader.mjs", ".pnp.js", ".pnp.data.json", ".pnpmfile.cjs",
		"bunfig.toml", ".bunfig.toml", ".bazelrc", ".bazelversion", ".bazeliskrc", ".pre-commit-config.yaml",
		"lefthook.yml", "lefthook.yaml", ".lefthook.yml", ".lefthook.yaml", "gradle-wrapper.properties",
		"maven-wrapper.properties", ".devcontainer.json", "pyrightconfig.json"}
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
	if p == ".config/git" || strings.HasPrefix(p, ".config/git/") || strings.Contains(p, "/.config/git/") || strings.HasSuffix(p, "/.config/git") {
		return true
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
		if n.Top {
			n.Word, n.Dirs = g.fromTop(n.Word), nil
			var what string
			var err error
			if reqs, what, err = g.fsRequests(reqs, k, n.Word); err != nil {
				return reqs, what, err
			}
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

// repoPrefix is the workspace's path relative to the top of the git
// repository that holds it ("" when it is the top, or in none): the
// nearest directory at or above it that holds .git, symbolic links
// resolved.
func (g *Gate) repoPrefix() string {
	if g.wsDir == "" {
		return ""
	}
	ws, err := filepath.EvalSymlinks(g.wsDir)
	if err != nil {
		return ""
	}
	for d := ws; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			rel, err := filepath.Rel(d, ws)
			if err != nil || rel == "." {
				return ""
			}
			return filepath.ToSlash(rel)
		}
		if filepath.Dir(d) == d {
			return ""
		}
	}
}

// fromTop returns p, a path relative to the top of the workspace's git
// repository (a REV:PATH's), relative to the workspace instead: outside
// it (../x) when the workspace lies below the top and p is not in it.
func (g *Gate) fromTop(p string) string {
	pre := g.repoDir()
	if pre == "" {
		return p
	}
	rel, err := filepath.Rel(filepath.FromSlash(pre), filepath.FromSlash(p))
	if err != nil {
		return "../" + p
	}
	return filepath.ToSlash(rel)
}

// makesLinks reports whether a file command of acceptEdits (command.FileOp)
// may leave a symbolic link at the names it writes: mv moves one along,
// cp does with -r, -R or -P; mkdir, touch, rm, rmdir and sed -i make none.
func makesLinks(argv []string) bool {
	switch argv[0] {
	case "mv":
		return true
	case "cp":
		for _, a := range argv[1:] {
			if a == "--" {
				break
			}
			if a == "--recursive" || a == "--no-dereference" ||
				len(a) > 1 && a[0] == '-' && a[1] != '-' && strings.ContainsAny(a, "rRP") {
				return true
			}
		}
	}
	return false
}

// protectedWrite returns the first write of reqs to a path Claude Code
// protects (protectedPath): its writes are never allowed by a rule or
// the mode without asking, as in Claude Code, but in bypassPermissions.
func protectedWrite(reqs []capability.Request) (string, bool) {
	for i := range reqs {
		if reqs[i].Kind == capability.FSWrite && protectedPath(reqs[i].Path) {
			return reqs[i].Path, true
		}
	}
	return "", false
}

// maxLinkScan bounds the entries linksInside looks at; a larger tree
// counts as holding a link (the mode asks).
const maxLinkScan = 4096

// linksInside reports whether the workspace path p is a directory that
// holds, at any depth, a symbolic link or a file with more than one name:
// a file command writing into it writes through them to places the
// request for p does not name (diff finding R23). A tree too large to
// look at, or one that cannot be read, counts as holding one. Without a
// workspace there is no disk to look at (as for linkedWrite).
func (g *Gate) linksInside(p string) bool {
	if g.wsDir == "" {
		return false
	}
	root := filepath.Join(g.wsDir, filepath.FromSlash(p))
	if fi, err := os.Lstat(root); err != nil || !fi.IsDir() {
		return false
	}
	n, found := 0, false
	filepath.WalkDir(root, func(name string, d fs.DirEntry, err error) error {
		n++
		switch {
		case err != nil, n > maxLinkScan, d.Type()&fs.ModeSymlink != 0, d.Type().IsRegular() && hardLinked(name):
			found = true
			return filepath.SkipAll
		}
		return nil
	})
	return found
}
