package command

import "strings"

// globalOpts are the options a program takes before its subcommand.
type globalOpts struct {
	// value are the options that take a value: in the next word (-C DIR),
	// after = (--git-dir=DIR) or, for a one-letter option, attached
	// (-CDIR).
	value []string
	// neutral are the options (of value or not) that only choose a
	// directory, a namespace or an output style: dropping them keeps an
	// allow rule's meaning. Every other option dropped is not neutral.
	neutral []string
	// plus: a first word +NAME selects a toolchain (cargo +nightly).
	plus bool
}

// globals is the global option table.
var globals = map[string]globalOpts{
	"git": {
		value: []string{"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--super-prefix",
			"--config-env", "--exec-path", "--attr-source", "--list-cmds"},
		neutral: []string{"-C", "--no-pager", "-P", "--no-optional-locks", "--literal-pathspecs",
			"--glob-pathspecs", "--noglob-pathspecs", "--icase-pathspecs", "--no-advice", "--no-replace-objects"},
	},
	"docker": {
		value: []string{"--context", "-c", "-H", "--host", "--config", "-l", "--log-level",
			"--tlscacert", "--tlscert", "--tlskey"},
		neutral: []string{"-l", "--log-level", "-D", "--debug"},
	},
	"podman": {
		value:   []string{"--connection", "-c", "--url", "--root", "--runroot", "--log-level", "--storage-driver"},
		neutral: []string{"--log-level"},
	},
	"kubectl": {
		value: []string{"--context", "-n", "--namespace", "--kubeconfig", "--cluster", "--user",
			"-s", "--server", "--token", "--as", "--as-group", "--as-uid", "--request-timeout",
			"--cache-dir", "--certificate-authority", "--client-certificate", "--client-key",
			"-v", "--v", "--tls-server-name", "--profile", "--profile-output"},
		// Not -n or --namespace: the namespace is what get reads, and
		// Claude Code asks for kubectl -n prod get pods under
		// Bash(kubectl get:*).
		neutral: []string{"--request-timeout", "-v", "--v"},
	},
	"npm": {
		value:   []string{"--prefix", "-C", "-w", "--workspace", "--userconfig", "--globalconfig", "--registry", "--cache", "--loglevel"},
		neutral: []string{"--prefix", "-C", "-w", "--workspace", "--loglevel", "-s", "--silent", "-q", "--quiet", "-d", "--no-color", "--color"},
	},
	"cargo": {
		value:   []string{"--config", "-Z", "--color", "-C"},
		neutral: []string{"--color", "-C", "-v", "-vv", "--verbose", "-q", "--quiet", "--frozen", "--locked", "--offline"},
		plus:    true,
	},
	"go": {
		value:   []string{"-C"},
		neutral: []string{"-C"},
	},
	"make": {
		value:   []string{"-C", "--directory", "-f", "--file", "--makefile", "-j", "--jobs", "-l", "--load-average", "-o", "-W"},
		neutral: []string{"-C", "--directory", "-j", "--jobs", "-l", "--load-average", "-s", "--silent", "-k", "--keep-going"},
	},
}

// strip returns the index of argv's subcommand (len(argv) when there is
// none: only options, or a computed word where it would be) and whether
// every option before it is neutral. argv[0] is the program.
func (g globalOpts) strip(argv []string) (sub int, neutral bool) {
	neutral = true
	i := 1
	if g.plus && i < len(argv) && strings.HasPrefix(argv[i], "+") && !IsComputed(argv[i]) {
		i++ // cargo +nightly: a toolchain, neutral
	}
	for i < len(argv) {
		a := argv[i]
		if IsComputed(a) {
			return len(argv), false
		}
		if a == "--" {
			return i + 1, neutral
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			return i, neutral
		}
		name, takes := a, false
		switch {
		case strings.HasPrefix(a, "--"):
			var eq bool
			name, _, eq = strings.Cut(a, "=")
			takes = !eq && contains(g.value, a)
		case len(a) > 2 && contains(g.value, a[:2]):
			name = a[:2] // -CDIR, -ccore.pager=cat
		default:
			takes = contains(g.value, a)
		}
		if !contains(g.neutral, name) {
			neutral = false
		}
		i++
		if takes {
			if i < len(argv) && IsComputed(argv[i]) {
				return len(argv), false
			}
			i++
		}
	}
	return len(argv), neutral
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// gitAlias returns what git runs for argv (git with its global options)
// when a -c alias.NAME=VALUE among them defines its subcommand sub:
// VALUE's words in place of NAME, or, for a shell alias (!cmd) or one
// defined through the environment (--config-env), a computed word: a
// command the model cannot read. ok is false when no alias applies.
func gitAlias(argv []string, sub int) (run []string, ok bool) {
	if sub >= len(argv) {
		return nil, false
	}
	name := strings.ToLower(argv[sub])
	for i := 1; i < sub; i++ {
		a := argv[i]
		var def string
		switch {
		case a == "-c" && i+1 < sub:
			def = argv[i+1]
		case strings.HasPrefix(a, "-c"):
			def = a[2:]
		case strings.HasPrefix(a, "--config-env"):
			return []string{"git", Computed}, true
		default:
			continue
		}
		key, value, _ := strings.Cut(def, "=")
		if !strings.EqualFold(key, "alias."+name) {
			continue
		}
		if strings.HasPrefix(value, "!") || IsComputed(value) {
			return []string{"git", Computed}, true
		}
		return append(append([]string{"git"}, strings.Fields(value)...), argv[sub+1:]...), true
	}
	return nil, false
}
