package policy_test

import (
	"strings"
	"testing"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/internal/shellcmd"
	"github.com/norma-run/norma/policy"
)

// bash returns the requests of a command line as the gate makes them:
// one process.spawn per simple command shellcmd finds (wrappers
// unwrapped), and the files its redirections read and write.
func bash(cmd string) ([]capability.Request, bool) {
	e := shellcmd.Parse(cmd)
	var reqs []capability.Request
	for _, argv := range e.Spawns {
		reqs = append(reqs, capability.Request{Kind: capability.ProcessSpawn, Argv: argv})
	}
	for _, p := range e.Reads {
		reqs = append(reqs, capability.Request{Kind: capability.FSRead, Path: p})
	}
	for _, p := range e.Writes {
		reqs = append(reqs, capability.Request{Kind: capability.FSWrite, Path: p})
	}
	return reqs, e.Unknown == ""
}

// decide is the rules' answer to a Bash command in the gate's order:
// deny, ask, allow, else "" (the mode decides).
func decide(t *testing.T, s *policy.RuleSet, cmd string) string {
	t.Helper()
	reqs, known := bash(cmd)
	if _, ok := s.Deny("Bash", reqs); ok {
		return "deny"
	}
	if _, ok := s.Ask("Bash", reqs); ok {
		return "ask"
	}
	if _, ok := s.Allow("Bash", reqs, known); ok {
		return "allow"
	}
	return ""
}

