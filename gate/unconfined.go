package gate

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/internal/shellcmd"
	"github.com/norma-run/norma/sandbox"
	"github.com/norma-run/norma/tool"
)

// resolveTimeout bounds the lookup of an unconfined fetch's host name
// (see addrDenied); a slower answer refuses the call.
const resolveTimeout = 2 * time.Second

// Reasons an unconfined command's files cannot be known (the call is then
// Unknown: asked, denied in dontAsk).
const (
	whyCDPATH = "cd to a relative name with CDPATH set: where it goes is not known"
	whyNoHome = "the command names the home directory, which is not known"
	whyNoDir  = "a cd to a directory that does not exist (yet): where the command runs is not known"
)

// unconfined is what the gate decides a call with that runs outside
// Norma's sandbox (Call.Unconfined): the files its command names are found
// where the shell will find them, following cd, ~ and $HOME, and each is
// judged as the sandbox would have shown it. A workspace file is the
// policy's to decide (cat .env); a host path is refused unless the
// sandbox shows it to every command (sandbox.Exposed: the system
// directories, a few /etc entries, the device nodes), because a run's
// Bash sees nothing else of the host (../ws2/.env, ~/.ssh, /tmp, /proc).
type unconfined struct {
	g       *Gate
	ws      string   // the workspace, symbolic links resolved
	home    string   // what bash expands ~ to ("" unknown): AgentShell.Home
	cdpath  bool     // AgentShell.CDPath
	visible []string // sandbox.Exposed, symbolic links resolved
}

// unconfined returns what an unconfined call in shell is decided with,
// nil when the gate has no workspace that resolves (nothing is then known
// about a command's files).
func (g *Gate) unconfined(shell AgentShell) *unconfined {
	base := g.unconf()
	if base == nil {
		return nil
	}
	u := *base
	u.cdpath = shell.CDPath
	if filepath.IsAbs(shell.Home) {
		u.home = filepath.Clean(shell.Home)
	}
	return &u
}

// newUnconfined is what every unconfined call of the gate shares, made
// once: the workspace and what the sandbox shows of the host.
func (g *Gate) newUnconfined() *unconfined {
	if g.wsDir == "" {
		return nil
	}
	ws, err := filepath.EvalSymlinks(g.wsDir)
	if err != nil {
		return nil
	}
	u := &unconfined{g: g, ws: ws}
	// What a run's Bash sees: the built-in shell runs without network
	// (sandboxpolicy.Runner, NetNone).
	for _, p := range sandbox.Exposed(sandbox.NetNone) {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			u.visible = append(u.visible, r)
		}
	}
	return u
}

// effects parses the command of a process access.
func effects(a tool.Access) (shellcmd.Effects, bool) {
	switch {
	case a.Kind != capability.ProcessSpawn:
		return shellcmd.Effects{}, false
	case a.Command != "":
		return shellcmd.Parse(a.Command), true
	case len(a.Argv) > 0:
		return shellcmd.Argv(a.Argv), true
	}
	return shellcmd.Effects{}, false
}

// namedFiles returns the reads of the workspace files that the commands
// of acc name as literal arguments (a word, or the value of
// --opt=value), where the shell finds them (cd followed, symbolic links
// resolved): the policy's deny of one denies the call (namedDenied). A
// word naming nothing is no file. bad refuses an argument that names an
// existing host path the sandbox would not show (PATH_ESCAPE, as a Read
// of it is refused); why says what cannot be known (cd $X, a CDPATH).
func (u *unconfined) namedFiles(acc []tool.Access) (named []capability.Request, why string, bad *capability.Decision) {
	unknown := func(w string) {
		if why == "" {
			why = w
		}
	}
	resolved := map[shellcmd.Dir]string{}
	for _, a := range acc {
		se, ok := effects(a)
		if !ok {
			continue
		}
		if se.DirUnknown != "" {
			unknown(se.DirUnknown)
		}
		if se.CDSearch && u.cdpath {
			unknown(whyCDPATH)
		}
		for _, n := range se.Names {
			if n.Access != shellcmd.Arg {
				continue
			}
			w, ok := argWord(n.Word)
			if !ok {
				continue
			}
			n.Word = w
			dirs := n.Dirs
			if n.Home || filepath.IsAbs(n.Word) {
				dirs = dirs[:min(1, len(dirs))] // the directories do not apply
			}
			for _, d := range dirs {
				abs, exists, w := u.place(resolved, d, n)
				if w != "" {
					unknown(w)
				}
				if !exists || abs == "" {
					continue
				}
				if rel, in := u.inWorkspace(abs); in {
					p, err := u.g.path(rel)
					if err != nil {
						return nil, why, refusal(err, "fs.read "+boundMsg(n.Word, 200))
					}
					named = append(named, capability.Request{Kind: capability.FSRead, Path: p})
					continue
				}
				if !u.shown(abs) {
					d := deny(capability.ReasonPathEscape, capability.LayerGate, "", "fs.read "+boundMsg(n.Word, 200))
					return nil, why, &d
				}
			}
		}
	}
	return named, why, nil
}

