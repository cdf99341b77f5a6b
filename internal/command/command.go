// Package command is the command model: what one simple command runs, as
// the permission rules and the shell analysis see it.
//
// One table answers each question, and every caller asks it here:
//
//   - [Unwrap]: the command a wrapper runs (timeout, nice, nohup, env,
//     command, time, stdbuf, ionice, sudo, xargs, ...), from the wrapper
//     table. Package shellcmd unwraps with it; [Run] looks through with it.
//   - [Run]: the command's own words for a prefix rule: leading NAME=value
//     assignments and wrappers looked through, and the global options a
//     program takes before its subcommand dropped (git -C DIR, -c K=V,
//     --git-dir; docker --context; kubectl --namespace; npm --prefix;
//     cargo +toolchain; go -C), so that a rule about `git push` sees
//     `git -C . push`. Run also says whether what it dropped is neutral:
//     an allow rule may match Run only then, a deny or ask rule always.
//   - [Risky]: a flag that makes a command write, execute or delete
//     beyond what its name says (find -exec, sort -o, sed -i, git diff
//     --output, tar -x, curl -o, ...): a prefix or wildcard allow rule does
//     not cover a command that holds one.
//   - [DangerousVar]: a variable whose value changes what later commands
//     run (PATH, LD_PRELOAD, GIT_*, EDITOR, ...).
//   - [ChdirOption]: the options after which a program opens its
//     arguments in another directory (git -C, tar -C, make -C, env -C).
//
// A computed word (a value only known when the shell runs) is a string
// holding a NUL byte: [Computed] for one word, [ComputedWords] for any
// number of them. No literal equals one, and every function here treats
// one as unknown, never as a word it can read.
//
// The package does no I/O and holds no mutable state; it is safe for
// concurrent use.
package command

import (
	"path"
	"strings"

	"github.com/norma-run/norma/internal/codeenv"
)

// Computed words. Each contains a NUL byte, so no rule word can ever be
// equal to one, and a real argv string never is one.
const (
	// Computed stands for exactly one word whose value is only known
	// when the shell runs it ("$VAR", "$(…)", ~).
	Computed = "\x00dynamic"
	// ComputedWords stands for any number of words, none included: an
	// unquoted expansion (split on IFS), a glob, a brace expansion, "$@".
	ComputedWords = "\x00words"
)

// IsComputed reports whether w is a computed word, or holds one (an
// assignment text such as "X=" + Computed).
func IsComputed(w string) bool { return strings.IndexByte(w, 0) >= 0 }

// Glob is the computed word of a pathname pattern whose text is pattern
// (*.log): any number of words, as [ComputedWords], with the text kept,
// so that a rule written with the pattern (Bash(rm *.log)) can name it as
// Claude Code, which compares command text, does.
func Glob(pattern string) string { return ComputedWords + "\x00" + pattern }

// IsWords reports whether w stands for any number of words:
// [ComputedWords] or a [Glob].
func IsWords(w string) bool {
	return w == ComputedWords || strings.HasPrefix(w, ComputedWords+"\x00")
}

// GlobText returns the text of a [Glob] word.
func GlobText(w string) (string, bool) {
	return strings.CutPrefix(w, ComputedWords+"\x00")
}

// maxDepth bounds how many wrappers Run looks through.
const maxDepth = 8