// TestClaudeBashRules: Claude Code's Bash rule language — the legacy :*
// prefix, exact commands and the wildcard forms with their word
// boundaries — read through the command model: global options, wrappers,
// and the flags that make a prefix allow not apply. Each row is one
// command under one rule set; the comments say what Claude Code does
// where Norma is stricter.
func TestClaudeBashRules(t *testing.T) {
	sets := map[string]policy.Rules{
		// issue 31, class 1: allow git, deny the wildcard forms.
		"wild": {Allow: []string{"Bash(git:*)", "Bash(ls:*)"}, Deny: []string{"Bash(git push *)", "Bash(git * --force)", "Bash(* --delete)"}},
		// class 2: a prefix deny and global options.
		"global": {Allow: []string{"Bash(git:*)", "Bash(kubectl:*)", "Bash(docker:*)"}, Deny: []string{"Bash(git push:*)", "Bash(kubectl delete:*)", "Bash(docker rm:*)"}},
		// class 5: prefix allows and the flags that write, run or delete.
		"flags": {Allow: []string{"Bash(find:*)", "Bash(git diff:*)", "Bash(sort:*)", "Bash(sed:*)", "Bash(tar:*)", "Bash(rsync:*)",
			"Bash(sort -o:*)", "Bash(grep *)", "Bash(find . -delete)"}},
		// wrappers looked through.
		"wrap": {Allow: []string{"Bash(git status:*)"}, Deny: []string{"Bash(rm:*)"}},
		// exact and word boundaries.
		"exact":  {Allow: []string{"Bash(npm run lint)", "Bash(ls *)", "Bash(npm run test:*)", "Bash(echo \"a b\")"}, Ask: []string{"Bash(git commit *)"}},
		"star":   {Allow: []string{"Bash(ls*)"}},
		"any":    {Deny: []string{"Bash(*)"}},
		"dollar": {Deny: []string{"Bash(rm -rf $HOME)"}, Allow: []string{"Bash(rm:*)"}},
		// deny and ask rules in any case of the program's name, and
		// through computed words.
		"computed": {Deny: []string{"Bash(rm -rf /)", "Bash(git push:*)", "Bash(rm *.log)"}, Allow: []string{"Bash(echo:*)", "Bash(git:*)", "Bash(rm:*)"}},
	}
	for _, tt := range []struct {
		set, cmd, want string
	}{
		// Class 1: the wildcard denies, with allow: Bash(git:*).
		{"wild", "git push origin main", "deny"},
		{"wild", "git push", "deny"}, // the trailing " *" is optional
		{"wild", "git pushx", "allow"},
		{"wild", "git fetch --force", "deny"},
		{"wild", "git push --force origin", "deny"},
		{"wild", "git --force", "allow"}, // git * --force needs a word between
		{"wild", "ls --delete", "deny"},
		{"wild", "ls x--delete", "allow"},
		{"wild", "ls -la | git push origin", "deny"}, // every command of a pipeline
		{"wild", "git -C . push origin", "deny"},     // and through global options
		{"wild", "sudo git push", "deny"},
		{"wild", "echo ok && git push", "deny"},
		// Class 2: global options before the subcommand.
		{"global", "git -C . push", "deny"},
		{"global", "git -c core.pager=cat push", "deny"},
		{"global", "git --git-dir=.git --work-tree=. push origin", "deny"},
		{"global", "git --no-pager push", "deny"},
		{"global", "GIT push", "deny"}, // the program's name in any case
		{"global", "git -C . status", "allow"},
		// An alias defined on the command line is what runs (the red team's).
		{"global", "git -c alias.p=push p origin main", "deny"},
		{"global", "git -c alias.P=push P", "deny"},    // alias names in any case
		{"global", "git -c alias.p=!rm p", ""},         // a shell alias: unknown, asked
		{"global", "git --config-env=alias.p=X p", ""}, // defined elsewhere: unknown
		{"global", "git -c alias.p=status p", "allow"},
		{"global", "kubectl -n prod delete pod x", "deny"},
		{"global", "kubectl --context=prod delete pod x", "deny"},
		{"global", "docker --context prod rm -f x", "deny"},
		{"global", "docker -H tcp://x rm -f y", "deny"},
		// Class 5: under a prefix allow, a flag that writes, runs or
		// deletes asks (Claude Code asks too).
		{"flags", "find . -name '*.go'", "allow"},
		{"flags", "find . -name x -delete", ""},
		{"flags", "find . -delete", "allow"}, // Bash(find . -delete) names the command exactly
		{"flags", "find src -delete", ""},
		{"flags", "find . -exec cat {} ;", ""},
		{"flags", "find . -execdir ls ;", ""},
		{"flags", "find . -fprint out", ""},
		{"flags", "git diff --stat", "allow"},
		{"flags", "git diff --output=x.patch", ""},
		{"flags", "sort -u a", "allow"},
		{"flags", "sort -o out a", "allow"}, // Bash(sort -o:*) names the flag
		{"flags", "sed -n 1p a", "allow"},
		{"flags", "sed -i s/a/b/ a", ""},
		{"flags", "sed 's/a/b/w out' a", ""},
		{"flags", "tar -tzf a.tgz", "allow"},
		{"flags", "tar -xzf a.tgz", ""},
		{"flags", "tar xf a.tar", ""},
		{"flags", "rsync -a --delete a b", ""},
		{"flags", "grep -r x .", "allow"},
		// Wrappers that only run their argument are looked through.
		{"wrap", "timeout 5 git status", "allow"},
		{"wrap", "nice -n 10 git status -s", "allow"},
		{"wrap", "nohup git status", "allow"},
		{"wrap", "env LANG=C git status", "allow"},
		{"wrap", "command git status", "allow"},
		{"wrap", "time git status", "allow"},
		{"wrap", "stdbuf -oL git status", "allow"},
		{"wrap", "ionice -c 3 git status", "allow"},
		{"wrap", "timeout 5 nice git -C . status", "allow"},
		{"wrap", "sudo git status", ""},          // sudo is not looked through for an allow
		{"wrap", "env GIT_DIR=x git status", ""}, // a variable that changes what runs: unknown
		{"wrap", "timeout 5 rm -rf x", "deny"},   // and a deny sees through every wrapper
		{"wrap", "xargs rm < list", "deny"},      //
		{"wrap", "find . -exec rm {} +", "deny"}, //
		{"wrap", "/bin/rm x", "deny"},            //
		{"wrap", "git status; rm x", "deny"},     //
		{"wrap", "git status && git push", ""},   // every command must be covered
		{"wrap", "./git status", ""},             // ./git is not git
		// Exact commands and word boundaries.
		{"exact", "npm run lint", "allow"},
		{"exact", "npm run lint --fix", ""},
		{"exact", "npm  run   lint", "allow"}, // the same words
		{"exact", "ls", "allow"},              // "ls *" also matches ls alone
		{"exact", "ls -la", "allow"},
		{"exact", "lsof", ""}, // a space before * is a word boundary
		{"exact", "npm run test", "allow"},
		{"exact", "npm run test:unit", ""}, // :* is a word boundary too
		{"exact", "npm run test -- -u", "allow"},
		{"exact", "echo 'a b'", "allow"}, // quotes are the shell's
		{"exact", "git commit -m wip", "ask"},
		{"exact", "git commit", "ask"},
		{"exact", "timeout 5 npm run lint", ""}, // an exact rule names the command as written
		{"star", "lsof", "allow"},               // no space: no word boundary
		{"star", "ls -la", "allow"},
		{"any", "true", "deny"}, // Bash(*) is Bash
		// Computed words: a deny matches what some value would; an allow
		// covers them only where its rule leaves the words open.
		{"computed", "rm -rf \"$DIR\"", "allow"}, // one quoted word: not "/" (Claude Code compares the text, and allows it too)
		{"computed", "git $CMD origin", "deny"},
		{"computed", "rm *.log", "deny"},       // the glob may name x.log
		{"computed", "rm \"$F\"", "allow"},     // one quoted word is not -rf /
		{"computed", "rm -rf $DIR", "deny"},    // unquoted: any words
		{"computed", "rm -rf ~", "allow"},      // ~ is one word, not /
		{"dollar", "rm -rf \"$HOME\"", "deny"}, // Bash(rm -rf $HOME) names it
		{"wild", "ls \"$f\" && ls \"$d\"", "allow"},
		{"wild", "ls $DIRS", "deny"}, // unquoted: may split into --delete
		{"computed", "echo $HOME", "allow"},
		{"computed", "$(echo rm) -rf /", ""}, // a computed name: unknown, asked
		{"wild", "$CMD --delete", "deny"},    // * matches any name
		{"computed", "git status $X", "allow"},
	} {
		t.Run(tt.set+"/"+tt.cmd, func(t *testing.T) {
			s, err := policy.CompileRules(sets[tt.set])
			if err != nil {
				t.Fatal(err)
			}
			if got := decide(t, s, tt.cmd); got != tt.want {
				t.Errorf("rules %s: %q = %q, want %q", tt.set, tt.cmd, got, tt.want)
			}
		})
	}
}

