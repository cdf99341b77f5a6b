package command

import "strings"

// wrapper describes a program that runs the command in its arguments.
type wrapper struct {
	// args are the short options that take a separate argument (-n 5;
	// -n5 carries its own).
	args string
	// pure: the wrapper only runs its argument, in the same place, with
	// the same privileges and input: looking through it changes nothing
	// an allow rule is about (timeout 5 git status is git status).
	pure bool
}

// wrappers is the wrapper table: every program whose arguments are a
// command it runs.
var wrappers = map[string]wrapper{
	"env":        {args: "uCS", pure: true},
	"nice":       {args: "n", pure: true},
	"timeout":    {args: "sk", pure: true},
	"nohup":      {pure: true},
	"command":    {pure: true},
	"builtin":    {pure: true},
	"time":       {args: "fo", pure: true},
	"stdbuf":     {args: "ioe", pure: true},
	"ionice":     {args: "cnp", pure: true},
	"setsid":     {pure: true},
	"sudo":       {args: "ughpCDrtUT"},
	"doas":       {args: "uC"},
	"xargs":      {args: "ILnPsdEa"},
	"exec":       {args: "a"},
	"chrt":       {},
	"taskset":    {},
	"unshare":    {},
	"flock":      {args: "wE"},
	"caffeinate": {},
}

// IsWrapper reports whether prog is in the wrapper table.
func IsWrapper(prog string) bool {
	_, ok := wrappers[prog]
	return ok
}

// Unwrap returns the command a wrapper runs, and the NAME=value words it
// puts in that command's environment (env, sudo). ok is false when argv[0]
// is not a wrapper; inner is nil when it is one but its command cannot be
// determined (a computed word where the command should be, env -S), and
// empty (not nil) when it runs none (command -v, a bare exec).
//
// xargs adds the words it reads: its command gets [ComputedWords] at the
// end, and a word holding the -I replacement string becomes [Computed].
// flock FILE -c CMD runs sh -c CMD.
func Unwrap(argv []string) (inner, env []string, ok bool) {
	if len(argv) == 0 {
		return nil, nil, false
	}
	w, ok := wrappers[argv[0]]
	if !ok {
		return nil, nil, false
	}
	takes := w.args
	args := argv[1:]
	replace := "" // xargs -I
	i := 0
	for i < len(args) {
		a := args[i]
		if IsComputed(a) {
			return nil, env, true
		}
		if a == "--" {
			i++
			break
		}
		if a == "-" && argv[0] == "env" {
			i++ // env - is env -i
			continue
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			if (argv[0] == "env" || argv[0] == "sudo") && strings.Contains(a, "=") {
				env = append(env, a)
				i++
				continue
			}
			break
		}
		if argv[0] == "env" && envOpaque(a) {
			return nil, env, true
		}
		if argv[0] == "time" && timeWrites(a) {
			return nil, env, true
		}
		if argv[0] == "command" && strings.ContainsAny(a, "vV") {
			return []string{}, env, true // a lookup, runs nothing
		}
		if argv[0] == "sudo" && (a == "-s" || a == "-i" || a == "--shell" || a == "--login") {
			return nil, env, true // the command goes to a shell as one string
		}
		if strings.HasPrefix(a, "--") {
			i++
			if !strings.Contains(a, "=") && longTakesArg(argv[0], a) {
				i++
			}
			continue
		}
		if argv[0] == "xargs" && (a == "-I" || a == "-i" || strings.HasPrefix(a, "-I") || strings.HasPrefix(a, "-i")) {
			replace = "{}"
			if a == "-I" && i+1 < len(args) {
				replace = args[i+1]
			} else if len(a) > 2 {
				replace = a[2:]
			}
		}
		// -n5 carries its argument; -n 5 takes the next word.
		if len(a) == 2 && strings.ContainsRune(takes, rune(a[1])) {
			i += 2
			continue
		}
		if argv[0] == "nice" && isDigits(a[1:]) {
			i++
			continue
		}
		i++
	}
	rest := args[min(i, len(args)):]
	switch argv[0] {
	case "timeout":
		if len(rest) > 0 {
			rest = rest[1:] // the duration
		}
	case "chrt", "taskset":
		if len(rest) > 0 {
			rest = rest[1:] // priority or mask
		}
	case "flock":
		if len(rest) > 0 {
			rest = rest[1:] // the lock file
		}
		if len(rest) == 2 && (rest[0] == "-c" || rest[0] == "--command") {
			rest = []string{"sh", "-c", rest[1]} // flock FILE -c CMD runs sh -c CMD
		}
	case "xargs":
		if len(rest) == 0 {
			rest = []string{"echo"}
		}
		// xargs adds the words it reads, or puts them where -I says.
		rest = append([]string(nil), rest...)
		if replace != "" {
			for k := 1; k < len(rest); k++ {
				if strings.Contains(rest[k], replace) {
					rest[k] = Computed
				}
			}
		}
		rest = append(rest, ComputedWords)
	}
	if len(rest) == 0 {
		if argv[0] == "command" || argv[0] == "exec" || argv[0] == "builtin" {
			return []string{}, env, true
		}
		return nil, env, true
	}
	if IsComputed(rest[0]) {
		return nil, env, true
	}
	return rest, env, true
}

func longTakesArg(wrapper, opt string) bool {
	switch wrapper + " " + opt {
	case "env --unset", "env --chdir", "sudo --user", "sudo --group", "sudo --host", "sudo --prompt",
		"timeout --signal", "timeout --kill-after", "nice --adjustment", "xargs --max-args",
		"xargs --max-procs", "xargs --delimiter", "xargs --arg-file", "xargs --replace",
		"ionice --class", "ionice --classdata", "stdbuf --input", "stdbuf --output", "stdbuf --error":
		return true
	}
	return false
}

func isDigits(v string) bool {
	if v == "" {
		return false
	}
	for i := 0; i < len(v); i++ {
		if v[i] < '0' || v[i] > '9' {
			return false
		}
	}
	return true
}

// chdirOpts are, per program, its options that name the directory it
// moves to before it opens its arguments.
var chdirOpts = map[string][]string{
	"tar": {"-C", "--directory"}, "git": {"-C"}, "make": {"-C", "--directory"},
	"env": {"-C", "--chdir"}, "sudo": {"-D", "--chdir"}, "go": {"-C"}, "cargo": {"-C"},
	"npm": {"--prefix", "-C"},
}

// ChdirOption returns, for program prog, its options after which it opens
// its arguments in another directory (git -C DIR, tar --directory=DIR),
// and whether it has any.
func ChdirOption(prog string) ([]string, bool) {
	o, ok := chdirOpts[prog]
	return o, ok
}

// envOpaque reports whether env's option a makes the command it runs
// unknown: -S (--split-string, which GNU accepts abbreviated to --s)
// splits a string into a command line, in a cluster too (-vS).
func envOpaque(a string) bool {
	if strings.HasPrefix(a, "--") {
		name, _, _ := strings.Cut(a[2:], "=")
		return name != "" && strings.HasPrefix("split-string", name)
	}
	return strings.ContainsRune(a[1:], 'S')
}

// timeWrites reports whether time's option a writes a file (-o FILE,
// --output, -a/--append; abbreviations and clusters too).
func timeWrites(a string) bool {
	if strings.HasPrefix(a, "--") {
		name, _, _ := strings.Cut(a[2:], "=")
		return name != "" && (strings.HasPrefix("output", name) || strings.HasPrefix("append", name))
	}
	return strings.ContainsAny(a[1:], "oa")
}
