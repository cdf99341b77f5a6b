package agenthook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strings"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/internal/termtext"
	"github.com/norma-run/norma/runtime"
)

// Starting a subagent, a skill or a command. Claude Code's Agent tool
// (Task before 2.1), Skill tool and SlashCommand tool (Claude Code 2.0)
// start a definition by name; what its frontmatter names runs on the host
// when it starts (a subagent's hooks and mcpServers, a skill's hooks and
// scripts, a command's !`command` lines), with no tool call of its own
// for Norma to decide. So the call is decided by where the definition
// comes from (see runtime.Definitions), before anything else:
//
//	built into Claude Code (no file of the name)   allowed
//	the user's (~/.claude), managed, a plugin      allowed
//	a file of the workspace or the project         allowed once accepted by digest
//	                                               (`norma hooks trust`); else, or
//	                                               changed since: DEFINITION_UNTRUSTED
//	found nowhere                                  DEFINITION_UNKNOWN
//
// Every definition the name may resolve to counts, whatever Claude Code's
// precedence between them: a project file named like a built-in (which
// overrides it) needs trust as well. A subagent's preloaded skills
// (frontmatter skills) are decided the same way. An allowed call then
// goes on as an inert tool (the user's permission rules by name; the
// subagent's own tool calls meet the hooks too), except for isolation
// "worktree" (in the input or the subagent's frontmatter): Claude Code
// runs `git worktree add` on the host first, which the gate decides as
// that Bash command, and anything but an allow of it stands.

// claudeAgents are the subagent types built into Claude Code 2.1.332
// (the built-in agent definitions of its binary, source "built-in"),
// lower-case, with output-style-setup of earlier versions.
var claudeAgents = map[string]bool{
	"general-purpose": true, "explore": true, "plan": true, "statusline-setup": true, "claude-code-guide": true,
	"web-fetch": true, "fork": true, "worker": true, "workflow-subagent": true, "claude": true,
	"comment-thread-analyst": true, "output-style-setup": true,
}

// claudeSkills are the skills and prompt commands built into Claude Code
// 2.1.332 that the Skill tool can start (its bundled skills, and the
// prompt commands documented as built-in), lower-case.
var claudeSkills = map[string]bool{
	"batch": true, "claude-api": true, "claude-in-chrome": true, "debug": true, "doctor": true,
	"fewer-permission-prompts": true, "keybindings-help": true, "run": true, "run-skill-generator": true,
	"update-config": true, "setup-claude": true, "send-to-project": true, "cowork-plugin": true,
	"artifact-design": true, "artifact-diagramming": true, "artifact-capabilities": true, "whiteboard": true,
	"dataviz": true, "design": true, "design-sync": true, "slides": true, "code-review": true, "verify": true,
	"simplify": true, "commit": true, "pr": true, "commit-push-pr": true, "explain-usage": true,
	"security-review": true, "loop": true, "schedule": true, "ship-local": true, "steward": true,
	"workflow-authoring": true, "init": true, "review": true, "pr-comments": true, "insights": true,
	"team-onboarding": true, "statusline": true, "ultrareview": true, "ultraplan": true, "autofix-pr": true,
}

// worktreeCommand is how the gate decides isolation "worktree": Claude
// Code makes the subagent's worktree under .claude/worktrees of the
// repository.
const worktreeCommand = "git worktree add .claude/worktrees/agent"

// ClaudeSources are where Claude Code loads definitions from besides the
// project, in this process's environment: a command hook runs in Claude
// Code's own ($HOME, $CLAUDE_CONFIG_DIR), and so does the daemon started
// by the user. The managed directory is Claude Code's managed settings
// directory of the platform.
func ClaudeSources() runtime.DefinitionSources {
	var src runtime.DefinitionSources
	if h, err := os.UserHomeDir(); err == nil && filepath.IsAbs(h) {
		src.Home = h
	}
	if d := os.Getenv("CLAUDE_CONFIG_DIR"); filepath.IsAbs(d) {
		src.UserDir = d
	} else if src.Home != "" {
		src.UserDir = filepath.Join(src.Home, ".claude")
	}
	src.ManagedDir = "/etc/claude-code"
	if goruntime.GOOS == "darwin" {
		src.ManagedDir = "/Library/Application Support/ClaudeCode"
	}
	return src
}

