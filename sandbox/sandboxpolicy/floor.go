package sandboxpolicy

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"syscall"

	"github.com/norma-run/norma/agentfiles"
	"github.com/norma-run/norma/internal/linkwalk"
)

// agentFloor returns the paths of the workspace ws that the sandbox
// freezes whatever the policy says (sandbox.Spec.Freeze): the files and
// directories that agents and tools load as code on the host
// ([agentfiles.SandboxDirs], [agentfiles.SandboxFiles]), and a .git that
// is a file (a worktree's or submodule's pointer to its git directory,
// which, rewritten, would lead git to a config the process wrote). Only
// names under a grant count.
//
// A directory of the floor that does not exist is created empty (0700)
// when the name it leads to, its symbolic links followed, is the last
// missing one and lies inside a read-write grant (.claude in a workspace
// without one, .git/hooks in a repository without hooks, the target of a
// .claude -> cfg link), so that the process cannot create it with
// something in it; a missing parent is never created (no .git in a
// workspace that is not a repository). One on a read-only file system is
// left out (the process cannot create it either); any other failure to
// create one is an error (a parent without write permission is no bar to
// its owner, who may change its mode). A directory whose name reaches a
// missing name through symbolic links in some other way is returned as
// it is, and the sandbox then refuses to start (the process could create
// the rest). A file of the floor is returned when its name leads to an
// existing object: a missing one cannot be frozen without creating it
// (see agentfiles.SandboxFiles for what covers it).
func agentFloor(ws string, p Paths) ([]string, error) {
	grants := slices.Concat(p.ReadOnly, p.ReadWrite)
	var rw []string // the read-write grants, links resolved
	for _, g := range p.ReadWrite {
		r, err := filepath.EvalSymlinks(g)
		if err != nil {
			return nil, err
		}
		rw = append(rw, r)
	}
	inRW := func(abs string) bool { return slices.ContainsFunc(rw, func(g string) bool { return within(abs, g) }) }
	var out []string
	dirs := agentfiles.SandboxDirs()
	home, inHome := agentfiles.HomeIn(ws)
	if inHome {
		for _, d := range agentfiles.UserSandboxDirs() {
			dirs = append(dirs, path.Join(home, d))
		}
	}
	for _, d := range dirs {
		abs := filepath.Join(ws, filepath.FromSlash(d))
		if !slices.ContainsFunc(grants, func(g string) bool { return within(abs, g) }) {
			continue
		}
		w, err := linkwalk.Resolve(abs)
		if err != nil {
			return nil, fmt.Errorf("sandboxpolicy: resolving %s: %w", abs, err)
		}
		switch {
		case w.Final != "":
		case w.Missing != "" && w.Last && inRW(w.Missing):
			err := os.Mkdir(w.Missing, 0o700)
			if errors.Is(err, syscall.EROFS) {
				continue // a read-only file system: the process cannot create it either
			}
			if err != nil && !errors.Is(err, fs.ErrExist) {
				return nil, fmt.Errorf("sandboxpolicy: creating %s, kept read-only in the sandbox: %w", w.Missing, err)
			}
		case len(w.Links) > 0:
			// A link that leads to a missing name that is not the last
			// (.claude -> a/b without a): frozen as it is, which the
			// sandbox refuses when the process could create the rest.
		default:
			continue // a missing parent (.git) or a file on the way
		}
		out = append(out, abs)
	}
	files := agentfiles.SandboxFiles()
	if inHome {
		for _, f := range agentfiles.UserSandboxFiles() {
			files = append(files, path.Join(home, f))
		}
	}
	if fi, err := os.Stat(filepath.Join(ws, ".git")); err == nil && !fi.IsDir() {
		files = append(files, ".git")
	}
	// A submodule's git directory holds its own config and hooks, which
	// git runs for a command in the submodule (and a status of the
	// superproject): each existing one is frozen as .git's are.
	if mods, err := filepath.Glob(filepath.Join(ws, ".git", "modules", "*")); err == nil {
		for _, m := range mods {
			rel, _ := filepath.Rel(ws, m)
			rel = filepath.ToSlash(rel)
			files = append(files, rel+"/config", rel+"/hooks", rel+"/info")
		}
	}
	for _, f := range files {
		abs := filepath.Join(ws, filepath.FromSlash(f))
		if !slices.ContainsFunc(grants, func(g string) bool { return within(abs, g) }) {
			continue
		}
		w, err := linkwalk.Resolve(abs)
		if err != nil {
			return nil, fmt.Errorf("sandboxpolicy: resolving %s: %w", abs, err)
		}
		if w.Final != "" {
			out = append(out, abs)
		}
	}
	return out, nil
}
