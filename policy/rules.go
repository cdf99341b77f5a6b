package policy

import (
	"fmt"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/manifest"
)

// Rules are permission rules in the settings syntax:
//
//	Name                         every call of the tool Name
//	mcp__plugin__tool            the same, for a plugin tool
//	mcp__plugin or mcp__plugin__* every tool of the plugin
//	Read(workspace://docs/**)    fs.read requests whose resolved path matches
//	Write(workspace://out/**)    fs.write requests (Edit(...) is the same)
//	Bash(git status:*)           process.spawn requests whose argv starts with
//	                             the words "git status"
//	Bash(git status)             process.spawn requests of exactly that argv
//	WebFetch(domain:example.com) net.request requests to that host
//	WebFetch(domain:*.example.com) to its subdomains
//
// Argument rules match the normalized capability requests a call declares,
// whichever tool declares them. A call is denied when any of its requests
// (or its name) matches a Deny rule, needs approval when any matches an Ask
// rule, and is allowed by rules when its name matches an Allow rule or every
// one of its requests matches one.
type Rules struct {
	Allow, Ask, Deny []string
}

type ruleKind uint8

const (
	ruleName ruleKind = iota
	rulePlugin
	rulePath
	ruleCommand
	ruleDomain
)

type rule struct {
	text   string
	kind   ruleKind
	name   string          // ruleName; rulePlugin prefix "mcp__plugin__"
	fsKind capability.Kind // rulePath
	glob   string          // rulePath, relative doublestar pattern
	argv   []string        // ruleCommand
	prefix bool            // ruleCommand with :*
	host   string          // ruleDomain, lower-case; leading "*." for subdomains
}

type ruleSet []rule

// RuleSet is a compiled [Rules]. Its methods answer with the text of the
// matching rule, as written, for the Decision's Rule field. A nil RuleSet
// holds no rules. A RuleSet is immutable and safe for concurrent use.
type RuleSet struct{ allow, ask, deny ruleSet }

// CompileRules parses every rule of r. The error names the list, the index
// and the text of the first rule that does not parse.
func CompileRules(r Rules) (*RuleSet, error) {
	c := new(RuleSet)
	var err error
	if c.allow, err = compileRuleList("allow", r.Allow); err != nil {
		return nil, err
	}
	if c.ask, err = compileRuleList("ask", r.Ask); err != nil {
		return nil, err
	}
	if c.deny, err = compileRuleList("deny", r.Deny); err != nil {
		return nil, err
	}
	return c, nil
}

// Deny returns the first deny rule matching the tool by name or any of
// reqs. tool "" matches no name rule.
func (s *RuleSet) Deny(tool string, reqs []capability.Request) (rule string, ok bool) {
	if s == nil {
		return "", false
	}
	return found(s.deny.any(tool, reqs))
}

// Ask returns the first ask rule matching the tool by name or any of reqs.
func (s *RuleSet) Ask(tool string, reqs []capability.Request) (rule string, ok bool) {
	if s == nil {
		return "", false
	}
	return found(s.ask.any(tool, reqs))
}

// Allow returns an allow rule covering the call: one matching the tool by
// name, or, when known (reqs are every effect of the call) and every
// request is matched by some allow rule, the rule matching the first one.
func (s *RuleSet) Allow(tool string, reqs []capability.Request, known bool) (rule string, ok bool) {
	if s == nil {
		return "", false
	}
	return found(s.allow.covers(tool, reqs, known))
}

func found(r *rule) (string, bool) {
	if r == nil {
		return "", false
	}
	return r.text, true
}

func compileRuleList(list string, texts []string) (ruleSet, error) {
	out := make(ruleSet, 0, len(texts))
	for i, t := range texts {
		r, err := parseRule(t)
		if err != nil {
			return nil, fmt.Errorf("policy: rules.%s[%d] %q: %w", list, i, t, err)
		}
		out = append(out, r)
	}
	return out, nil
}