// argWord is the part of an argument that may name a file: the word, or
// the value of an option written --opt=value.
func argWord(w string) (string, bool) {
	if strings.HasPrefix(w, "-") {
		_, v, ok := strings.Cut(w, "=")
		if !ok {
			return "", false
		}
		w = v
	}
	if w == "" || strings.ContainsRune(w, 0) || len(w) > 4096 {
		return "", false
	}
	return w, true
}

// redirects appends the file requests of se's redirections, each where
// the shell opens it. A target outside the workspace is refused
// (PATH_ESCAPE): the sandbox shows the host read-only or not at all. A
// read of a host file the sandbox shows asks nothing (< /usr/share/dict/words).
func (u *unconfined) redirects(reqs []capability.Request, se shellcmd.Effects) (_ []capability.Request, what string, err error) {
	resolved := map[shellcmd.Dir]string{}
	for _, n := range se.Names {
		k := capability.FSRead
		switch n.Access {
		case shellcmd.Arg:
			continue
		case shellcmd.Write:
			k = capability.FSWrite
		}
		what := k.String() + " " + boundMsg(n.Word, 200)
		if n.Top {
			// A REV:PATH: relative to the repository's top, which is
			// the workspace or above it.
			n.Word = u.g.fromTop(n.Word)
		}
		for _, d := range n.Dirs {
			abs, exists, why := u.place(resolved, d, n)
			if why != "" {
				continue // Unknown (namedFiles): the call is asked
			}
			if abs == "" {
				if k == capability.FSWrite {
					// A dangling symbolic link: the write creates its
					// target, wherever it points.
					return reqs, what, errOutside
				}
				continue
			}
			rel, in := u.inWorkspace(abs)
			if !in {
				if k == capability.FSRead && exists && u.shown(abs) {
					continue
				}
				return reqs, what, errOutside
			}
			p, err := u.g.path(rel)
			if err != nil {
				return reqs, what, err
			}
			r := capability.Request{Kind: k, Path: p}
			if k == capability.FSWrite {
				// A file with another name (cp -l .git/config gc, then
				// cp x gc) is refused as the Write tool's is.
				if err := u.g.linkedWrite(r); err != nil {
					return reqs, what, err
				}
			}
			reqs = append(reqs, r)
		}
	}
	return reqs, "", nil
}

// errOutside refuses a file of an unconfined command outside the
// workspace that the sandbox would not have let it reach.
var errOutside = capability.Denied(capability.ReasonPathEscape, "", "outside the workspace, where the sandbox shows nothing or nothing writable")