// definition decides a call of ev that starts a definition (a Claude Code
// Agent, Task, Skill or SlashCommand call): decided is true with the
// verdict when it is refused (or asked, for a worktree); false when the
// call goes on to be decided as an inert tool.
func (e *Engine) definition(ctx context.Context, ev Event, en *rtEntry) (v Verdict, decided bool) {
	if ev.Agent != ClaudeCode {
		return Verdict{}, false
	}
	st, ok, err := claudeLaunchOf(ev.Tool, ev.Input)
	if !ok {
		return Verdict{}, false
	}
	if err != nil {
		return FailVerdict(err), true
	}
	r := &starts{ws: ev.Cwd, src: ClaudeSources(), home: e.o.Home}
	v, worktree := r.decide(st.What, st.Kinds, st.Name, true)
	if v.Decision.Mode == capability.Deny {
		return v, true
	}
	if !worktree && !st.Worktree {
		return Verdict{}, false
	}
	v = e.worktree(ctx, ev, en)
	return v, v.Decision.Mode != capability.Allow
}

// worktree is the gate's decision on the `git worktree add` a subagent
// with isolation "worktree" makes Claude Code run.
func (e *Engine) worktree(ctx context.Context, ev Event, en *rtEntry) Verdict {
	in, _ := json.Marshal(map[string]string{"command": worktreeCommand, "description": "Create the subagent's git worktree"})
	c := &Call{Tool: "Bash", Input: in}
	x, err := en.explain(ctx, c)
	if errors.Is(err, errReplaced) {
		if en, err = e.runtime(ctx, ev); err == nil {
			x, err = en.explain(ctx, c)
		}
	}
	if err != nil {
		return FailVerdict(err)
	}
	d, msg := explained(x)
	return Verdict{Decision: d, Message: "isolation \"worktree\" runs `" + worktreeCommand + "` on the host, decided as that command: " + msg}
}

// starts resolves the definitions of one call.
type starts struct {
	ws    string
	src   runtime.DefinitionSources
	home  string
	trust *runtime.DefinitionTrust
}

// decide decides starting the definition of name among kinds: an allow
// (no objection) or a deny; worktree reports a subagent definition with
// isolation "worktree". preload decides a subagent's preloaded skills too.
func (r *starts) decide(what string, kinds []runtime.DefinitionKind, name string, preload bool) (Verdict, bool) {
	defs, err := runtime.Definitions(r.ws, r.src, kinds...)
	if err != nil {
		return deny(capability.ReasonDefinitionUntrusted, fmt.Sprintf("the definitions the %s %s may come from could not be read (%s), so Norma cannot tell what it would run; it is denied",
			what, quote(name), termtext.Escape(err.Error()))), false
	}
	var found []runtime.Definition
	for _, d := range defs {
		if d.Answers(name) {
			found = append(found, d)
		}
	}
	for _, d := range found {
		if v, bad := r.untrusted(what, name, d); bad {
			return v, false
		}
	}
	worktree := false
	for _, d := range found {
		worktree = worktree || d.Isolation == "worktree"
		if !preload {
			continue
		}
		for _, s := range d.Skills {
			v, _ := r.decide("skill", []runtime.DefinitionKind{runtime.DefinitionSkill, runtime.DefinitionCommand}, s, false)
			if v.Decision.Mode == capability.Deny {
				v.Message = fmt.Sprintf("the %s %s preloads the skill %s: %s", what, quote(name), quote(s), v.Message)
				return v, false
			}
		}
	}
	key := strings.ToLower(name)
	builtin := (what == "subagent" && claudeAgents[key]) || (what != "subagent" && claudeSkills[key])
	if len(found) > 0 || builtin || r.plugin(name) {
		return Verdict{Decision: capability.Decision{Mode: capability.Allow, Reason: capability.ReasonAllowed, Layer: capability.LayerAgent}}, worktree
	}
	return deny(capability.ReasonDefinitionUnknown, fmt.Sprintf("Norma finds no definition of the %s %s: it is not built into Claude Code, and neither the workspace nor the user's or managed configuration nor an installed plugin defines it, so Norma cannot see what it would run; it is denied",
		what, quote(name))), false
}