func parseRule(t string) (rule, error) {
	r := rule{text: t}
	name, arg, hasArg := strings.Cut(t, "(")
	if hasArg {
		if !strings.HasSuffix(arg, ")") {
			return r, fmt.Errorf("missing ')'")
		}
		arg = strings.TrimSuffix(arg, ")")
	}
	name = strings.TrimSpace(name)
	if name == "" {
		return r, fmt.Errorf("empty tool name")
	}
	if !hasArg {
		if p, ok := strings.CutSuffix(name, "__*"); ok && strings.HasPrefix(name, "mcp__") {
			r.kind, r.name = rulePlugin, p+"__"
			return r, nil
		}
		if strings.HasPrefix(name, "mcp__") && strings.Count(name, "__") == 1 {
			r.kind, r.name = rulePlugin, name+"__"
			return r, nil
		}
		if strings.ContainsAny(name, "*?[ ") {
			return r, fmt.Errorf("a tool name rule cannot hold wildcards")
		}
		r.kind, r.name = ruleName, name
		return r, nil
	}
	arg = strings.TrimSpace(arg)
	if arg == "" {
		return r, fmt.Errorf("empty argument pattern")
	}
	switch name {
	case "Read", "Write", "Edit":
		r.kind, r.fsKind = rulePath, capability.FSRead
		if name != "Read" {
			r.fsKind = capability.FSWrite
		}
		// Claude Code reads ~ as the home directory and $X as a variable;
		// here a path rule is relative to the workspace, and such a rule
		// would name a directory of that name (a deny that protects
		// nothing).
		if strings.HasPrefix(arg, "~") {
			return r, fmt.Errorf("path rules are relative to the workspace: ~ does not name the home directory")
		}
		if strings.HasPrefix(arg, "$") {
			return r, fmt.Errorf("path rules are relative to the workspace: variables such as $HOME are not expanded")
		}
		g := arg
		if !strings.HasPrefix(g, manifest.WorkspaceScheme) {
			g = manifest.WorkspaceScheme + strings.TrimPrefix(g, "./")
		}
		n, err := manifest.NormalizeGlob(g)
		if err != nil {
			return r, err
		}
		r.glob = strings.TrimPrefix(n, manifest.WorkspaceScheme)
	case "Bash":
		r.kind = ruleCommand
		cmd, prefix := strings.CutSuffix(arg, ":*")
		r.prefix = prefix
		r.argv = strings.Fields(cmd)
		if len(r.argv) == 0 {
			return r, fmt.Errorf("empty command")
		}
		for _, w := range r.argv {
			if strings.ContainsAny(w, "*?$`'\"\\;|&<>()") {
				return r, fmt.Errorf("a command rule takes literal words (and an optional :* suffix)")
			}
		}
	case "WebFetch":
		h, ok := strings.CutPrefix(arg, "domain:")
		if !ok || h == "" || strings.ContainsAny(h, "/:@ ") || strings.Contains(h[1:], "*") {
			return r, fmt.Errorf("want domain:HOST or domain:*.HOST")
		}
		if strings.HasPrefix(h, "*") && !strings.HasPrefix(h, "*.") {
			return r, fmt.Errorf("want domain:HOST or domain:*.HOST")
		}
		r.kind, r.host = ruleDomain, strings.ToLower(strings.TrimSuffix(h, "."))
	default:
		return r, fmt.Errorf("tool %s takes no argument pattern (known: Read, Write, Edit, Bash, WebFetch)", name)
	}
	return r, nil
}

// matchName reports whether the rule matches the tool by name.
func (r *rule) matchName(tool string) bool {
	switch r.kind {
	case ruleName:
		return r.name == tool
	case rulePlugin:
		return strings.HasPrefix(tool, r.name)
	}
	return false
}

// matchRequest reports whether an argument rule matches req.
func (r *rule) matchRequest(req *capability.Request) bool {
	switch r.kind {
	case rulePath:
		if req.Kind != r.fsKind {
			return false
		}
		ok, _ := doublestar.Match(r.glob, req.Path)
		return ok
	case ruleCommand:
		if req.Kind != capability.ProcessSpawn {
			return false
		}
		if len(req.Argv) < len(r.argv) || (!r.prefix && len(req.Argv) != len(r.argv)) {
			return false
		}
		for i, w := range r.argv {
			if req.Argv[i] != w {
				return false
			}
		}
		return true
	case ruleDomain:
		if req.Kind != capability.NetRequest {
			return false
		}
		host := originHost(req.Origin)
		if sub, ok := strings.CutPrefix(r.host, "*."); ok {
			return strings.HasSuffix(host, "."+sub)
		}
		return host == r.host
	}
	return false
}

// originHost returns the host of a normalized origin scheme://host:port.
func originHost(o string) string {
	_, rest, ok := strings.Cut(o, "://")
	if !ok {
		return ""
	}
	if strings.HasPrefix(rest, "[") {
		if i := strings.IndexByte(rest, ']'); i > 0 {
			return rest[1:i]
		}
		return ""
	}
	if i := strings.LastIndexByte(rest, ':'); i >= 0 {
		return rest[:i]
	}
	return rest
}

// any returns the first rule matching the tool by name or any request.
func (s ruleSet) any(tool string, reqs []capability.Request) *rule {
	for i := range s {
		r := &s[i]
		if r.matchName(tool) {
			return r
		}
		for j := range reqs {
			if r.matchRequest(&reqs[j]) {
				return r
			}
		}
	}
	return nil
}

// covers returns a rule allowing the call: one matching its name, or, when
// every request is matched by some rule, the rule matching the first one.
func (s ruleSet) covers(tool string, reqs []capability.Request, known bool) *rule {
	for i := range s {
		if s[i].matchName(tool) {
			return &s[i]
		}
	}
	if !known || len(reqs) == 0 {
		return nil
	}
	var first *rule
	for j := range reqs {
		var m *rule
		for i := range s {
			if s[i].matchRequest(&reqs[j]) {
				m = &s[i]
				break
			}
		}
		if m == nil {
			return nil
		}
		if first == nil {
			first = m
		}
	}
	return first
}

// CheckRule reports why text is not a permission rule, or nil: the check
// CompileRules makes, for one rule, so that a settings file can name the
// line of a bad rule.
func CheckRule(text string) error {
	_, err := parseRule(text)
	return err
}

// RuleGlob returns the workspace:// glob of a path rule (Read, Write or
// Edit), normalized as the matcher compiles it; ok is false for every
// other rule. A deny rule's glob can then also bind what the matcher does
// not see, such as the shell's sandbox.
func RuleGlob(text string) (glob string, ok bool) {
	r, err := parseRule(text)
	if err != nil || r.kind != rulePath {
		return "", false
	}
	return manifest.WorkspaceScheme + r.glob, true
}
