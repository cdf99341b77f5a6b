package agenthook

import (
	"encoding/json"
	"path/filepath"
	"strings"

	"github.com/norma-run/norma/runtime"
)

// claudeInert are Claude Code's tools with no effect outside the agent's
// own state: planning and todo lists, questions to the user, reading back
// or stopping the agent's own background shells (starting one is Bash,
// decided), and listing the MCP resources of servers whose tools are
// decided by name. Subagents, skills and commands are not among them:
// what starts them is decided by their definition (claudeLaunches).
var claudeInert = map[string]bool{
	"TodoWrite": true, "ExitPlanMode": true, "EnterPlanMode": true,
	"AskUserQuestion": true, "BashOutput": true, "KillShell": true, "TaskOutput": true, "TaskStop": true,
	"TaskCreate": true, "TaskGet": true, "TaskUpdate": true, "TaskList": true, "ListMcpResourcesTool": true,
}

// claudeTools map a Claude Code tool's input onto the input of Norma's
// built-in tool of the same purpose (tools/files.go, tools/glob.go,
// tools/grep.go, tools/web.go, tools/search.go, tools/shell/bash.go), so
// that the gate decides it as it decides its own: the same schema, the
// same capability requests. Only what the decision depends on is carried
// over; options that change the output and not what is reached are left
// out. Paths are made workspace paths (see wsPath); the gate resolves
// them, symlinks included.
var claudeTools = map[string]func(ws *wsPaths, in map[string]any) (string, map[string]any){
	"Read": func(ws *wsPaths, in map[string]any) (string, map[string]any) {
		out := map[string]any{"path": ws.path(in["file_path"])}
		positive(out, "offset", in["offset"])
		positive(out, "limit", in["limit"])
		return "Read", out
	},
	"Write": func(ws *wsPaths, in map[string]any) (string, map[string]any) {
		return "Write", map[string]any{"path": ws.path(in["file_path"]), "content": in["content"]}
	},
	"Edit": func(ws *wsPaths, in map[string]any) (string, map[string]any) {
		// An empty old_string creates the file: a Write of new_string.
		if s, _ := in["old_string"].(string); s == "" {
			return "Write", map[string]any{"path": ws.path(in["file_path"]), "content": in["new_string"]}
		}
		out := map[string]any{"path": ws.path(in["file_path"]), "old_string": in["old_string"], "new_string": in["new_string"]}
		if b, ok := in["replace_all"].(bool); ok {
			out["replace_all"] = b
		}
		return "Edit", out
	},
	"MultiEdit": func(ws *wsPaths, in map[string]any) (string, map[string]any) {
		return "MultiEdit", map[string]any{"path": ws.path(in["file_path"]), "edits": in["edits"]}
	},
	"NotebookEdit": func(ws *wsPaths, in map[string]any) (string, map[string]any) {
		// A notebook cell edit rewrites the notebook file: decided as a
		// write of it.
		content, _ := in["new_source"].(string)
		return "Write", map[string]any{"path": ws.path(in["notebook_path"]), "content": content}
	},
	"Glob": func(ws *wsPaths, in map[string]any) (string, map[string]any) {
		out := map[string]any{"pattern": ws.pattern(in["pattern"])}
		optional(out, "path", ws, in["path"])
		return "Glob", out
	},
	"Grep": func(ws *wsPaths, in map[string]any) (string, map[string]any) {
		out := map[string]any{"pattern": in["pattern"]}
		optional(out, "path", ws, in["path"])
		if g, ok := in["glob"].(string); ok && g != "" {
			out["include"] = []any{g}
		}
		return "Grep", out
	},
	"LS": func(ws *wsPaths, in map[string]any) (string, map[string]any) {
		out := map[string]any{}
		optional(out, "path", ws, in["path"])
		if ig, ok := in["ignore"].([]any); ok {
			out["ignore"] = ig
		}
		return "LS", out
	},
	"Bash": func(_ *wsPaths, in map[string]any) (string, map[string]any) {
		out := map[string]any{"command": in["command"]}
		positive(out, "timeout_ms", in["timeout"])
		if b, ok := in["run_in_background"].(bool); ok {
			out["run_in_background"] = b
		}
		if d, ok := in["description"].(string); ok && d != "" && len(d) <= 200 {
			out["description"] = d
		}
		return "Bash", out
	},
	"WebFetch": func(_ *wsPaths, in map[string]any) (string, map[string]any) {
		return "WebFetch", map[string]any{"url": in["url"]}
	},
	"WebSearch": func(_ *wsPaths, in map[string]any) (string, map[string]any) {
		return "WebSearch", map[string]any{"query": in["query"]}
	},
}