// untrusted refuses d when it needs trust and does not have it.
func (r *starts) untrusted(what, name string, d runtime.Definition) (Verdict, bool) {
	if !d.NeedsTrust {
		return Verdict{}, false
	}
	state := runtime.DefinitionNotTrusted
	var err error
	if r.trust == nil && r.home != "" {
		r.trust, err = runtime.OpenDefinitionTrust(r.home)
	}
	if err == nil && r.trust != nil {
		state, err = r.trust.State(d)
	}
	if err == nil && state == runtime.DefinitionTrusted {
		return Verdict{}, false
	}
	runs := "its instructions would steer the agent"
	if len(d.Runs) > 0 {
		runs = "what it names (" + strings.Join(d.Runs, ", ") + ") would run on the host"
	}
	why := "whose content the user has not accepted"
	switch {
	case err != nil:
		why = "whose trust cannot be checked (" + termtext.Escape(err.Error()) + ")"
	case state == runtime.DefinitionChanged:
		why = "which changed since the user accepted it"
	}
	v := deny(capability.ReasonDefinitionUntrusted, fmt.Sprintf("the %s %s would start from %s, a file of the project %s; %s. Review it, then accept it with: norma hooks trust --workspace %s",
		what, quote(name), termtext.Escape(d.Rel), why, runs, termtext.Escape(r.ws)))
	v.Decision.Rule = d.Rel
	return v, true
}

// plugin reports whether name is namespaced by a plugin installed in
// Claude's configuration directory (plugins/installed_plugins.json), at
// a path outside the workspace: plugin:agent, plugin:skill.
func (r *starts) plugin(name string) bool {
	prefix, _, ok := strings.Cut(name, ":")
	if !ok || prefix == "" || r.src.UserDir == "" {
		return false
	}
	b, err := os.ReadFile(filepath.Join(r.src.UserDir, "plugins", "installed_plugins.json"))
	if err != nil {
		return false
	}
	var f struct {
		Plugins map[string]json.RawMessage `json:"plugins"`
	}
	if json.Unmarshal(b, &f) != nil {
		return false
	}
	for id, raw := range f.Plugins {
		if p, _, _ := strings.Cut(id, "@"); !strings.EqualFold(p, prefix) {
			continue
		}
		// Version 1 holds one install, version 2 a list of them.
		var one struct {
			InstallPath string `json:"installPath"`
		}
		var list []struct {
			InstallPath string `json:"installPath"`
		}
		paths := []string{}
		if json.Unmarshal(raw, &one) == nil && one.InstallPath != "" {
			paths = append(paths, one.InstallPath)
		} else if json.Unmarshal(raw, &list) == nil {
			for _, l := range list {
				paths = append(paths, l.InstallPath)
			}
		}
		for _, p := range paths {
			if filepath.IsAbs(p) && !within(r.ws, p) {
				return true
			}
		}
	}
	return false
}

// within reports whether p lies inside dir, lexically or with symbolic
// links resolved.
func within(dir, p string) bool {
	if _, ok := inside(dir, p); ok {
		return true
	}
	rd, err1 := filepath.EvalSymlinks(dir)
	rp, err2 := filepath.EvalSymlinks(p)
	if err1 != nil || err2 != nil {
		return false
	}
	_, ok := inside(rd, rp)
	return ok
}

// quote is a name from the agent's input or a file, quoted and escaped.
func quote(s string) string { return termtext.Escape(fmt.Sprintf("%q", s)) }
