package runtime

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/goccy/go-yaml"

	"github.com/norma-run/norma/internal/atomicfile"
)

// Definitions are the files Claude Code loads to start something by name
// when the model asks for it: a subagent (the Agent tool, formerly Task)
// from .claude/agents/**/NAME.md, a skill (the Skill tool) from
// .claude/skills/NAME/SKILL.md and the rest of its directory, a slash
// command (the Skill tool, formerly SlashCommand) from
// .claude/commands/**/NAME.md. What their frontmatter names runs on the
// host when they start — a subagent's hooks and mcpServers, a skill's
// hooks and scripts, a command's !`command` lines — outside Norma's
// sandbox and without a tool call Norma would see. So a definition that a
// repository ships, or that anything but the user wrote, starts only
// once the user accepted its content by digest (`norma hooks trust`, as
// for a workspace hook program): the agent hook door (agenthook,
// definitions.go) refuses the call otherwise.
//
// Claude Code 2.1.332 reads them, and Definitions looks for them, in:
//
//   - the project: .claude of the workspace and of each directory above
//     it up to the repository root (the first directory holding .git),
//     never the home directory itself (its .claude is the user's);
//   - nested: .claude/skills of a directory below the workspace (loaded
//     when the model touches files there);
//   - the user: Claude's configuration directory (~/.claude, or
//     $CLAUDE_CONFIG_DIR);
//   - managed: the administrator's directory (its .claude).
//
// A definition in the project or nested, or one of the user's or
// managed that lies inside the workspace (a workspace that contains the
// home directory), needs trust: the agent or a pull could have written
// it. What the user installed elsewhere is the user's.
//
// Limits: Definitions reads names as Claude Code does as far as this file
// knows (a subagent's frontmatter name, a skill's directory or
// frontmatter name, a command's path); where a frontmatter does not
// parse, the definition answers to every name of its kind, so that a
// name Norma could not read is never taken for another's. Directories
// given with --add-dir, plugins loaded with --plugin-dir and skills of
// MCP servers are not searched: a name found nowhere is refused by the
// caller, not allowed.

// DefinitionKind is what a definition starts.
type DefinitionKind string

const (
	DefinitionAgent   DefinitionKind = "agent"
	DefinitionSkill   DefinitionKind = "skill"
	DefinitionCommand DefinitionKind = "command"
)

// DefinitionScope is where a definition was found.
type DefinitionScope string

const (
	// DefinitionProject: a .claude directory of the workspace or of a
	// project directory above it.
	DefinitionProject DefinitionScope = "project"
	// DefinitionNested: a .claude/skills directory below the workspace.
	DefinitionNested DefinitionScope = "nested"
	// DefinitionUser: Claude's configuration directory.
	DefinitionUser DefinitionScope = "user"
	// DefinitionManaged: the administrator's directory.
	DefinitionManaged DefinitionScope = "managed"
)

// DefinitionSources are where definitions are loaded from besides the
// project. Empty fields are not searched.
type DefinitionSources struct {
	// Home is the user's home directory: the project walk stops below it.
	Home string
	// UserDir is Claude's configuration directory (~/.claude, or
	// $CLAUDE_CONFIG_DIR): its agents, skills and commands.
	UserDir string
	// ManagedDir is the managed settings directory (/etc/claude-code on
	// Linux): its .claude/agents, .claude/skills and .claude/commands.
	ManagedDir string
}

// Definition is one definition file (or skill directory).
type Definition struct {
	Kind  DefinitionKind  `json:"kind"`
	Scope DefinitionScope `json:"scope"`
	// Path is the absolute path it was found at: the .md file of a
	// subagent or a command, the directory of a skill.
	Path string `json:"path"`
	// Rel is Path relative to the workspace when it lies inside it, else
	// Path.
	Rel string `json:"rel"`
	// Names are the names the agent may know it by, lower-case.
	Names []string `json:"names"`
	// AnyName says its frontmatter does not parse: it answers to every
	// name of its kind.
	AnyName bool `json:"any_name,omitempty"`
	// Runs lists what it names that runs on the host when it is used:
	// "hooks", "mcpServers", "!`command`", "unparsed frontmatter".
	Runs []string `json:"runs,omitempty"`
	// Isolation is a subagent's frontmatter isolation ("worktree" makes
	// a git worktree when it starts).
	Isolation string `json:"isolation,omitempty"`
	// Skills are the skills a subagent's frontmatter preloads.
	Skills []string `json:"skills,omitempty"`
	// NeedsTrust says it starts only once its content was accepted.
	NeedsTrust bool `json:"needs_trust"`
}

