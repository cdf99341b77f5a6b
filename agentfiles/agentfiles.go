package agentfiles

import (
	"path"
	"slices"
	"strings"
	"unicode/utf8"
)

// Class is what a file does when its agent or tool loads it.
type Class uint8

const (
	// Code files run on the host, or name what runs there (hooks, MCP
	// servers, tasks, git's fsmonitor): no tool and no confined process
	// may write them.
	Code Class = iota + 1
	// Instructions steer every later session of an agent (CLAUDE.md,
	// AGENTS.md): a write asks, with the diff, in every mode.
	Instructions
)

func (c Class) String() string {
	switch c {
	case Code:
		return "code"
	case Instructions:
		return "instructions"
	}
	return "none"
}

// Scope says where an entry's names live.
type Scope uint8

const (
	// Project names are relative to the workspace (at its root, or at
	// any depth for a glob starting with **/).
	Project Scope = iota + 1
	// User names are relative to the user's home directory: they are
	// matched in a workspace that contains $HOME.
	User
)

// Entry is one kind of file of the catalogue.
type Entry struct {
	// Glob is the slash-separated doublestar glob of the names, relative
	// to the workspace (Project) or the home directory (User); matched
	// with case folded.
	Glob  string
	Class Class
	Scope Scope
	// Agent is the program that loads it.
	Agent string
	// Loads says what the program takes from it and when.
	Loads string
	// Checked is the program and version the entry was checked against.
	Checked string
}

// Versions the entries were checked against.
const (
	claude = "Claude Code 2.1.332"
	codex  = "Codex 0.171.0"
	gemini = "Gemini CLI 0.61.0"
	cursor = "Cursor 2.4"
	vscode = "VS Code 1.106"
	git    = "git 2.39.5"
	direnv = "direnv 2.32"
	norma  = "Norma (this module)"
)

// catalogue is the list; Catalogue returns a copy. Not in it, and why:
// .gitattributes and .gitmodules only select what git's config defines
// (a filter or diff driver; git 2.39 ignores update = !cmd and refuses the
// ext:: transport from .gitmodules), and that config is in it.
var catalogue = []Entry{
	{".claude/settings.json", Code, Project, "Claude Code", "hooks, MCP servers, permissions and env of every session in the project, reloaded while a session runs", claude},
	{".claude/settings.local.json", Code, Project, "Claude Code", "as settings.json, the user's own project settings; a new file is loaded at once", claude},
	{".claude/agents/**", Code, Project, "Claude Code", "subagent definitions: frontmatter hooks and mcpServers run when the subagent starts", claude},
	{".claude/skills/**", Code, Project, "Claude Code", "skills: instructions and scripts a skill runs, loaded when the model invokes it", claude},
	{".claude/commands/**", Code, Project, "Claude Code", "slash commands: !`command` lines run when the command is used", claude},
	{".claude/hooks/**", Code, Project, "Claude Code", "hook scripts the settings name", claude},
	{".claude/output-styles/**", Instructions, Project, "Claude Code", "output styles replace the system prompt", claude},
	{".mcp.json", Code, Project, "Claude Code", "project MCP servers, started at session start once enabled", claude},
	{".codex/**", Code, Project, "Codex", "config.toml (MCP servers, notify, profiles) and hooks.json of a trusted project", codex},
	{".gemini/**", Code, Project, "Gemini CLI", "settings.json (hooks, MCP servers, tool discovery commands), commands/ and extensions/", gemini},
	{".cursor/**", Code, Project, "Cursor", "mcp.json (MCP servers), hooks.json, rules/", cursor},
	{".vscode/tasks.json", Code, Project, "VS Code", "tasks, run on folder open where automatic tasks are allowed", vscode},
	{".vscode/settings.json", Code, Project, "VS Code", "settings that name programs (terminal profiles, formatters, git paths)", vscode},
	{".vscode/launch.json", Code, Project, "VS Code", "launch configurations with preLaunchTask", vscode},
	{".vscode/mcp.json", Code, Project, "VS Code", "MCP servers of the workspace", vscode},
	{".git/config", Code, Project, "git", "core.fsmonitor, core.hooksPath, core.sshCommand, filters, aliases: run by the next git command", git},
	{".git/hooks/**", Code, Project, "git", "hooks run by commit, checkout, merge, push", git},
	{".git/info/**", Code, Project, "git", "info/attributes selects filters and diff drivers that config names", git},
	{".git/**/commondir", Code, Project, "git", "names the directory whose config and hooks git uses instead (a linked worktree's, or one the writer made): read by the next git command", git},
	{".git/**/config.worktree", Code, Project, "git", "config of a worktree, read as .git/config once extensions.worktreeConfig is set (git sparse-checkout sets it)", git},
	{".git/modules/*/config", Code, Project, "git", "a submodule's config, as .git/config", git},
	{".git/modules/*/hooks/**", Code, Project, "git", "a submodule's hooks", git},
	{".envrc", Code, Project, "direnv", "evaluated by the shell on cd once allowed", direnv},
	{".norma/policy.yaml", Code, Project, "Norma", "the workspace policy layer", norma},
	{".norma/settings*.yaml", Code, Project, "Norma", "permission rules, hooks and mode of the workspace", norma},
	{".norma/hooks/**", Code, Project, "Norma", "hook scripts the settings name", norma},
	{"CLAUDE.md", Instructions, Project, "Claude Code", "memory loaded into every session", claude},
	{"CLAUDE.local.md", Instructions, Project, "Claude Code", "the user's own project memory", claude},
	{"**/CLAUDE.md", Instructions, Project, "Claude Code", "memory of a subdirectory, loaded when files there are read", claude},
	{".claude/CLAUDE.md", Instructions, Project, "Claude Code", "project memory", claude},
	{".claude/rules/**", Instructions, Project, "Claude Code", "project rules loaded with memory", claude},
	{"**/AGENTS.md", Instructions, Project, "Codex", "instructions merged into every session", codex},
	{"**/AGENTS.override.md", Instructions, Project, "Codex", "instructions that replace AGENTS.md", codex},
	{"**/GEMINI.md", Instructions, Project, "Gemini CLI", "context loaded into every session", gemini},
	{".cursorrules", Instructions, Project, "Cursor", "rules of every chat", cursor},
	{".github/copilot-instructions.md", Instructions, Project, "VS Code", "Copilot's instructions", vscode},

	{".claude/**", Code, User, "Claude Code", "user settings, agents, skills, commands and hooks of every project", claude},
	{".claude.json", Code, User, "Claude Code", "user and local-scope MCP servers, project trust", claude},
	{".codex/**", Code, User, "Codex", "config.toml, hooks.json and the trust of projects", codex},
	{".gemini/**", Code, User, "Gemini CLI", "user settings, extensions and trusted folders", gemini},
	{".cursor/**", Code, User, "Cursor", "user MCP servers and hooks", cursor},
	{".gitconfig", Code, User, "git", "the user's git config", git},
	{".config/git/**", Code, User, "git", "the user's git config and attributes", git},
	{".config/norma/**", Code, User, "Norma", "the user's Norma settings", norma},
	{".bashrc", Code, User, "bash", "run by every interactive shell", "bash 5.2"},
	{".bash_profile", Code, User, "bash", "run by login shells", "bash 5.2"},
	{".profile", Code, User, "sh", "run by login shells", "bash 5.2"},
	{".zshrc", Code, User, "zsh", "run by every interactive shell", "zsh 5.9"},
	{".ssh/**", Code, User, "ssh", "config (ProxyCommand), authorized_keys, keys", "OpenSSH 9.2"},
}