// TestClaudePathRules: path rules in Claude Code's forms, placed in a
// workspace at /home/u/proj with the home directory /home/u.
func TestClaudePathRules(t *testing.T) {
	at := func(r policy.Rules) policy.Rules {
		r.Root, r.Home = "/home/u/proj", "/home/u"
		return r
	}
	for _, tt := range []struct {
		name  string
		rules policy.Rules
		kind  capability.Kind
		path  string
		want  string
	}{
		// /x is relative to the project root, like ./x.
		{"slash root", at(policy.Rules{Deny: []string{"Read(/secrets/**)"}}), capability.FSRead, "secrets/k", "deny"},
		{"slash root not deeper", at(policy.Rules{Deny: []string{"Read(/secrets/**)"}}), capability.FSRead, "a/secrets/k", ""},
		{"dot slash", at(policy.Rules{Deny: []string{"Read(./secrets/**)"}}), capability.FSRead, "secrets/a/b", "deny"},
		{"workspace scheme", at(policy.Rules{Deny: []string{"Read(workspace://secrets/**)"}}), capability.FSRead, "secrets/a", "deny"},
		// gitignore: no slash means any depth.
		{"ext any depth", at(policy.Rules{Deny: []string{"Read(*.pem)"}}), capability.FSRead, "a/b/key.pem", "deny"},
		{"ext at root", at(policy.Rules{Deny: []string{"Read(*.pem)"}}), capability.FSRead, "key.pem", "deny"},
		{"name any depth", at(policy.Rules{Deny: []string{"Read(key.txt)"}}), capability.FSRead, "x/key.txt", "deny"},
		{"dotfile any depth", at(policy.Rules{Deny: []string{"Read(.env)"}}), capability.FSRead, "svc/.env", "deny"},
		{"slash anchors", at(policy.Rules{Deny: []string{"Read(conf/key.txt)"}}), capability.FSRead, "x/conf/key.txt", ""},
		{"trailing slash", at(policy.Rules{Deny: []string{"Read(secrets/)"}}), capability.FSRead, "a/secrets/k", "deny"},
		// Deny and ask rules in any case, and under a matched directory.
		{"case", at(policy.Rules{Deny: []string{"Read(./secrets/**)"}}), capability.FSRead, "SECRETS/key.txt", "deny"},
		{"case ask", at(policy.Rules{Ask: []string{"Edit(./Docs/*.md)"}}), capability.FSWrite, "docs/A.MD", "ask"},
		{"directory", at(policy.Rules{Deny: []string{"Read(./secrets)"}}), capability.FSRead, "secrets/key", "deny"},
		{"allow keeps case", at(policy.Rules{Allow: []string{"Read(./docs/**)"}}), capability.FSRead, "DOCS/a.md", ""},
		{"allow no children", at(policy.Rules{Allow: []string{"Read(./docs)"}}), capability.FSRead, "docs/a.md", ""},
		{"allow any depth", at(policy.Rules{Allow: []string{"Read(*.md)"}}), capability.FSRead, "a/b.md", "allow"},
		// Absolute and home paths that name the workspace.
		{"abs", at(policy.Rules{Deny: []string{"Read(//home/u/proj/secrets/**)"}}), capability.FSRead, "secrets/k", "deny"},
		{"abs other", at(policy.Rules{Deny: []string{"Read(//etc/**)"}}), capability.FSRead, "etc/passwd", ""},
		{"abs glob", at(policy.Rules{Deny: []string{"Read(//home/*/proj/.env)"}}), capability.FSRead, ".env", "deny"},
		{"abs all", at(policy.Rules{Deny: []string{"Read(//**/id_rsa)"}}), capability.FSRead, "k/id_rsa", "deny"},
		{"home", at(policy.Rules{Deny: []string{"Read(~/proj/.env)"}}), capability.FSRead, ".env", "deny"},
		{"home case", at(policy.Rules{Deny: []string{"Read(~/Proj/.env)"}}), capability.FSRead, ".env", "deny"},
		{"home elsewhere", at(policy.Rules{Deny: []string{"Read(~/.ssh/**)"}}), capability.FSRead, ".ssh/id", ""},
		{"home unknown", policy.Rules{Deny: []string{"Read(~/proj/.env)"}}, capability.FSRead, ".env", ""},
		{"parent", at(policy.Rules{Deny: []string{"Read(../proj/x)"}}), capability.FSRead, "x", "deny"},
		{"abs allow", at(policy.Rules{Allow: []string{"Read(//home/u/proj/docs/**)"}}), capability.FSRead, "docs/a", "allow"},
		// A verb denies that verb: Edit(...) is about writes.
		{"edit is not read", at(policy.Rules{Deny: []string{"Edit(./protected/**)"}}), capability.FSRead, "protected/a", ""},
		{"edit is write", at(policy.Rules{Deny: []string{"Edit(./protected/**)"}}), capability.FSWrite, "protected/a", "deny"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, err := policy.CompileRules(tt.rules)
			if err != nil {
				t.Fatal(err)
			}
			reqs := []capability.Request{{Kind: tt.kind, Path: tt.path}}
			got := ""
			if _, ok := s.Deny("Read", reqs); ok {
				got = "deny"
			} else if _, ok := s.Ask("Read", reqs); ok {
				got = "ask"
			} else if _, ok := s.Allow("Read", reqs, true); ok {
				got = "allow"
			}
			if got != tt.want {
				t.Errorf("%v on %s %s = %q, want %q", tt.rules, tt.kind, tt.path, got, tt.want)
			}
		})
	}
}