// Answers reports whether d may be what the agent starts by name (any
// case; a name with a namespace, plugin:x or dir:x, is also matched by
// its last part, so that a project file is never passed over for a
// namespaced name it could shadow).
func (d Definition) Answers(name string) bool {
	if d.AnyName {
		return true
	}
	n := strings.ToLower(strings.TrimSpace(name))
	last := n
	if i := strings.LastIndexByte(n, ':'); i >= 0 {
		last = n[i+1:]
	}
	for _, x := range d.Names {
		if x == n || x == last {
			return true
		}
	}
	return false
}

// Bounds of a search: a workspace beyond them is refused, not searched in
// part.
const (
	maxDefinitionDirs  = 200000  // directories walked for nested skills
	maxDefinitionDepth = 24      // below a definitions directory
	maxDefinitionFile  = 1 << 20 // bytes of a definition file read for its names
	maxSkillEntries    = 10000   // entries of one skill directory
	maxSkillBytes      = 64 << 20
)

// ErrDefinitionsTooMany says the workspace has more directories than
// Definitions walks for nested skills.
var ErrDefinitionsTooMany = errors.New("workspace: too many directories to search for nested skills")

// Definitions returns the definitions of the kinds asked (all when none)
// that Claude Code would load in workspace ws: the project's, the nested
// skills, the user's and the managed ones, in that order. A directory
// that cannot be read, other than one that does not exist, is an error:
// a caller deciding with the list refuses.
func Definitions(ws string, src DefinitionSources, kinds ...DefinitionKind) ([]Definition, error) {
	ws, err := filepath.Abs(ws)
	if err != nil {
		return nil, err
	}
	if len(kinds) == 0 {
		kinds = []DefinitionKind{DefinitionAgent, DefinitionSkill, DefinitionCommand}
	}
	s := &defSearch{ws: ws, wsReal: realPath(ws), kinds: kinds}
	for _, d := range projectDirs(ws, src.Home) {
		if err := s.root(filepath.Join(d, ".claude"), DefinitionProject); err != nil {
			return nil, err
		}
	}
	if slices.Contains(kinds, DefinitionSkill) {
		if err := s.nested(); err != nil {
			return nil, err
		}
	}
	if src.UserDir != "" {
		if err := s.root(src.UserDir, DefinitionUser); err != nil {
			return nil, err
		}
	}
	if src.ManagedDir != "" {
		if err := s.root(filepath.Join(src.ManagedDir, ".claude"), DefinitionManaged); err != nil {
			return nil, err
		}
	}
	return s.out, nil
}

// projectDirs are ws and the directories above it that Claude Code reads
// a .claude directory of: up to the first that holds .git, stopping below
// home.
func projectDirs(ws, home string) []string {
	var out []string
	for d := ws; ; {
		if home != "" && samePath(d, home) {
			break
		}
		out = append(out, d)
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			break
		}
		up := filepath.Dir(d)
		if up == d {
			break
		}
		d = up
	}
	return out
}

func samePath(a, b string) bool {
	return filepath.Clean(a) == filepath.Clean(b) || realPath(a) == realPath(b)
}

type defSearch struct {
	ws, wsReal string
	kinds      []DefinitionKind
	out        []Definition
	seen       map[string]bool // definitions found, by kind and resolved path
}

// insideWS reports whether p (or where it leads) lies inside the
// workspace.
func (s *defSearch) insideWS(p string) bool {
	for _, pair := range [][2]string{{s.ws, filepath.Clean(p)}, {s.wsReal, realPath(p)}} {
		if rel, err := filepath.Rel(pair[0], pair[1]); err == nil && (rel == "." || filepath.IsLocal(rel)) {
			return true
		}
	}
	return false
}