// Catalogue returns every entry, in a stable order.
func Catalogue() []Entry { return slices.Clone(catalogue) }

// Match is what [Lookup] found: the entry, and the name it matched.
type Match struct {
	Entry
	// Name is the matched name relative to the workspace.
	Name string
}

// Lookup returns the strictest entry that rel names, in a workspace
// whose home directory lies at home (workspace-relative, "." when the
// workspace is $HOME, "" when it does not contain it). rel is a clean,
// slash-separated workspace-relative path ("." for the root); case is
// folded, so that a name spelled otherwise on a case-insensitive disk is
// found. A directory that holds catalogued files (.claude, .git) is not
// itself an entry: creating it creates nothing that runs, and the sandbox
// keeps what is under it.
func Lookup(rel, home string) (Match, bool) {
	name, home := fold(rel), fold(home)
	ns := strings.Split(name, "/")
	var best Match
	found := false
	for i := range compiled {
		c := &compiled[i]
		segs := ns
		if c.Scope == User {
			cand, ok := scoped(name, User, home)
			if !ok {
				continue
			}
			segs = strings.Split(cand, "/")
		}
		if !segsMatch(c.segs, segs) {
			continue
		}
		if !found || c.Class < best.Class {
			best, found = Match{Entry: c.Entry, Name: rel}, true
		}
	}
	return best, found
}

// compiled is the catalogue with each glob folded and split once.
var compiled = func() []compiledEntry {
	out := make([]compiledEntry, len(catalogue))
	for i, e := range catalogue {
		out[i] = compiledEntry{Entry: e, segs: strings.Split(fold(e.Glob), "/")}
	}
	return out
}()

type compiledEntry struct {
	Entry
	segs []string
}

// fold is s with case folded as case-insensitive file systems fold it,
// near enough: upper then lower case, so that ſ (long s) and K (Kelvin)
// meet s and k.
func fold(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return strings.ToLower(strings.ToUpper(s))
		}
	}
	return strings.ToLower(s) // ASCII: one pass, no copy when already lower
}

// scoped is name relative to the scope's base, when it lies inside it.
func scoped(name string, s Scope, home string) (string, bool) {
	if s == Project {
		return name, true
	}
	switch home {
	case "":
		return "", false
	case ".":
		return name, true
	}
	rest, ok := strings.CutPrefix(name, home+"/")
	return rest, ok
}