// claudeCall maps one Claude Code tool call to a Norma call: a built-in
// tool by claudeTools, mcp__SERVER__TOOL as the installed plugin's tool of
// that name (Norma names plugin tools the same way), an inert tool as
// none (inert true), a tool that starts a definition (claudeLaunches) as
// none, inert once its input reads (the engine decides the definition
// first), and any other tool as none: the decider refuses it unless the
// user's rules name it.
func claudeCall(cwd, name string, input json.RawMessage) (call *Call, inert bool, err error) {
	if strings.HasPrefix(name, "mcp__") {
		return &Call{Tool: name, Input: input}, false, nil
	}
	if claudeInert[name] {
		return nil, true, nil
	}
	if _, ok, err := claudeLaunchOf(name, input); ok {
		// Decided by its definition first (Engine.definition); then, with
		// no effect of its own outside the agent, as an inert tool: the
		// subagent's own calls meet the hooks too.
		return nil, err == nil, err
	}
	m, ok := claudeTools[name]
	if !ok {
		return nil, false, nil
	}
	var in map[string]any
	d := json.NewDecoder(strings.NewReader(string(input)))
	d.UseNumber()
	if err := d.Decode(&in); err != nil || in == nil {
		return nil, false, invalid("the %s tool_input is not a JSON object", name)
	}
	tool, out := m(&wsPaths{cwd: cwd}, in)
	b, err := json.Marshal(out)
	if err != nil {
		return nil, false, invalid("the %s tool_input cannot be mapped", name)
	}
	return &Call{Tool: tool, Input: b}, false, nil
}

// claudeLaunch is a call of one of Claude Code's tools that start a
// definition by name.
type claudeLaunch struct {
	// What says what is started, for messages: subagent, skill, command.
	What string
	// Kinds are the kinds of definition the name is looked up among: a
	// skill's name may be a command's (Claude Code 2.1 serves both by the
	// Skill tool; a skill of a name shadows a command of it).
	Kinds []runtime.DefinitionKind
	// Name is the name as the agent looks it up: trimmed, without a
	// leading slash.
	Name string
	// Worktree says the input asks for isolation "worktree": the agent
	// runs `git worktree add` on the host before the subagent starts.
	Worktree bool
}

// claudeLaunches read the definition a call starts from its tool_input, as
// Claude Code 2.1.332 reads it (sdk-tools.d.ts AgentInput; the Skill
// tool's schema {skill, args} and its validateInput, which trims the name
// and drops one leading "/"; the SlashCommand tool of Claude Code 2.0,
// {command: "/name args"}).
var claudeLaunches = map[string]func(in map[string]any) (claudeLaunch, error){
	"Agent": claudeAgentLaunch,
	"Task":  claudeAgentLaunch,
	"Skill": func(in map[string]any) (claudeLaunch, error) {
		s, ok := in["skill"].(string)
		name := strings.TrimPrefix(strings.TrimSpace(s), "/")
		if !ok || name == "" {
			return claudeLaunch{}, invalid("the Skill tool_input has no skill name")
		}
		return claudeLaunch{What: "skill", Kinds: []runtime.DefinitionKind{runtime.DefinitionSkill, runtime.DefinitionCommand}, Name: name}, nil
	},
	"SlashCommand": func(in map[string]any) (claudeLaunch, error) {
		s, ok := in["command"].(string)
		f := strings.Fields(s)
		if !ok || len(f) == 0 || strings.TrimPrefix(f[0], "/") == "" {
			return claudeLaunch{}, invalid("the SlashCommand tool_input has no command")
		}
		return claudeLaunch{What: "command", Kinds: []runtime.DefinitionKind{runtime.DefinitionSkill, runtime.DefinitionCommand}, Name: strings.TrimPrefix(f[0], "/")}, nil
	},
}

// claudeAgentLaunch reads an Agent (or Task) call: subagent_type, by
// default general-purpose, and isolation, which Claude Code accepts as
// "worktree" or "remote" (a remote agent runs nothing on this host).
func claudeAgentLaunch(in map[string]any) (claudeLaunch, error) {
	st := claudeLaunch{What: "subagent", Kinds: []runtime.DefinitionKind{runtime.DefinitionAgent}, Name: "general-purpose"}
	if v, ok := in["subagent_type"]; ok && v != nil {
		s, ok := v.(string)
		if !ok {
			return claudeLaunch{}, invalid("the Agent tool_input's subagent_type is not a string")
		}
		if s = strings.TrimSpace(s); s != "" {
			st.Name = s
		}
	}
	if v, ok := in["isolation"]; ok && v != nil {
		switch v {
		case "worktree":
			st.Worktree = true
		case "remote", "":
		default:
			return claudeLaunch{}, invalid("the Agent tool_input's isolation %v is not one Norma knows", v)
		}
	}
	return st, nil
}

