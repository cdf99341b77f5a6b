package policy

import (
	"fmt"
	"slices"
	"strings"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/internal/command"
)

// Rules are permission rules in the settings syntax, which is Claude
// Code's:
//
//	Name                          every call of the tool Name
//	mcp__plugin__tool             the same, for a plugin tool
//	mcp__plugin or mcp__plugin__* every tool of the plugin
//	Read(./docs/**)               fs.read requests whose path matches
//	Write(./out/**)               fs.write requests (Edit(...) is the same)
//	Bash(git status:*)            process.spawn requests whose argv starts
//	                              with the words "git status"
//	Bash(git push *)              a wildcard: * is any text, and a single
//	                              trailing " *" also matches "git push"
//	Bash(git * --force)           any text between; Bash(* --delete)
//	Bash(git status)              process.spawn requests of exactly that argv
//	Bash(*)                       the same as Bash
//	WebFetch(domain:example.com)  net.request requests to that host
//	WebFetch(domain:*.example.com) to its subdomains
//
// Path patterns follow the gitignore specification, as Claude Code's do:
// //abs is an absolute path, ~/x one in the home directory, /x and ./x
// are relative to the workspace (the project root), a/b too (a slash
// anchors), and a name without a slash (*.pem, key.txt, .env) matches at
// any depth. Norma's own workspace://x is relative to the workspace.
//
// A Bash rule sees the command as the command model reads it (package
// internal/command): wrappers that only run their argument (timeout 5,
// nice, nohup, env A=1, command, time, stdbuf, ionice) are looked
// through, and a program's global options before its subcommand (git
// -C DIR, -c K=V; docker --context; kubectl -n; npm --prefix; cargo
// +toolchain; go -C) dropped, so that Bash(git push:*) also matches
// git -C . push.
//
// Deny and ask rules match broadly, where an allow rule matches
// narrowly, so that a difference in reading a rule never widens what
// is allowed:
//
//   - a deny or ask rule matches through every wrapper and global option
//     (sudo, git -c ...), a path in any case (Read(./secrets/**) denies
//     SECRETS/key) and what lies under a matched directory; a computed
//     word ($X, a glob) matches whatever some value of it would;
//   - an allow rule matches through only the wrappers and options that
//     change nothing it is about (timeout, git -C, not git -c, not sudo),
//     a path in its case, a computed word only by a wildcard's star; a
//     prefix or wildcard allow does not cover a command holding a flag
//     that writes, executes or deletes (find -exec, -delete; sort -o; sed
//     -i; git diff --output; tar -x; ...) unless the rule writes that flag;
//     and an exact rule matches the command as written.
//
// Argument rules match the normalized capability requests a call declares,
// whichever tool declares them. A call is denied when any of its requests
// (or its name) matches a Deny rule, needs approval when any matches an Ask
// rule, and is allowed by rules when its name matches an Allow rule or every
// one of its requests matches one.
//
// Root and Home place the rules that name a path outside the workspace's
// own syntax (//abs, ~/x, ../x): Root is the workspace directory (the
// directory request paths are relative to, symbolic links resolved) and
// Home the user's home directory. Empty, such a rule matches no request:
// the gate refuses every path outside the workspace anyway.
type Rules struct {
	Allow, Ask, Deny []string
	Root, Home       string
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
	path   pathPattern     // rulePath, as parsed
	paths  pathMatcher     // rulePath, placed in the workspace
	cmd    cmdPattern      // ruleCommand
	host   string          // ruleDomain, lower-case; leading "*." for subdomains
	broad  bool            // a deny or ask rule: see Rules
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
	if c.allow, err = compileRuleList("allow", r.Allow, r, false); err != nil {
		return nil, err
	}
	if c.ask, err = compileRuleList("ask", r.Ask, r, true); err != nil {
		return nil, err
	}
	if c.deny, err = compileRuleList("deny", r.Deny, r, true); err != nil {
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
	return found(s.allow.covers(tool, reqs, known, true))
}

// AllowRewritten is Allow for a command line not written as plain words
// (a quoted word, an escape, more than one space between words: npm run
// 'lint', npm  run lint): an exact command rule, which Claude Code
// compares with the command's text, covers none of its commands.
func (s *RuleSet) AllowRewritten(tool string, reqs []capability.Request, known bool) (rule string, ok bool) {
	if s == nil {
		return "", false
	}
	return found(s.allow.covers(tool, reqs, known, false))
}

func found(r *rule) (string, bool) {
	if r == nil {
		return "", false
	}
	return r.text, true
}

func compileRuleList(list string, texts []string, at Rules, broad bool) (ruleSet, error) {
	out := make(ruleSet, 0, len(texts))
	for i, t := range texts {
		r, err := parseRule(t)
		if err != nil {
			return nil, fmt.Errorf("policy: rules.%s[%d] %q: %w", list, i, t, err)
		}
		r.broad = broad
		if r.kind == rulePath {
			r.paths = r.path.place(at.Root, at.Home, broad)
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
		p, err := parsePath(arg)
		if err != nil {
			return r, err
		}
		r.path = p
	case "Bash":
		if strings.Trim(arg, "* ") == "" {
			// Bash(*) is Bash, as in Claude Code.
			r.kind, r.name = ruleName, name
			return r, nil
		}
		r.kind = ruleCommand
		p, err := parseCommand(arg)
		if err != nil {
			return r, err
		}
		r.cmd = p
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

// matchRequest reports whether an argument rule matches req; v is the
// command model's reading of a process.spawn request's argv
// ([command.Run]), computed once per request by the caller.
func (r *rule) matchRequest(req *capability.Request, v *spawnView) bool {
	switch r.kind {
	case rulePath:
		if req.Kind != r.fsKind {
			return false
		}
		return r.paths.match(req.Path)
	case ruleCommand:
		if req.Kind != capability.ProcessSpawn || len(req.Argv) == 0 {
			return false
		}
		if r.cmd.matchArgv(req.Argv, r.broad) {
			if r.broad || v == nil {
				return true
			}
			// An allow rule does not reach a command that its words
			// hide (git -c alias.p='!rm -rf x' p under Bash(git:*)).
			return !v.read(req.Argv).hidden
		}
		if v == nil {
			return false
		}
		v.read(req.Argv)
		if !v.differs {
			return false
		}
		// The command as the model reads it: through every wrapper and
		// global option for a deny or ask rule; for an allow rule only
		// when what was dropped is neutral, and never for an exact rule,
		// which names the command as written.
		if r.broad {
			return r.cmd.matchArgv(v.run, true)
		}
		return v.neutral && r.cmd.kind != cmdExact && r.cmd.matchArgv(v.run, false)
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

// spawnView is a process.spawn request's argv as the command model reads
// it, computed the first time a rule asks.
type spawnView struct {
	run     []string
	neutral bool
	// hidden: the literal words run a command that cannot be read (a
	// git alias to a shell command defined on the command line).
	hidden  bool
	differs bool // run is not the argv as written
	done    bool
}

// read computes v from argv, once.
func (v *spawnView) read(argv []string) *spawnView {
	if !v.done {
		v.run, v.neutral = command.Run(argv)
		v.differs = !slices.Equal(v.run, argv)
		v.hidden = v.differs && slices.ContainsFunc(v.run, command.IsComputed) && !slices.ContainsFunc(argv, command.IsComputed)
		v.done = true
	}
	return v
}

// views returns room for the command model's reading of every request of
// reqs, in buf when it is large enough.
func views(reqs []capability.Request, buf []spawnView) []spawnView {
	if cap(buf) < len(reqs) {
		return make([]spawnView, len(reqs))
	}
	return buf[:len(reqs)]
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
	var buf [8]spawnView
	vs := views(reqs, buf[:])
	for i := range s {
		r := &s[i]
		if r.matchName(tool) {
			return r
		}
		for j := range reqs {
			if r.matchRequest(&reqs[j], &vs[j]) {
				return r
			}
		}
	}
	return nil
}

// covers returns a rule allowing the call: one matching its name, or, when
// every request is matched by some rule, the rule matching the first one.
// Without exact, an exact command rule matches no request.
func (s ruleSet) covers(tool string, reqs []capability.Request, known, exact bool) *rule {
	for i := range s {
		if s[i].matchName(tool) {
			return &s[i]
		}
	}
	if !known || len(reqs) == 0 {
		return nil
	}
	var buf [8]spawnView
	vs := views(reqs, buf[:])
	var first *rule
	for j := range reqs {
		var m *rule
		for i := range s {
			if !exact && s[i].kind == ruleCommand && s[i].cmd.kind == cmdExact {
				continue
			}
			if s[i].matchRequest(&reqs[j], &vs[j]) {
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
// Edit) for a layer's deny list: it matches what the rule matches as a
// deny rule, case-insensitively and what lies under a matched directory
// too ([Rules]). ok is false for every other rule, and for a path rule
// not relative to the workspace (//abs, ~/x, ../x). A deny rule's glob can
// then also bind what the matcher does not see, such as the shell's
// sandbox.
func RuleGlob(text string) (glob string, ok bool) {
	r, err := parseRule(text)
	if err != nil || r.kind != rulePath {
		return "", false
	}
	return r.path.denyGlob()
}

// DenyGlobs returns the workspace:// globs (see [RuleGlob]) of the path
// rules among deny, apart by verb, for the workspace layer's floor: a
// Read rule's glob is in hidden (the layer's deny list: the path is
// neither read nor written, and the sandbox hides it), a Write or Edit
// rule's in readOnly (its deny_write list: read, never written, and the
// sandbox shows it read-only). A deny on one verb denies that verb:
// Edit(./protected/**) refuses writing protected/, not reading it.
func DenyGlobs(deny []string) (hidden, readOnly []string) {
	for _, t := range deny {
		r, err := parseRule(t)
		if err != nil || r.kind != rulePath {
			continue
		}
		g, ok := r.path.denyGlob()
		if !ok {
			continue
		}
		if r.fsKind == capability.FSWrite {
			readOnly = append(readOnly, g)
		} else {
			hidden = append(hidden, g)
		}
	}
	return hidden, readOnly
}
