package host

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/manifest"
	"github.com/norma-run/norma/policy"
)

// MaxWalk bounds how many entries SandboxPaths inspects under the granted
// directories when it looks for denied files to hide. A larger tree refuses
// to start the plugin rather than start it with something unhidden.
const MaxWalk = 200_000

// Paths are the host paths a sandboxed plugin sees.
type Paths struct {
	ReadOnly, ReadWrite, Deny []string
}

// SandboxPaths derives the sandbox's view of the workspace from the
// effective file capabilities, so the OS enforces the same answer the
// policy gives:
//
//   - every glob of every layer contributes its literal directory prefix as
//     a candidate (docs/** → docs); a candidate is granted when the policy
//     Set allows the access on that directory itself, so a grant narrowed to
//     docs/api/** yields docs/api, not docs;
//   - globs without a literal prefix (**/*.txt) cannot be expressed as a
//     bind and are not granted to the sandbox at all (fail closed; the
//     plugin sees nothing rather than too much);
//   - under every granted directory, each entry the policy does not allow
//     (a deny glob such as **/.env*, a file outside a narrower grant) is
//     added to Deny, which the sandbox hides.
//
// Write candidates that do not exist yet are created (they are granted
// writes). layers are the manifest's and the other layers' permissions.
func SandboxPaths(ctx context.Context, ws string, set *policy.Set, layers ...manifest.Permissions) (Paths, error) {
	var p Paths
	ws, err := filepath.Abs(ws)
	if err != nil {
		return p, err
	}
	for _, kind := range []capability.Kind{capability.FSRead, capability.FSWrite} {
		var cands []string
		for _, l := range layers {
			if l.Filesystem == nil {
				continue
			}
			list := l.Filesystem.Read
			if kind == capability.FSWrite {
				list = l.Filesystem.Write
			}
			for _, g := range list {
				if pre := literalDir(manifest.WorkspaceGlob(g)); pre != "" {
					cands = append(cands, pre)
				}
			}
		}
		slices.Sort(cands)
		cands = slices.Compact(cands)
		var granted []string
		for _, c := range cands {
			if set.Decide(ctx, capability.Request{Kind: kind, Path: c}).Mode != capability.Allow {
				continue
			}
			if slices.ContainsFunc(granted, func(g string) bool { return within(c, g) }) {
				continue
			}
			granted = append(granted, c)
		}
		for _, g := range granted {
			abs := filepath.Join(ws, filepath.FromSlash(g))
			if kind == capability.FSWrite {
				if err := os.MkdirAll(abs, 0o755); err != nil {
					return p, err
				}
				p.ReadWrite = append(p.ReadWrite, abs)
			} else {
				if _, err := os.Lstat(abs); errors.Is(err, fs.ErrNotExist) {
					continue
				}
				p.ReadOnly = append(p.ReadOnly, abs)
			}
		}
	}
	// A directory granted for writing is also readable; drop ro binds it covers.
	p.ReadOnly = slices.DeleteFunc(p.ReadOnly, func(r string) bool {
		return slices.ContainsFunc(p.ReadWrite, func(w string) bool { return within(r, w) })
	})
	seen := 0
	for _, root := range append(append([]string{}, p.ReadOnly...), p.ReadWrite...) {
		kind := capability.FSRead
		if slices.Contains(p.ReadWrite, root) {
			kind = capability.FSWrite
		}
		err := filepath.WalkDir(root, func(abs string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if seen++; seen > MaxWalk {
				return errors.New("plugin host: more than MaxWalk entries under the granted paths")
			}
			if abs == root {
				return nil // granted by the decision above
			}
			rel, _ := filepath.Rel(ws, abs)
			rel = filepath.ToSlash(rel)
			// A read-write bind is judged on writes (what the plugin may
			// change there it may also read back); a read-only one on reads.
			ok := set.Decide(ctx, capability.Request{Kind: kind, Path: rel}).Mode == capability.Allow
			if !ok {
				p.Deny = append(p.Deny, abs)
				if d.IsDir() {
					return filepath.SkipDir
				}
			}
			return nil
		})
		if err != nil {
			return Paths{}, err
		}
	}
	return p, nil
}

// literalDir returns the directory part of a glob before its first
// metacharacter: docs/** → docs, docs/*.md → docs, a/b.md → a/b.md, **/x → "".
func literalDir(g string) string {
	i := strings.IndexAny(g, "*?[{\\")
	if i < 0 {
		return path.Clean(g)
	}
	d := g[:i]
	if j := strings.LastIndexByte(d, '/'); j >= 0 {
		return path.Clean(d[:j])
	}
	return ""
}

func within(p, dir string) bool { return p == dir || strings.HasPrefix(p, dir+"/") }