// root adds the definitions of the .claude-like directory dir.
func (s *defSearch) root(dir string, scope DefinitionScope) error {
	for _, k := range s.kinds {
		var err error
		switch k {
		case DefinitionAgent:
			err = s.files(filepath.Join(dir, "agents"), k, scope)
		case DefinitionCommand:
			err = s.files(filepath.Join(dir, "commands"), k, scope)
		case DefinitionSkill:
			err = s.skills(filepath.Join(dir, "skills"), scope)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// nested adds the skills of each .claude directory below the workspace
// (its own is the project's). .git is not searched.
func (s *defSearch) nested() error {
	n := 0
	err := filepath.WalkDir(s.ws, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == s.ws || errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if !d.IsDir() {
			if d.Type()&fs.ModeSymlink == 0 {
				return nil
			}
			// A link is read through by the agent: a link named .claude,
			// or a linked directory's own .claude (the walk does not
			// follow links further).
			if d.Name() == ".claude" {
				return s.skills(filepath.Join(p, "skills"), DefinitionNested)
			}
			return s.skills(filepath.Join(p, ".claude", "skills"), DefinitionNested)
		}
		if n++; n > maxDefinitionDirs {
			return ErrDefinitionsTooMany
		}
		switch {
		case p == s.ws:
			return nil
		case d.Name() == ".git":
			return filepath.SkipDir
		case d.Name() == ".claude":
			if filepath.Dir(p) == s.ws {
				return filepath.SkipDir // the project's, read already
			}
			if err := s.skills(filepath.Join(p, "skills"), DefinitionNested); err != nil {
				return err
			}
			return filepath.SkipDir
		}
		return nil
	})
	return err
}

// files adds each .md file below dir as a definition of kind k.
func (s *defSearch) files(dir string, k DefinitionKind, scope DefinitionScope) error {
	return walkDefs(dir, func(p string, rel []string, isDir bool) (bool, error) {
		if isDir || !strings.HasSuffix(strings.ToLower(p), ".md") {
			return true, nil
		}
		stem := strings.TrimSuffix(rel[len(rel)-1], filepath.Ext(rel[len(rel)-1]))
		path := append(slices.Clone(rel[:len(rel)-1]), stem)
		names := []string{stem}
		if len(path) > 1 {
			names = append(names, strings.Join(path, ":"), strings.Join(path, "/"))
		}
		return true, s.add(p, k, scope, names, p)
	})
}

// skills adds each directory below dir holding SKILL.md.
func (s *defSearch) skills(dir string, scope DefinitionScope) error {
	return walkDefs(dir, func(p string, rel []string, isDir bool) (bool, error) {
		if !isDir {
			return true, nil
		}
		md := filepath.Join(p, "SKILL.md")
		if fi, err := os.Stat(md); err != nil || !fi.Mode().IsRegular() {
			return true, nil
		}
		names := []string{rel[len(rel)-1]}
		if len(rel) > 1 {
			names = append(names, strings.Join(rel, ":"), strings.Join(rel, "/"))
		}
		return true, s.add(p, DefinitionSkill, scope, names, md)
	})
}

// add records the definition at p, its names read from the file md.
func (s *defSearch) add(p string, k DefinitionKind, scope DefinitionScope, names []string, md string) error {
	key := string(k) + "\x00" + realPath(p)
	if s.seen == nil {
		s.seen = map[string]bool{}
	}
	if s.seen[key] {
		return nil
	}
	s.seen[key] = true
	d := Definition{Kind: k, Scope: scope, Path: p, Rel: p}
	if s.insideWS(p) {
		if rel, err := filepath.Rel(s.ws, p); err == nil && filepath.IsLocal(rel) {
			d.Rel = filepath.ToSlash(rel)
		}
		d.NeedsTrust = true
	}
	if scope == DefinitionProject || scope == DefinitionNested {
		d.NeedsTrust = true
	}
	data, err := readHead(md, maxDefinitionFile)
	if err != nil {
		return fmt.Errorf("workspace: definition %s: %w", p, err)
	}
	fm, ok, err := frontmatter(data)
	switch {
	case err != nil:
		d.AnyName = k != DefinitionCommand
		d.Runs = append(d.Runs, "unparsed frontmatter")
	case ok:
		if n, _ := fm["name"].(string); n != "" && k != DefinitionCommand {
			names = append(names, n)
		}
		for _, key := range []string{"hooks", "mcpServers"} {
			if v, ok := fm[key]; ok && v != nil {
				d.Runs = append(d.Runs, key)
			}
		}
		if k == DefinitionAgent {
			d.Isolation, _ = fm["isolation"].(string)
			d.Skills = stringList(fm["skills"])
		}
	}
	if k != DefinitionAgent && bytes.Contains(data, []byte("!`")) {
		d.Runs = append(d.Runs, "!`command`")
	}
	for _, n := range names {
		if n = strings.ToLower(strings.TrimSpace(n)); n != "" && !slices.Contains(d.Names, n) {
			d.Names = append(d.Names, n)
		}
	}
	s.out = append(s.out, d)
	return nil
}

// walkDefs calls f for each entry below dir (dir itself excluded), in
// lexical order, following symbolic links (each directory once), with
// its path elements below dir; f's false skips a directory's content. A
// dir that does not exist has nothing.
func walkDefs(dir string, f func(p string, rel []string, isDir bool) (bool, error)) error {
	seen := map[string]bool{}
	var walk func(d string, rel []string) error
	walk = func(d string, rel []string) error {
		if len(rel) > maxDefinitionDepth {
			return fmt.Errorf("workspace: %s: definitions nested too deep", d)
		}
		r := realPath(d)
		if seen[r] {
			return nil
		}
		seen[r] = true
		ents, err := os.ReadDir(d)
		if err != nil {
			if len(rel) == 0 && (errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)) {
				return nil
			}
			return fmt.Errorf("workspace: definitions: %w", err)
		}
		for _, e := range ents {
			p := filepath.Join(d, e.Name())
			sub := append(slices.Clone(rel), e.Name())
			fi, err := os.Stat(p) // through a link
			if err != nil {
				continue // a dangling link loads nothing
			}
			descend, err := f(p, sub, fi.IsDir())
			if err != nil {
				return err
			}
			if fi.IsDir() && descend {
				if err := walk(p, sub); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return walk(dir, nil)
}

// readHead reads at most max bytes of the file at p.
func readHead(p string, max int64) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, max))
}

// frontmatter parses the YAML frontmatter of a Markdown file (between a
// first line "---" and the next "---" line): ok is false when there is
// none; an error when it does not parse as a mapping.
func frontmatter(data []byte) (map[string]any, bool, error) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	s := strings.ReplaceAll(string(data), "\r\n", "\n")
	rest, ok := strings.CutPrefix(s, "---\n")
	if !ok {
		return nil, false, nil
	}
	end := -1
	for i := 0; i < len(rest); {
		j := strings.IndexByte(rest[i:], '\n')
		line := rest[i:]
		if j >= 0 {
			line = rest[i : i+j]
		}
		if strings.TrimRight(line, " \t") == "---" {
			end = i
			break
		}
		if j < 0 {
			break
		}
		i += j + 1
	}
	if end < 0 {
		return nil, true, errors.New("workspace: frontmatter is not closed")
	}
	var m map[string]any
	if err := yaml.Unmarshal([]byte(rest[:end]), &m); err != nil {
		return nil, true, err
	}
	if m == nil {
		m = map[string]any{}
	}
	return m, true, nil
}

