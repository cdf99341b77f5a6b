package sandboxpolicy

import (
	"context"
	"errors"
	"fmt"
	"github.com/norma-run/norma/agentfiles"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/internal/fileid"
	"github.com/norma-run/norma/manifest"
	"github.com/norma-run/norma/policy"
	"github.com/norma-run/norma/sandbox"
)

// MaxWalk bounds how many entries Derive inspects under the granted
// directories when it looks for denied files to hide. A larger tree is an
// error (the caller refuses to start the sandbox) rather than a sandbox
// with something unhidden.
const MaxWalk = 200_000

// DefaultLimits bound a sandboxed process tree: a plugin's (the plugin
// host's default), a shell command's, a background task's and a PTY
// session's (what `norma run` configures), and `norma sandbox exec`'s
// unless its flags say otherwise: 64 processes, 512 open files, 256 MiB
// per written file, 600 s of CPU and 4 GiB of memory ([DefaultMemory]).
var DefaultLimits = sandbox.Limits{NProc: 64, NoFile: 512, FSize: 256 << 20, CPU: 600, Memory: DefaultMemory}

// DefaultMemory is the memory limit of [DefaultLimits]: the resident
// memory of the whole tree where a memory cgroup is writable, else the
// address space of each process (RLIMIT_AS). 4 GiB of address space
// starts Go programs (about 700 MiB reserved at start), node and python;
// it is too little for WebAssembly in node, whose every instance reserves
// about 10 GiB of address space, so a plugin using it needs a host with a
// memory cgroup or a higher limit (host.Config.Limits).
const DefaultMemory = 4 << 30

// Paths are the host paths a sandboxed process sees: the fields of the
// same names in [sandbox.Spec].
type Paths struct {
	ReadOnly, ReadWrite, Deny, Pin, Freeze []string
}

// Derive derives the sandbox's view of the workspace ws from the effective
// file capabilities of set:
//
//   - every glob of every layer contributes its literal directory prefix as
//     a candidate (docs/** → docs); a candidate is granted when set allows
//     the access on that directory itself, so a grant narrowed to
//     docs/api/** yields docs/api, not docs;
//   - globs without a literal prefix (**/*.txt) cannot be expressed as a
//     bind and are not granted to the sandbox at all (fail closed; the
//     process sees nothing rather than too much);
//   - under every granted directory, each entry the policy does not allow
//     (a deny glob such as **/.env*, a file outside a narrower grant) is
//     added to Deny, which the sandbox hides; under a read-write one, an
//     entry the policy lets be read but not written (a deny_write glob,
//     from a Write or Edit deny rule) is added to Freeze instead, which
//     the sandbox shows read-only, and what lies under a frozen directory
//     is judged on reads (a denied file in it is still hidden);
//   - inside every read-write directory, each directory between it and a
//     hidden entry, and each between it and the literal prefix of a deny
//     glob (docs/private/*.key → docs/private, .norma/policy.yaml →
//     .norma; the longest prefix that exists), is added to Pin, which the
//     sandbox makes a mount point that cannot be renamed or removed. The
//     policy decides by name; pins keep the names true, so that neither
//     `mv docs docs2` nor `mv .norma x && mkdir .norma` can move a denied
//     tree out from under its deny rule or replace a protected one;
//   - whatever the policy allows, the files and directories agents and
//     tools load as code on the host ([agentfiles.SandboxDirs] and
//     [agentfiles.SandboxFiles], workspace-relative) are added to Freeze,
//     which the sandbox keeps read-only, their symbolic links pinned and
//     the names they lead to frozen: a confined process cannot write
//     .claude/settings.local.json, .git/hooks/pre-commit or .git/config,
//     create .codex/config.toml, or replace the directory or link that
//     holds them. Such a directory that does not exist is created empty
//     first when its parent does (not .git itself); see agentFloor.
//
// prot are directories hidden by identity, whatever their name (Norma's
// state directory, recorded by [Protect] when the run opened): a directory
// under a bind with the device and inode of one is hidden too, so that a
// state directory renamed on the host or bound into the workspace under
// another name stays out of reach (a bind that is itself protected is an
// error).
//
// Write candidates that do not exist yet are created (they are granted
// writes); read candidates that do not exist are left out. layers are the
// permissions of the policy's layers (manifest, grant, workspace, run).
// More than [MaxWalk] entries under the granted directories is an error.
func Derive(ctx context.Context, ws string, set *policy.Set, prot Protected, layers ...manifest.Permissions) (Paths, error) {
	var p Paths
	ws, err := filepath.Abs(ws)
	if err != nil {
		return p, err
	}
	for _, kind := range []capability.Kind{capability.FSRead, capability.FSWrite} {
		for _, g := range granted(ctx, set, kind, candidates(kind, layers)) {
			abs := filepath.Join(ws, filepath.FromSlash(g))
			if kind == capability.FSWrite {
				if err := os.MkdirAll(abs, 0o755); err != nil {
					return p, err
				}
				p.ReadWrite = append(p.ReadWrite, abs)
				continue
			}
			if _, err := os.Lstat(abs); errors.Is(err, fs.ErrNotExist) {
				continue
			}
			p.ReadOnly = append(p.ReadOnly, abs)
		}
	}
	// A directory granted for writing is also readable; drop ro binds it covers.
	p.ReadOnly = slices.DeleteFunc(p.ReadOnly, func(r string) bool {
		return slices.ContainsFunc(p.ReadWrite, func(w string) bool { return within(r, w) })
	})
	// The floor first: the directories it creates are then walked too.
	if p.Freeze, err = agentFloor(ws, p); err != nil {
		return Paths{}, err
	}
	var ro []string
	if p.Deny, ro, err = hidden(ctx, ws, set, p, prot.ids); err != nil {
		return Paths{}, err
	}
	p.Freeze = append(p.Freeze, ro...)
	p.Pin = pinned(ws, p, layers)
	return p, nil
}

