package agentfiles

import (
	"os"
	"path/filepath"
	"strings"
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
