package builtin

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/tool"
)

// MaxGlobResults bounds the paths Glob returns.
const MaxGlobResults = 1000

// validRelPattern checks a glob written by the model: doublestar syntax,
// relative, no "..".
func validRelPattern(p string) error {
	if !doublestar.ValidatePattern(p) {
		return fail(capability.ReasonInvalidRequest, "%q is not a valid glob pattern", p)
	}
	if strings.HasPrefix(p, "/") || p == ".." || strings.HasPrefix(p, "../") || strings.Contains(p, "/../") || strings.HasSuffix(p, "/..") {
		return fail(capability.ReasonPathEscape, "pattern %q must be relative and stay inside the workspace", p)
	}
	return nil
}

// globAccess declares the read of path, once the pattern is known to stay
// inside it: the gate decides the pattern with the call, so that a caller
// that runs the search itself (an agent's Glob, decided by agenthook)
// never walks "../" or "/" past a decision that only saw path.
func globAccess(in tool.Input) ([]tool.Access, error) {
	if err := validRelPattern(str(in, "pattern", "")); err != nil {
		return nil, err
	}
	return readAccess("path")(in)
}

// rel returns p relative to base (both canonical, "." for the root).
func rel(base, p string) string {
	if base == "." {
		return p
	}
	if p == base {
		return "."
	}
	return strings.TrimPrefix(p, base+"/")
}

func globTool() tool.Spec {
	return tool.Spec{
		Name:        "Glob",
		Description: "Find workspace files by glob pattern, newest first.",
		Prompt: "Finds files whose path (relative to path, default the workspace root) matches a doublestar glob: `*` stays within a directory, `**` crosses directories, " +
			"`{a,b}` alternates. Results are sorted by modification time, newest first, at most 1000. Denied paths never appear and .git and node_modules are not searched.",
		Schema:           json.RawMessage(`{"type":"object","additionalProperties":false,"required":["pattern"],"properties":{"pattern":{"type":"string","minLength":1,"maxLength":1024},"path":{"type":"string","minLength":1,"maxLength":4096}}}`),
		ReadOnly:         yes,
		ConcurrencySafe:  yes,
		CheckPermissions: allow,
		Accesses:         globAccess,
		Call: func(ctx context.Context, env tool.Env, in tool.Input) (tool.Result, error) {
			w, err := needWalker(env)
			if err != nil {
				return tool.Result{}, err
			}
			pattern := str(in, "pattern", "")
			if err := validRelPattern(pattern); err != nil {
				return tool.Result{}, err
			}
			paths, more, err := glob(ctx, env.FS, w, pathOr(in, "path"), pattern, MaxGlobResults)
			if err != nil {
				return tool.Result{}, err
			}
			if len(paths) == 0 {
				return tool.Result{Content: "no files match " + pattern}, nil
			}
			out := joinLines(paths)
			if more > 0 {
				out += fmt.Sprintf("\n(%d more matches not shown; narrow the pattern)", more)
			}
			return tool.Result{Content: out}, nil
		},
	}
}

// glob walks root through the guard and returns the canonical paths of
// regular files and links matching pattern (relative to root), newest
// first, at most max, and how many more matched.
func glob(ctx context.Context, fsys tool.FS, w walker, root, pattern string, max int) ([]string, int, error) {
	type hit struct {
		p string
		t time.Time
	}
	canonRoot, err := fsys.Resolve(root)
	if err != nil {
		return nil, 0, fsErr(err)
	}
	// Walk only the pattern's literal directory prefix.
	start := canonRoot
	if b, _ := doublestar.SplitPattern(pattern); b != "." && b != "" && !strings.ContainsAny(b, `*?[{\`) {
		start = path.Join(canonRoot, b)
	}
	var hits []hit
	err = w.WalkDir(ctx, start, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == start && start == canonRoot {
				return fsErr(err)
			}
			return nil // a missing literal prefix matches nothing
		}
		if d.IsDir() {
			if p != start && ignoredDirs[d.Name()] {
				return fs.SkipDir
			}
			return nil
		}
		if ok, _ := doublestar.Match(pattern, rel(canonRoot, p)); !ok {
			return nil
		}
		h := hit{p: p}
		if fi, err := d.Info(); err == nil {
			h.t = fi.ModTime()
		}
		hits = append(hits, h)
		return nil
	})
	if err != nil {
		return nil, 0, fsErr(err)
	}
	slices.SortFunc(hits, func(a, b hit) int {
		if c := b.t.Compare(a.t); c != 0 {
			return c
		}
		return strings.Compare(a.p, b.p)
	})
	more := 0
	if len(hits) > max {
		more, hits = len(hits)-max, hits[:max]
	}
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.p
	}
	return out, more, nil
}