// pinned returns the sorted directories Derive pins (see there): inside
// each read-write bind, the ancestors of every hidden entry and the
// longest existing literal prefix of every deny and deny_write glob with
// its ancestors,
// the bind itself and anything hidden left out.
func pinned(ws string, p Paths, layers []manifest.Permissions) []string {
	var out []string
	add := func(abs string) {
		for _, root := range p.ReadWrite {
			for a := abs; a != root && within(a, root); a = filepath.Dir(a) {
				out = append(out, a)
			}
		}
	}
	for _, d := range p.Deny {
		add(filepath.Dir(d))
	}
	for _, l := range layers {
		if l.Filesystem == nil {
			continue
		}
		for _, g := range slices.Concat(l.Filesystem.Deny, l.Filesystem.DenyWrite) {
			pre := literalDir(manifest.WorkspaceGlob(g))
			if pre == "" || pre == "." || !filepath.IsLocal(filepath.FromSlash(pre)) {
				continue
			}
			abs := filepath.Join(ws, filepath.FromSlash(pre))
			for abs != ws {
				if fi, err := os.Lstat(abs); err == nil && fi.IsDir() {
					break
				}
				abs = filepath.Dir(abs)
			}
			add(abs)
		}
	}
	out = slices.DeleteFunc(out, func(a string) bool {
		return slices.ContainsFunc(p.Deny, func(d string) bool { return within(a, d) })
	})
	slices.Sort(out)
	return slices.Compact(out)
}

// candidates returns the sorted, distinct literal directories of the
// layers' globs for kind (fs.read or fs.write).
func candidates(kind capability.Kind, layers []manifest.Permissions) []string {
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
	return slices.Compact(cands)
}

// granted returns the sorted candidates set allows for kind, leaving out
// those under an already granted one.
func granted(ctx context.Context, set *policy.Set, kind capability.Kind, cands []string) []string {
	var out []string
	for _, c := range cands {
		if set.Decide(ctx, capability.Request{Kind: kind, Path: c}).Mode != capability.Allow {
			continue
		}
		if slices.ContainsFunc(out, func(g string) bool { return within(c, g) }) {
			continue
		}
		out = append(out, c)
	}
	return out
}

// allowedAll reports whether set allows kind on rel and on every name
// the agent-file aliases give it (cfg/settings.json is
// .claude/settings.json when .claude leads to cfg): a file hidden by one
// of its names is hidden.
func allowedAll(ctx context.Context, set *policy.Set, kind capability.Kind, rel string, aliases []agentfiles.Alias) bool {
	if set.Decide(ctx, capability.Request{Kind: kind, Path: rel}).Mode != capability.Allow {
		return false
	}
	for _, n := range agentfiles.Names(aliases, rel) {
		if set.Decide(ctx, capability.Request{Kind: kind, Path: n}).Mode != capability.Allow {
			return false
		}
	}
	return true
}

// Protected is a set of directories known by identity (device and
// inode), recorded by [Protect]. The zero value protects nothing. It is
// immutable and safe for concurrent use.
type Protected struct{ ids fileid.Set }