// place returns where n, used in directory d, is on disk now: its path
// with every symbolic link resolved (for a redirection target that does
// not exist, its resolved parent and its last element; for an argument,
// "") and whether it exists. A symbolic link that does not resolve exists
// with abs "". why is set when the directory itself does not exist or is
// unknown. dirs holds the directories already resolved for the call.
func (u *unconfined) place(dirs map[shellcmd.Dir]string, d shellcmd.Dir, n shellcmd.Name) (abs string, exists bool, why string) {
	var p string
	switch {
	case n.Home:
		if u.home == "" {
			return "", false, whyNoHome
		}
		p = u.home + "/" + n.Word
	case filepath.IsAbs(n.Word):
		p = n.Word
	default:
		base := u.ws + "/" + d.Path
		switch {
		case filepath.IsAbs(d.Path):
			base = d.Path
		case d.Home && u.home == "":
			return "", false, whyNoHome
		case d.Home:
			base = u.home + "/" + d.Path
		}
		// The shell is in the directory itself: cd resolved it.
		dir, ok := dirs[d]
		if !ok {
			var err error
			if dir, err = filepath.EvalSymlinks(base); err != nil {
				dir = ""
			}
			dirs[d] = dir
		}
		if dir == "" {
			return "", false, whyNoDir
		}
		p = dir + "/" + n.Word
	}
	if n.Access == shellcmd.Arg {
		// One lstat, resolved by the kernel as the command's own open
		// will be: most words name nothing.
		if _, err := os.Lstat(p); err != nil {
			return "", false, ""
		}
	}
	// EvalSymlinks resolves each element before the .. that follows it,
	// as the kernel does (link/../x is the link target's parent's x).
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r, true, ""
	}
	if _, err := os.Lstat(p); err == nil {
		return "", true, "" // a link that does not resolve, or a loop
	}
	if n.Access == shellcmd.Arg {
		return "", false, "" // an argument that names nothing: no file
	}
	parent, err := filepath.EvalSymlinks(filepath.Dir(p))
	if err != nil {
		return filepath.Clean(p), false, ""
	}
	return filepath.Join(parent, filepath.Base(p)), false, ""
}

// inWorkspace returns abs relative to the workspace, if it is in it.
func (u *unconfined) inWorkspace(abs string) (string, bool) {
	rel, err := filepath.Rel(u.ws, abs)
	if err != nil || !filepath.IsLocal(rel) && rel != "." {
		return "", false
	}
	return filepath.ToSlash(rel), true
}

// shown reports whether the sandbox shows the host path abs to every
// command.
func (u *unconfined) shown(abs string) bool {
	for _, v := range u.visible {
		if abs == v || strings.HasPrefix(abs, v+"/") {
			return true
		}
	}
	return false
}

// maxUnder bounds the files filesUnder lists.
const maxUnder = 20000

// filesUnder are the reads of the files under each tree that acc
// searches (tool.Access.Tree: Grep), for an unconfined call. Norma's Grep
// skips what the policy denies as it walks, through the file guard, but
// an agent's own search reads every file under the path it was given
// (Claude Code's Grep of "." prints the lines of .env), so each of them
// is decided as a file the call names. Symbolic links are not followed
// and .git is not entered, as the agents' searches (ripgrep) do neither.
// ok is false when there are more than maxUnder: too many to decide, so
// the call is refused rather than let through unchecked.
func (g *Gate) filesUnder(acc []tool.Access) (out []capability.Request, ok bool) {
	if g.wsDir == "" {
		return nil, true
	}
	for _, a := range acc {
		if a.Kind != capability.FSRead || !a.Tree {
			continue
		}
		rel, err := g.resolve(a.Path)
		if err != nil {
			continue // refused as the access itself
		}
		root := filepath.Join(g.wsDir, filepath.FromSlash(rel))
		if fi, err := os.Lstat(root); err != nil || !fi.IsDir() {
			continue
		}
		err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			switch {
			case err != nil:
				return nil // unreadable: the agent's search cannot read it either
			case d.IsDir() && d.Name() == ".git" && p != root:
				return filepath.SkipDir
			case d.IsDir() || d.Type()&fs.ModeSymlink != 0:
				return nil
			case len(out) == maxUnder:
				return errTooMany
			}
			r, err := filepath.Rel(g.wsDir, p)
			if err != nil {
				return nil
			}
			out = append(out, capability.Request{Kind: capability.FSRead, Path: filepath.ToSlash(r)})
			return nil
		})
		if err != nil {
			return nil, false
		}
	}
	return out, true
}

var errTooMany = errors.New("gate: too many files")
