package policy

import (
	"slices"
	"strings"
	"unicode"

	"github.com/norma-run/norma/capability"
)

// MaxRuleLen bounds a rule [RulesFor] derives, in bytes: a rule a person
// is asked to remember must fit on a prompt.
const MaxRuleLen = 512

// maxDerived bounds how many rules one call may need.
const maxDerived = 4

// RulesFor derives the allow rules that cover exactly one call: tool with
// its normalized requests reqs (as the gate computes them, every effect of
// the call known). It is the one derivation behind "yes for this session"
// and "always": the rules allow a later call that makes the same requests
// (or some of them) and nothing else — another path, another argv, another
// host stays refused.
//
//	mcp__plugin__tool           a plugin tool, by its exact name
//	Read(p), Write(p), Edit(p)  each file read and write, at its exact path
//	                            (./p for a file at the workspace root)
//	Bash(w1 w2 ...)             one process, its exact argv (no :*)
//	WebFetch(domain:host)       GET or HEAD requests, to their exact host
//
// ok is false when no exact rule can express the call: a built-in tool
// that declares nothing, a command line that runs several programs (a
// pipeline, a wrapper, a path that is also a base name), a process mixed
// with other requests, an external write or a secret, a method other than
// GET or HEAD, a word or path holding a pattern character or white space,
// or a rule longer than [MaxRuleLen]. An effect the gate could not know
// (an unparseable command) must not reach RulesFor: the caller asks only
// for calls whose every effect is in reqs.
//
// Limits, stated plainly: the rule syntax does not name a URL path, a
// port, a scheme or a method, so a WebFetch rule admits other pages of the
// same host (the network policy still decides each request); and a plugin
// tool's name rule admits every input of that tool (its plugin's own
// per-action approvals still apply).
func RulesFor(tool string, reqs []capability.Request) ([]string, bool) {
	var out []string
	switch {
	case strings.HasPrefix(tool, "mcp__"):
		if !exactPluginTool(tool) {
			return nil, false
		}
		out = []string{tool}
	case len(reqs) == 0:
		return nil, false
	default:
		for i := range reqs {
			if reqs[i].Kind == capability.ProcessSpawn && len(reqs) != 1 {
				return nil, false
			}
			r, ok := ruleFor(tool, &reqs[i])
			if !ok {
				return nil, false
			}
			if !slices.Contains(out, r) {
				out = append(out, r)
			}
		}
	}
	if len(out) > maxDerived {
		return nil, false
	}
	// Belt and braces: every rule parses to itself, and together they
	// cover the call.
	for _, r := range out {
		if len(r) > MaxRuleLen {
			return nil, false
		}
	}
	set, err := CompileRules(Rules{Allow: out})
	if err != nil {
		return nil, false
	}
	if _, ok := set.Allow(tool, reqs, true); !ok {
		return nil, false
	}
	return out, true
}

// exactPluginTool reports whether name parses as a rule naming that one
// tool: mcp__plugin__tool, not the plugin-wide mcp__plugin or
// mcp__plugin__*.
func exactPluginTool(name string) bool {
	if strings.Count(name, "__") < 2 || strings.HasSuffix(name, "__") {
		return false
	}
	r, err := parseRule(name)
	return err == nil && r.kind == ruleName && r.name == name
}

// ruleFor is the exact rule of one request.
func ruleFor(tool string, req *capability.Request) (string, bool) {
	switch req.Kind {
	case capability.FSRead, capability.FSWrite:
		p := req.Path
		if !literalPath(p) {
			return "", false
		}
		verb := "Read"
		if req.Kind == capability.FSWrite {
			verb = "Write"
			if tool == "Edit" || tool == "MultiEdit" {
				verb = "Edit"
			}
		}
		if !strings.Contains(p, "/") {
			// A name without a slash matches at any depth (gitignore);
			// ./ anchors it at the workspace root.
			p = "./" + p
		}
		return verb + "(" + p + ")", true
	case capability.ProcessSpawn:
		if len(req.Argv) == 0 {
			return "", false
		}
		for _, w := range req.Argv {
			if !literalWord(w) {
				return "", false
			}
		}
		return "Bash(" + strings.Join(req.Argv, " ") + ")", true
	case capability.NetRequest:
		if req.Method != "GET" && req.Method != "HEAD" {
			return "", false
		}
		h := originHost(req.Origin)
		if h == "" || strings.ContainsAny(h, "/:@ *[]") || strings.HasSuffix(h, ".") || h != strings.ToLower(h) {
			return "", false
		}
		return "WebFetch(domain:" + h + ")", true
	}
	return "", false
}

// literalPath reports whether p, a normalized workspace-relative path,
// reads as itself in a path rule: no glob syntax, no escape, no white space
// at either end, not absolute and no scheme.
func literalPath(p string) bool {
	if p == "" || p == "." || strings.HasPrefix(p, "/") || strings.HasPrefix(p, "./") || strings.Contains(p, "://") {
		return false
	}
	if strings.ContainsAny(p, "*?[]{}\\!\x00") || strings.TrimSpace(p) != p {
		return false
	}
	for _, c := range p {
		if unicode.IsControl(c) {
			return false
		}
	}
	return true
}

// literalWord reports whether w is one word of a command rule as written:
// no white space, no character the rule syntax refuses, not computed.
func literalWord(w string) bool {
	if w == "" || strings.ContainsAny(w, "*?$`'\"\\;|&<>()\x00") {
		return false
	}
	for _, c := range w {
		if unicode.IsSpace(c) || unicode.IsControl(c) {
			return false
		}
	}
	return true
}