// TestRuleGlob: a path deny rule's glob for the workspace layer matches
// what the rule denies: any case, and under a matched directory.
func TestRuleGlob(t *testing.T) {
	for _, tt := range []struct {
		rule string
		want string
		ok   bool
	}{
		{"Read(./secrets/**)", "workspace://[sS][eE][cC][rR][eE][tT][sS]/**", true},
		{"Read(.env)", "workspace://{**/.[eE][nN][vV],**/.[eE][nN][vV]/**}", true},
		{"Edit(/a/[ab]*.go)", "workspace://{[aA]/[ab]*.[gG][oO],[aA]/[ab]*.[gG][oO]/**}", true},
		{"Read(~/.ssh/**)", "", false},
		{"Read(//etc/x)", "", false},
		{"Bash(ls)", "", false},
	} {
		got, ok := policy.RuleGlob(tt.rule)
		if got != tt.want || ok != tt.ok {
			t.Errorf("RuleGlob(%q) = %q, %v; want %q, %v", tt.rule, got, ok, tt.want, tt.ok)
		}
	}
}

// TestCommandRuleParse: the forms of a Bash rule's argument, and what
// each refuses.
func TestCommandRuleParse(t *testing.T) {
	for _, tt := range []struct {
		rule string
		err  string // "" for a rule that compiles
	}{
		{"Bash(git push:*)", ""},
		{"Bash(git push *)", ""},
		{"Bash(git * --force)", ""},
		{"Bash(* --delete)", ""},
		{"Bash(*)", ""},
		{"Bash(echo \\*)", ""},
		{"Bash(echo 'a b' \"c d\")", ""},
		{"Bash(git commit -m \"wip*\")", ""},
		{"Bash(echo 'x)", "unterminated quote"},
		{"Bash(echo \"x)", "unterminated quote"},
		{"Bash(echo \x01)", "control character"},
		{"Bash(   )", "empty argument"},
	} {
		_, err := policy.CompileRules(policy.Rules{Deny: []string{tt.rule}})
		if tt.err == "" && err != nil || tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("CompileRules(%q) = %v, want %q", tt.rule, err, tt.err)
		}
	}
}
