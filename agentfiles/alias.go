package agentfiles

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// aliasRoots are the names under which the catalogue's project files
// live, whose symbolic links Aliases follows.
var aliasRoots = []string{".claude", ".codex", ".gemini", ".cursor", ".vscode", ".git", ".norma", ".git/hooks", ".git/info", ".git/modules"}

// Alias is a catalogued directory name that symbolic links lead to
// another place in the workspace: Name ".claude", Target "cfg". A file
// under Target is, for the agent that opens the name, a file under Name.
type Alias struct{ Name, Target string }

// Aliases returns the aliases of workspace ws as they are now: each
// catalogued directory (.claude, .git/hooks, ...) that is, or lies
// under, a symbolic link resolving to another directory inside ws. Names
// that do not exist, are no links, or lead out of ws are left out (the
// file guard and the sandbox refuse what lies outside). It reads the disk:
// one lstat per name, more only where there is a link.
func Aliases(ws string) []Alias {
	var out []Alias
	var real string
	for _, n := range aliasRoots {
		if !linked(ws, n) {
			continue
		}
		if real == "" {
			r, err := filepath.EvalSymlinks(ws)
			if err != nil {
				return nil
			}
			real = r
		}
		t, err := filepath.EvalSymlinks(filepath.Join(ws, filepath.FromSlash(n)))
		if err != nil {
			continue
		}
		rel, err := filepath.Rel(real, t)
		if err != nil || !filepath.IsLocal(rel) {
			continue
		}
		if rel = filepath.ToSlash(rel); rel != n {
			out = append(out, Alias{Name: n, Target: rel})
		}
	}
	return out
}

// linked reports whether a component of the workspace-relative name n is
// a symbolic link.
func linked(ws, n string) bool {
	p := ws
	for _, e := range strings.Split(n, "/") {
		p = filepath.Join(p, e)
		fi, err := os.Lstat(p)
		if err != nil {
			return false
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			return true
		}
	}
	return false
}

// Names returns rel as each alias names it: "cfg/settings.json" is
// ".claude/settings.json" when .claude leads to cfg.
func Names(aliases []Alias, rel string) []string {
	var out []string
	for _, a := range aliases {
		if rest, ok := strings.CutPrefix(rel, a.Target); ok && (rest == "" || rest[0] == '/') {
			out = append(out, a.Name+rest)
		}
	}
	return out
}

// AliasCache remembers the aliases of one workspace while neither its
// root directory nor its .git changed (their modification times, when
// older than racy): a link is made or replaced by an entry in one of
// them, so two stats stand for the walk of Aliases. The zero value is ready; it is
// safe for concurrent use.
type AliasCache struct {
	mu  sync.Mutex
	key string
	val []Alias
}

// Get returns Aliases(ws), from the cache when still current.
func (c *AliasCache) Get(ws string) []Alias {
	key, ok := aliasKey(ws)
	if !ok {
		return Aliases(ws)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.key != key {
		c.key, c.val = key, Aliases(ws)
	}
	return c.val
}

// racy is how recent a modification time may be and still be trusted
// to change at the next change: file systems stamp with a coarse clock
// (a jiffy on ext4, 2 s on FAT), so a link made in the same tick as the
// stamp would leave it as it was (git's "racy" index entries, the same
// answer).
const racy = 2 * time.Second

// aliasKey is the stamp of ws and ws/.git that Get compares; false when
// it cannot be trusted (a directory changed within racy of now).
func aliasKey(ws string) (string, bool) {
	var b strings.Builder
	now := time.Now()
	for _, p := range []string{ws, filepath.Join(ws, ".git")} {
		fi, err := os.Stat(p)
		if err != nil {
			if p == ws {
				return "", false
			}
			b.WriteString("-;")
			continue
		}
		if now.Sub(fi.ModTime()) < racy {
			return "", false
		}
		b.WriteString(strconv.FormatInt(fi.ModTime().UnixNano(), 10))
		b.WriteByte(':')
		b.WriteString(strconv.FormatInt(fi.Size(), 10))
		b.WriteByte(':')
		b.WriteString(strconv.FormatUint(uint64(fi.Mode()), 10))
		b.WriteByte(';')
	}
	return b.String(), true
}

// HomeIn is the user's home directory relative to the workspace ws,
// slash-separated ("." when ws is the home directory), when ws contains
// it, symbolic links resolved: the catalogue's user files are then
// workspace files, which the gate and the sandbox keep too.
func HomeIn(ws string) (string, bool) {
	h, err := os.UserHomeDir()
	if err != nil || h == "" || ws == "" {
		return "", false
	}
	for _, p := range []*string{&ws, &h} {
		if r, err := filepath.EvalSymlinks(*p); err == nil {
			*p = r
		}
	}
	rel, err := filepath.Rel(ws, h)
	if err != nil || !(rel == "." || filepath.IsLocal(rel)) {
		return "", false
	}
	return filepath.ToSlash(rel), true
}