// Protect records the identities of the directories among paths (see
// fileid.Record: symbolic links followed, "" and missing paths skipped,
// a path that is not a directory an error), so that [Derive] hides them
// under whatever name they have later.
func Protect(paths ...string) (Protected, error) {
	ids, err := fileid.Record(paths...)
	return Protected{ids: ids}, err
}

// hidden walks the binds of p and returns every entry under them the
// policy does not allow, every directory whose identity is in ids, and
// every other name of a hidden file (a hard link made before the deny
// rule existed would show its content under a name the policy allows). A
// read-write bind is judged on writes (what the process may change there
// it may also read back); a read-only one on reads. An entry of a
// read-write bind that the policy lets be read but not written is
// returned in frozen instead (with every other name of a frozen file),
// and what lies under a frozen directory is judged on reads.
func hidden(ctx context.Context, ws string, set *policy.Set, p Paths, ids fileid.Set) (deny, frozen []string, _ error) {
	var links []linked // allowed regular files with more than one name
	frozenIDs := map[fileid.ID]bool{}
	seen := 0
	aliases := agentfiles.Aliases(ws)
	for _, root := range slices.Concat(p.ReadOnly, p.ReadWrite) {
		rw := slices.Contains(p.ReadWrite, root)
		under := "" // the frozen directory being walked, if any
		err := filepath.WalkDir(root, func(abs string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if seen++; seen > MaxWalk {
				return fmt.Errorf("sandboxpolicy: more than MaxWalk (%d) entries under the granted paths", MaxWalk)
			}
			if ids.Len() > 0 && d.IsDir() {
				fi, err := d.Info()
				if err != nil {
					return err
				}
				if id, ok := fileid.Of(fi); ok && ids.Has(id) {
					if abs == root {
						return fmt.Errorf("sandboxpolicy: %s is a protected directory and cannot be granted", abs)
					}
					deny = append(deny, abs)
					return filepath.SkipDir
				}
			}
			if abs == root {
				return nil // granted by the decision in Derive
			}
			if under != "" && !within(abs, under) {
				under = ""
			}
			rel, _ := filepath.Rel(ws, abs)
			rel = filepath.ToSlash(rel)
			kind := capability.FSRead
			if rw && under == "" {
				kind = capability.FSWrite
			}
			if allowedAll(ctx, set, kind, rel, aliases) {
				if id, ok := multiLink(d); ok {
					if under != "" {
						frozenIDs[id] = true
					} else {
						links = append(links, linked{abs, id})
					}
				}
				return nil
			}
			if kind == capability.FSWrite && allowedAll(ctx, set, capability.FSRead, rel, aliases) {
				frozen = append(frozen, abs)
				if id, ok := multiLink(d); ok {
					frozenIDs[id] = true
				}
				if d.IsDir() {
					under = abs
				}
				return nil
			}
			deny = append(deny, abs)
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		})
		if err != nil {
			return nil, nil, err
		}
	}
	if len(links) == 0 {
		return deny, frozen, nil
	}
	// Only when the allowed names include hard links: the identities of
	// the hidden files with more than one name, then every allowed name
	// of one of them is hidden too, and every writable name of a frozen
	// one frozen.
	linkIDs := map[fileid.ID]bool{}
	for _, root := range deny {
		err := filepath.WalkDir(root, func(abs string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if seen++; seen > MaxWalk {
				return fmt.Errorf("sandboxpolicy: more than MaxWalk (%d) entries under the granted paths", MaxWalk)
			}
			if id, ok := multiLink(d); ok {
				linkIDs[id] = true
			}
			return nil
		})
		if err != nil {
			return nil, nil, err
		}
	}
	for _, l := range links {
		switch {
		case linkIDs[l.id]:
			deny = append(deny, l.abs)
		case frozenIDs[l.id] && slices.ContainsFunc(p.ReadWrite, func(w string) bool { return within(l.abs, w) }):
			frozen = append(frozen, l.abs)
		}
	}
	return deny, frozen, nil
}

// linked is a file name and the identity of the file it names.
type linked struct {
	abs string
	id  fileid.ID
}

// multiLink returns the identity of a regular file with more than one
// link.
func multiLink(d fs.DirEntry) (fileid.ID, bool) {
	if !d.Type().IsRegular() {
		return fileid.ID{}, false
	}
	fi, err := d.Info()
	if err != nil {
		return fileid.ID{}, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || st.Nlink < 2 {
		return fileid.ID{}, false
	}
	return fileid.OfStat(st), true
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