// Run returns what argv runs, for a prefix or wildcard rule to match: the
// words of the command itself, with what only prepares it removed.
//
//   - leading NAME=value assignments (FOO=1 git status);
//   - a path to a program reduced to its name (/usr/bin/git);
//   - wrappers looked through, repeatedly (timeout 5 nice -n 10 git
//     status is git status);
//   - the program's global options before its subcommand (git -C . -c
//     core.pager=cat push is git push).
//
// neutral reports that nothing dropped changes what the command does
// beyond what its words say: only pure wrappers (timeout, nice, nohup,
// env NAME=value, command, time, stdbuf, ionice, setsid), assignments to
// variables that are not [DangerousVar], and global options that only
// choose a directory or an output style (git -C, --no-pager; npm
// --prefix; go -C; cargo +toolchain). A program named by a path, sudo,
// xargs, git -c, --exec-path, --git-dir, docker --host, kubectl
// --context and the like are not neutral: a deny or ask rule matches the
// command through them, an allow rule does not.
//
// run is argv itself (not a copy) when nothing was dropped. A computed
// word stops the reduction where it stands.
func Run(argv []string) (run []string, neutral bool) {
	run, neutral = argv, true
	for range maxDepth {
		for len(run) > 0 && isAssignment(run[0]) {
			if IsComputed(run[0]) || DangerousVar(run[0][:strings.IndexByte(run[0], '=')]) {
				neutral = false
			}
			run = run[1:]
		}
		if len(run) == 0 || IsComputed(run[0]) {
			return run, neutral
		}
		if strings.Contains(run[0], "/") {
			base := path.Base(run[0])
			if base == "." || base == "/" || base == ".." {
				return run, neutral
			}
			run = append([]string{base}, run[1:]...)
			neutral = false // ./git is not git
		}
		w, isWrapper := wrappers[run[0]]
		if !isWrapper {
			break
		}
		inner, env, _ := Unwrap(run)
		if len(inner) == 0 {
			return run, neutral // a lookup (command -v) or unknown
		}
		if !w.pure {
			neutral = false
		}
		for _, e := range env {
			name, _, _ := strings.Cut(e, "=")
			if IsComputed(e) || DangerousVar(name) {
				neutral = false
			}
		}
		run = inner
	}
	g, ok := globals[run[0]]
	if !ok {
		return run, neutral
	}
	sub, n := g.strip(run)
	if run[0] == "git" {
		if a, ok := gitAlias(run, sub); ok {
			return a, false // an alias defined on the command line
		}
	}
	if sub == len(run) || sub == 1 {
		return run, neutral // no subcommand, or nothing dropped
	}
	if !n {
		neutral = false
	}
	out := make([]string, 0, len(run)-sub+1)
	out = append(out, run[0])
	return append(out, run[sub:]...), neutral
}

// isAssignment reports whether w is a NAME=value word.
func isAssignment(w string) bool {
	i := strings.IndexByte(w, '=')
	if i <= 0 {
		return false
	}
	name := strings.TrimSuffix(w[:i], "+")
	for j := 0; j < len(name); j++ {
		c := name[j]
		if c != '_' && !(c >= 'a' && c <= 'z') && !(c >= 'A' && c <= 'Z') && !(j > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return name != ""
}

// commandVars are variables that programs read to decide what to run
// (an editor, a pager, a password prompt, a proxy) and that a user may
// still configure, so the environment list ([codeenv]) does not refuse
// them; a command line that assigns one is not analyzable.
var commandVars = map[string]bool{
	"SHELL": true, "EDITOR": true, "VISUAL": true, "FCEDIT": true, "PAGER": true, "MANPAGER": true,
	"BROWSER": true, "LESSOPEN": true, "LESSCLOSE": true, "GCONV_PATH": true, "GOFLAGS": true,
	"SUDO_ASKPASS": true, "SSH_ASKPASS": true, "PYTHONINSPECT": true,
	"BASH_CMDS": true, "BASH_ALIASES": true, // the command hash table, the aliases
	"http_proxy": true, "https_proxy": true, "HTTP_PROXY": true, "HTTPS_PROXY": true,
	"all_proxy": true, "ALL_PROXY": true, "no_proxy": true, "NO_PROXY": true,
}

// intVars are bash's integer variables: a value assigned to one, by any
// means (RANDOM=v, read, printf -v, for, getopts), is evaluated as
// arithmetic, so RANDOM='a[$(cmd)]' runs cmd. Only a literal number may
// be assigned to one (OPTIND=1).
var intVars = map[string]bool{"RANDOM": true, "SRANDOM": true, "OPTIND": true, "HISTCMD": true}

// DangerousVar reports whether assigning name can change what later
// commands do beyond their arguments: a variable of the one list of
// those that change which code runs ([codeenv.Of]: BASH_ENV, PS4, IFS,
// PATH, HOME, GIT_*, LD_*, NODE_OPTIONS, ...), one that programs read to
// decide what to run (EDITOR, PAGER, proxies, ...), or one of bash's
// integer variables. A subscripted name is judged by its array name.
func DangerousVar(name string) bool {
	if i := strings.IndexByte(name, '['); i >= 0 {
		name = name[:i]
	}
	return codeenv.Of(name) != codeenv.None || commandVars[name] || intVars[name]
}

// IntVar reports whether name is one of bash's integer variables.
func IntVar(name string) bool { return intVars[name] }