// stringList is a frontmatter value that is a string (comma-separated)
// or a list of strings.
func stringList(v any) []string {
	var out []string
	switch x := v.(type) {
	case string:
		for _, s := range strings.Split(x, ",") {
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
	case []any:
		for _, e := range x {
			if s, ok := e.(string); ok && strings.TrimSpace(s) != "" {
				out = append(out, strings.TrimSpace(s))
			}
		}
	}
	return out
}

// DefinitionDigest is the digest of what d's definition holds now:
// sha256 of the file of a subagent or a command; of a skill, sha256 over
// every entry of its directory (names, kinds, contents and link targets,
// links followed). It is what trust records and checks.
func DefinitionDigest(d Definition) (string, error) {
	if d.Kind != DefinitionSkill {
		f, err := os.Open(d.Path)
		if err != nil {
			return "", fmt.Errorf("workspace: definition: %w", err)
		}
		defer f.Close()
		h := sha256.New()
		if n, err := io.Copy(h, io.LimitReader(f, maxSkillBytes+1)); err != nil {
			return "", fmt.Errorf("workspace: definition: %w", err)
		} else if n > maxSkillBytes {
			return "", fmt.Errorf("workspace: definition %s is too large", d.Path)
		}
		return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
	}
	h := sha256.New()
	io.WriteString(h, "norma-skill-v1\n")
	entries, total := 0, int64(0)
	err := walkDefs(d.Path, func(p string, rel []string, isDir bool) (bool, error) {
		if entries++; entries > maxSkillEntries {
			return false, fmt.Errorf("workspace: skill %s has too many files", d.Path)
		}
		name := strings.Join(rel, "/")
		if t, err := os.Readlink(p); err == nil {
			fmt.Fprintf(h, "l %q %q\n", name, t)
		}
		if isDir {
			fmt.Fprintf(h, "d %q\n", name)
			return true, nil
		}
		f, err := os.Open(p)
		if err != nil {
			return false, fmt.Errorf("workspace: skill: %w", err)
		}
		defer f.Close()
		fh := sha256.New()
		n, err := io.Copy(fh, io.LimitReader(f, maxSkillBytes-total+1))
		if err != nil {
			return false, fmt.Errorf("workspace: skill: %w", err)
		}
		if total += n; total > maxSkillBytes {
			return false, fmt.Errorf("workspace: skill %s is too large", d.Path)
		}
		fmt.Fprintf(h, "f %q %x\n", name, fh.Sum(nil))
		return true, nil
	})
	if err != nil {
		return "", err
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

// DefinitionTrustFile is where the accepted definitions are recorded,
// under Norma's state directory.
const DefinitionTrustFile = "definitions-trust.json"

// DefinitionTrust records the definitions the user accepted, by kind,
// path and digest, in a JSON file under the state directory. Every call
// reads the file again, so an acceptance in another process counts at
// once. It is safe for concurrent use within a process; across processes
// the last writer of the whole file wins.
type DefinitionTrust struct {
	path string
	mu   sync.Mutex
}

type defTrustFile struct {
	Version     int                    `json:"version"`
	Definitions map[string]acceptedDef `json:"definitions"`
}

type acceptedDef struct {
	Digest string    `json:"digest"`
	At     time.Time `json:"at"`
}

// OpenDefinitionTrust returns the record of the state directory home; the
// file need not exist yet.
func OpenDefinitionTrust(home string) (*DefinitionTrust, error) {
	if home == "" {
		return nil, errors.New("workspace: no state directory to record trusted definitions in")
	}
	p, err := filepath.Abs(filepath.Join(home, DefinitionTrustFile))
	if err != nil {
		return nil, err
	}
	return &DefinitionTrust{path: p}, nil
}

// DefinitionState is what the record says of a definition.
type DefinitionState int

const (
	// DefinitionNotTrusted: never accepted (the zero value).
	DefinitionNotTrusted DefinitionState = iota
	// DefinitionChanged: accepted, with another content.
	DefinitionChanged
	// DefinitionTrusted: accepted with the content it holds now.
	DefinitionTrusted
)

func (s DefinitionState) String() string {
	switch s {
	case DefinitionNotTrusted:
		return "not trusted"
	case DefinitionChanged:
		return "changed since trusted"
	case DefinitionTrusted:
		return "trusted"
	}
	return fmt.Sprintf("unknown(%d)", int(s))
}

// defKey is the identity of d in the record: its kind and path, the
// directory's symbolic links resolved (a definition is the file at that
// place; its content is the digest's).
func defKey(d Definition) string {
	return string(d.Kind) + ":" + filepath.Join(realPath(filepath.Dir(d.Path)), filepath.Base(d.Path))
}

func (t *DefinitionTrust) load() (defTrustFile, error) {
	tf := defTrustFile{Version: 1}
	switch err := atomicfile.ReadJSON(t.path, 1, &tf); {
	case errors.Is(err, atomicfile.ErrCorrupt):
		return tf, fmt.Errorf("runtime: definition trust file %s is corrupt", t.path)
	case err != nil:
		return tf, fmt.Errorf("runtime: definition trust: %w", err)
	}
	if tf.Definitions == nil {
		tf.Definitions = map[string]acceptedDef{}
	}
	return tf, nil
}

// State returns what the record says of d as it is now. An error (the
// record or the definition cannot be read) is for the caller to refuse
// on.
func (t *DefinitionTrust) State(d Definition) (DefinitionState, error) {
	t.mu.Lock()
	tf, err := t.load()
	t.mu.Unlock()
	if err != nil {
		return DefinitionNotTrusted, err
	}
	acc, ok := tf.Definitions[defKey(d)]
	if !ok {
		return DefinitionNotTrusted, nil
	}
	cur, err := DefinitionDigest(d)
	if err != nil {
		return DefinitionNotTrusted, err
	}
	if cur != acc.Digest {
		return DefinitionChanged, nil
	}
	return DefinitionTrusted, nil
}

// Trust records the content d holds now as accepted, and returns its
// digest.
func (t *DefinitionTrust) Trust(d Definition) (string, error) {
	dg, err := DefinitionDigest(d)
	if err != nil {
		return "", err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	tf, err := t.load()
	if err != nil {
		return "", err
	}
	tf.Definitions[defKey(d)] = acceptedDef{Digest: dg, At: time.Now().UTC()}
	b, err := json.MarshalIndent(tf, "", "  ")
	if err != nil {
		return "", err
	}
	if err := atomicfile.Write(t.path, b, 0o600); err != nil {
		return "", fmt.Errorf("workspace: definition trust: %w", err)
	}
	return dg, nil
}