// claudeLaunchOf returns the start of a call of tool name, ok false when
// the tool starts no definition; an input it cannot read is an error.
func claudeLaunchOf(name string, input json.RawMessage) (st claudeLaunch, ok bool, err error) {
	f, ok := claudeLaunches[name]
	if !ok {
		return claudeLaunch{}, false, nil
	}
	var in map[string]any
	if err := json.Unmarshal(input, &in); err != nil || in == nil {
		return claudeLaunch{}, true, invalid("the %s tool_input is not a JSON object", name)
	}
	st, err = f(in)
	return st, true, err
}

// wsPaths makes the agent's paths workspace paths.
type wsPaths struct {
	cwd  string
	real string // cwd with its symlinks resolved, on first use
}

// path is p as Norma's tools take it: an absolute path inside the
// workspace (cwd, or cwd with its symlinks resolved) becomes
// workspace-relative; a relative path is already relative to cwd; any
// other value is passed on as it is — an absolute path outside the
// workspace, a path with symlinks out of it, a value of the wrong type —
// for the gate to refuse with its own reason code. This is a change of
// notation only, lexical: whether the path may be reached is the file
// guard's to decide, after resolving symlinks.
//
// The one exception is "..": the agent hands its path to the kernel,
// which applies ".." to the directory a symbolic link leads to, while
// the file guard reads it lexically. A path with ".." is first made
// physical (see physical), so that ws/link/../x is decided as what the
// agent reaches, not as ws/x.
func (w *wsPaths) path(v any) any {
	p, ok := v.(string)
	if !ok {
		return v
	}
	if hasDotDot(p) {
		if !filepath.IsAbs(p) {
			p = w.cwd + string(filepath.Separator) + p // not Join: it cleans
		}
		p = physical(p)
	} else if !filepath.IsAbs(p) {
		return v
	}
	if rel, ok := inside(w.cwd, p); ok {
		return rel
	}
	if w.real == "" {
		if r, err := filepath.EvalSymlinks(w.cwd); err == nil {
			w.real = r
		} else {
			w.real = w.cwd
		}
	}
	if rel, ok := inside(w.real, p); ok {
		return rel
	}
	return p
}

// hasDotDot reports whether p has a ".." element.
func hasDotDot(p string) bool {
	for _, e := range strings.Split(filepath.ToSlash(p), "/") {
		if e == ".." {
			return true
		}
	}
	return false
}

// physical is the absolute path p with each ".." applied as the kernel
// applies it: to the directory its prefix leads to, symbolic links
// followed. A prefix that does not resolve (it does not exist) is taken
// as it stands: the agent's call then fails there, whatever Norma
// decides. Elements other than ".." are left as they are, links
// included, for the file guard to resolve.
func physical(p string) string {
	cur := string(filepath.Separator)
	for _, e := range strings.Split(filepath.ToSlash(p), "/") {
		switch e {
		case "", ".":
		case "..":
			if r, err := filepath.EvalSymlinks(cur); err == nil {
				cur = r
			}
			cur = filepath.Dir(cur)
		default:
			cur = filepath.Join(cur, e)
		}
	}
	return cur
}

// pattern is a glob pattern with an absolute prefix inside the workspace
// made relative, as path does.
func (w *wsPaths) pattern(v any) any {
	if p, ok := v.(string); ok && filepath.IsAbs(p) {
		if rel, ok := w.path(p).(string); ok && !filepath.IsAbs(rel) {
			return rel
		}
	}
	return v
}

func inside(base, p string) (string, bool) {
	rel, err := filepath.Rel(base, filepath.Clean(p))
	if err != nil || !(rel == "." || filepath.IsLocal(rel)) {
		return "", false
	}
	return filepath.ToSlash(rel), true
}

// optional sets out[key] to the workspace path of v when v is given.
func optional(out map[string]any, key string, ws *wsPaths, v any) {
	if v == nil {
		return
	}
	if s, ok := v.(string); ok && s == "" {
		return
	}
	out[key] = ws.path(v)
}

// positive sets out[key] to v when v is a positive integer (Claude Code
// sends 0 or nothing for "not given", which Norma's schemas reject).
func positive(out map[string]any, key string, v any) {
	n, ok := v.(json.Number)
	if !ok {
		return
	}
	if i, err := n.Int64(); err == nil && i > 0 {
		out[key] = i
	}
}