// globMatch is doublestar's ** on slash paths, without a dependency: the
// catalogue's globs are literal, literal/**, **/literal or literal/*/...;
// path.Match handles each segment.
func globMatch(glob, name string) bool {
	gs, ns := strings.Split(glob, "/"), strings.Split(name, "/")
	return segsMatch(gs, ns)
}

func segsMatch(gs, ns []string) bool {
	for len(gs) > 0 {
		if gs[0] == "**" {
			if len(gs) == 1 {
				return len(ns) > 0
			}
			for i := range len(ns) + 1 {
				if segsMatch(gs[1:], ns[i:]) {
					return true
				}
			}
			return false
		}
		if len(ns) == 0 {
			return false
		}
		if ok, err := path.Match(gs[0], ns[0]); err != nil || !ok {
			return false
		}
		gs, ns = gs[1:], ns[1:]
	}
	return len(ns) == 0
}

// sandboxDirs are the workspace directories a confined process must not
// write into, existing or not: each holds catalogued Code files, and a
// missing one is where a process would create them (mkdir -p .claude).
// The sandbox keeps each read-only, made first when it is missing and its
// parent exists (an empty directory changes nothing an agent loads).
var sandboxDirs = []string{".claude", ".codex", ".gemini", ".cursor", ".vscode", ".git/hooks", ".git/info"}

// sandboxFiles are the catalogued Code files outside sandboxDirs that the
// sandbox keeps read-only when they exist. A missing one cannot be
// pinned without creating it; each is loaded only after a consent of its
// own program (Claude Code's project MCP server prompt, `direnv allow`,
// git's submodule init), and the gate refuses its creation by name.
var sandboxFiles = []string{".git/config", ".mcp.json", ".envrc"}

// SandboxDirs returns the workspace directories the OS sandbox keeps
// read-only (see sandboxDirs), and SandboxFiles the files.
func SandboxDirs() []string  { return slices.Clone(sandboxDirs) }
func SandboxFiles() []string { return slices.Clone(sandboxFiles) }

func (s Scope) String() string {
	switch s {
	case Project:
		return "project"
	case User:
		return "user"
	}
	return "none"
}

// hidden are the catalogued files whose content no tool and no plugin may
// read either, whatever a grant or a policy says: they decide what Norma
// allows (.norma's policy, settings and hooks), or name the hooks and MCP
// servers an agent runs on the host together with their environment,
// where tokens live (an agent under `norma hook` that read or wrote one
// could switch Norma's hook off with disableAllHooks, or point it at a
// state directory of its own with env NORMA_HOME). git's hooks are here
// because a trusted hook calling git would execute them. .git/config is
// not: git cannot work without reading it; the floor refuses writes.
var hidden = []string{
	".norma/policy.yaml", ".norma/settings.yaml", ".norma/settings.local.yaml", ".norma/hooks/**",
	".git/hooks/**",
	".claude/settings.json", ".claude/settings.local.json", ".claude/hooks/**", ".mcp.json",
	".codex/config.toml", ".codex/hooks.json", ".gemini/settings.json",
}

// Hidden returns the workspace globs of the catalogued files that are
// unreadable too (see hidden); each is also a Code entry.
func Hidden() []string { return slices.Clone(hidden) }

// TableRow is e as a row of the README's Markdown table of the catalogue
// (a test keeps the two alike).
func TableRow(e Entry) string {
	return "| " + e.Scope.String() + " | `" + e.Glob + "` | " + e.Class.String() + " | " + e.Agent + " | " +
		strings.ReplaceAll(e.Loads, "|", `\|`) + " | " + e.Checked + " |"
}

// sweepNames are the names that make git or an agent load code once a
// process creates them, and that no mount can keep missing without
// creating them: git's pointers to another config (.git/commondir,
// .git/config.worktree), a new repository (.git, whose config the process
// writes), a bare repository made of the workspace itself (HEAD at its
// root, beside a config), and the root files of SandboxFiles that do not
// exist. The sandbox looks for those missing when a command starts once
// its whole process tree has ended, and moves any that appeared aside.
var sweepNames = []string{".git", ".git/commondir", ".git/config.worktree", "HEAD", ".mcp.json", ".envrc"}

// SweepNames returns the workspace names the sandbox sweeps (see
// sweepNames).
func SweepNames() []string { return slices.Clone(sweepNames) }

// userSandboxDirs and userSandboxFiles are the user-scope counterparts of
// sandboxDirs and sandboxFiles, relative to the home directory: the
// sandbox keeps them as it keeps the project's when the workspace
// contains $HOME (a run in /home, or in $HOME itself).
var (
	userSandboxDirs  = []string{".claude", ".codex", ".gemini", ".cursor", ".config/git", ".ssh"}
	userSandboxFiles = []string{".claude.json", ".gitconfig", ".bashrc", ".bash_profile", ".profile", ".zshrc"}
)

// UserSandboxDirs returns the home-relative directories the sandbox keeps
// read-only when the workspace contains $HOME, and UserSandboxFiles the
// files (also swept when missing, as SweepNames).
func UserSandboxDirs() []string  { return slices.Clone(userSandboxDirs) }
func UserSandboxFiles() []string { return slices.Clone(userSandboxFiles) }
