package command

import (
	"strings"
)

// risk lists, for one program, what makes it write, execute or delete
// beyond what its name says.
type risk struct {
	// words are options that are risky as a word, or as --opt=value.
	words []string
	// short are the letters that are risky inside a short-option cluster
	// (-uo for sort, -xzf for tar, -ni for sed).
	short string
	// bareCluster: the first argument may be an option cluster without
	// its dash (tar xzf a.tgz).
	bareCluster bool
	// prefixes are argument prefixes that are risky (dd of=, curl @file).
	prefixes []string
	// script checks the arguments for a program text that writes or runs
	// something (sed 's/x/y/w f', awk 'system(...)').
	script func(args []string) (string, bool)
}

// risks is the per-command table of flags that write, execute or delete.
var risks = map[string]risk{
	"find": {words: []string{"-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls", "-files0-from"}},
	"fd":   {words: []string{"-x", "--exec", "-X", "--exec-batch"}},
	"git": {words: []string{"--output", "--ext-diff", "--upload-pack", "--receive-pack", "--exec", "-x", "-O",
		"--open-files-in-pager"}},
	"sort":  {words: []string{"-o", "--output", "--compress-program"}, short: "o"},
	"sed":   {words: []string{"-i", "--in-place", "-f", "--file"}, short: "if", script: sedScripts},
	"tar":   {words: tarWords, short: "xcruAFI", bareCluster: true},
	"rsync": {words: []string{"-e", "--rsh", "--rsync-path", "--delete", "--del", "--delete-before", "--delete-during", "--delete-delay", "--delete-after", "--delete-excluded", "--remove-source-files"}, short: "e"},
	"curl": {words: []string{"-o", "--output", "-O", "--remote-name", "--remote-name-all", "--output-dir", "-K", "--config",
		"-T", "--upload-file", "-D", "--dump-header", "-c", "--cookie-jar", "--trace", "--trace-ascii", "--libcurl", "--stderr", "--create-dirs"},
		short: "oOKTDc", prefixes: []string{"@"}, script: curlData},
	"wget": {words: []string{"-O", "--output-document", "-o", "--output-file", "-a", "--append-output", "--post-file", "--body-file",
		"-P", "--directory-prefix", "--use-askpass", "-x", "--force-directories"}, short: "OoaPx"},
	"rg":   {words: []string{"--pre"}},
	"go":   {words: []string{"-exec", "-toolexec"}},
	"jq":   {words: []string{"-f", "--from-file", "--rawfile", "--slurpfile", "-L", "--library-path"}, script: jqEnv},
	"awk":  {words: []string{"-f", "--file"}, script: awkProgram},
	"date": {words: []string{"-s", "--set"}, short: "s"},
	"dd":   {prefixes: []string{"of="}},
	"ssh":  {words: []string{"-F"}, script: sshCommand},
}

var tarWords = []string{"-x", "--extract", "--get", "-c", "--create", "-r", "--append", "-u", "--update", "-A", "--catenate",
	"--concatenate", "--delete", "--to-command", "--use-compress-program", "-I", "--checkpoint-action", "--info-script",
	"-F", "--new-volume-script", "--rsh-command", "--rmt-command"}

// riskAliases are other names of the programs of the table.
var riskAliases = map[string]string{"fdfind": "fd", "gsed": "sed", "gtar": "tar", "bsdtar": "tar",
	"gawk": "awk", "mawk": "awk", "nawk": "awk", "gojq": "jq", "gsort": "sort"}

// Risky returns the first word of run (a command as [Run] returns it)
// that makes it write, execute or delete beyond what its name says,
// from the per-command table: find -exec, -execdir, -ok, -okdir,
// -delete, -fprint*; fd -x; git --output, --ext-diff, --upload-pack,
// --exec, -O; sort -o; sed -i and scripts with the w, e or r commands;
// tar -x, -c, --to-command; rsync -e, --delete; curl -o, -T, -K, @file;
// wget -O; rg --pre; go -exec, -toolexec; jq env; awk system(), pipes
// and output redirection; date -s; dd of=; ssh ProxyCommand. ok is
// false when none does.
//
// The table is of flags; what a command does by its name (rm deletes,
// cp writes) is the rule's to name. A prefix or wildcard allow rule does
// not cover a command Risky reports, unless the rule writes the word
// itself (Bash(sort -o:*)).
func Risky(run []string) (word string, ok bool) {
	if len(run) < 2 {
		return "", false
	}
	prog := run[0]
	if a, ok := riskAliases[prog]; ok {
		prog = a
	}
	r, found := risks[prog]
	if !found {
		return "", false
	}
	for i, a := range run[1:] {
		if a == "" || IsComputed(a) || a[0] != '-' && r.prefixes == nil && !(i == 0 && r.bareCluster) {
			continue // an operand: only options and prefixes are risky
		}
		for _, w := range r.words {
			if a == w || len(a) > len(w) && a[len(w)] == '=' && strings.HasPrefix(w, "--") && strings.HasPrefix(a, w) {
				return a, true
			}
			if abbrev(a, w) {
				return a, true // --out for --output: GNU getopt takes a prefix
			}
		}
		for _, p := range r.prefixes {
			if strings.HasPrefix(a, p) {
				return a, true
			}
		}
		if r.short != "" {
			cluster := len(a) > 2 && a[0] == '-' && a[1] != '-'
			if i == 0 && r.bareCluster && a != "" && a[0] != '-' && letters(a) {
				cluster = true
			}
			if cluster && strings.ContainsAny(strings.TrimPrefix(a, "-"), r.short) {
				return a, true
			}
		}
	}
	if r.script != nil {
		return r.script(run[1:])
	}
	return "", false
}

// abbrev reports whether a, a long option (with or without =value), is
// a shorter prefix of the long option w, as GNU getopt_long accepts it
// (--expr for --expression). An ambiguous prefix counts: a caller that
// asks about a risky option errs toward asking.
func abbrev(a, w string) bool {
	name, _, _ := strings.Cut(a, "=")
	return len(name) > 2 && len(name) < len(w) && strings.HasPrefix(name, "--") && strings.HasPrefix(w, "--") && strings.HasPrefix(w, name)
}

func letters(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

// sedScripts checks sed's scripts: the -e values, else the first operand.
func sedScripts(args []string) (string, bool) {
	var scripts []string
	first := "" // the first operand
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-e" || a == "--expression" || abbrev(a, "--expression") && !strings.Contains(a, "="):
			if i+1 < len(args) {
				scripts = append(scripts, args[i+1])
				i++
			}
		case strings.HasPrefix(a, "--expression=") || abbrev(a, "--expression"):
			_, v, _ := strings.Cut(a, "=")
			scripts = append(scripts, v)
		case a == "--":
			if first == "" && i+1 < len(args) {
				first = args[i+1]
			}
			i = len(args)
		case !strings.HasPrefix(a, "-") || a == "-":
			if first == "" {
				first = a
			}
		case len(a) > 1 && a[0] == '-' && a[1] != '-':
			// A cluster, read as GNU getopt reads it: -e takes the rest
			// of the cluster or the next word (-ne SCRIPT, -es/a/b/), -l
			// a number likewise, -i the rest as its suffix.
		cluster:
			for j := 1; j < len(a); j++ {
				switch a[j] {
				case 'e', 'l':
					v := a[j+1:]
					if v == "" && i+1 < len(args) {
						i++
						v = args[i]
					}
					if a[j] == 'e' {
						scripts = append(scripts, v)
					}
					break cluster
				case 'i':
					break cluster
				}
			}
		case (a == "--line-length" || abbrev(a, "--line-length")) && !strings.Contains(a, "="):
			i++
		}
	}
	if len(scripts) == 0 && first != "" {
		scripts = append(scripts, first)
	}
	for _, s := range scripts {
		if IsComputed(s) || sedRisky(s) {
			return s, true
		}
	}
	return "", false
}

// sedRisky reports whether a sed script may write a file, read one into
// its output or run a command: a w, W, r, R or e command, or an s command
// with the w or e flag. A script it cannot follow is risky.
func sedRisky(s string) bool {
	i := 0
	space := func(c byte) bool { return c == ' ' || c == '\t' || c == '\v' || c == '\f' || c == '\r' }
	skipSpace := func() {
		for i < len(s) && space(s[i]) {
			i++
		}
	}
	// part skips a delimited part (a regex, a replacement) ending in d;
	// in a regex a bracket expression may hold d ([/]).
	part := func(d byte, regex bool) bool {
		for i < len(s) {
			switch s[i] {
			case '\\':
				i += 2
				continue
			case '[':
				if !regex {
					break
				}
				j := i + 1
				if j < len(s) && s[j] == '^' {
					j++
				}
				if j < len(s) && s[j] == ']' {
					j++
				}
				for j < len(s) && s[j] != ']' {
					if s[j] == '[' && j+1 < len(s) && (s[j+1] == ':' || s[j+1] == '.' || s[j+1] == '=') {
						k := strings.Index(s[j+2:], string(s[j+1])+"]")
						if k < 0 {
							return false
						}
						j += k + 4
						continue
					}
					j++
				}
				if j >= len(s) {
					return false
				}
				i = j + 1
				continue
			case d:
				i++
				return true
			case '\n':
				if d != '\n' {
					return false
				}
			}
			i++
		}
		return false
	}
	for i < len(s) {
		skipSpace()
		if i >= len(s) {
			break
		}
		switch c := s[i]; {
		case c == ';' || c == '\n' || c == '{' || c == '}':
			i++
			continue
		case c == '#':
			for i < len(s) && s[i] != '\n' {
				i++
			}
			continue
		}
		// An address: a number, $, /regex/ or \cregexc, with a step,
		// a range and a negation.
	address:
		for i < len(s) {
			c := s[i]
			switch {
			case c >= '0' && c <= '9' || c == '$' || c == ',' || c == '~' || c == '+' || c == '!' || space(c):
				i++
				continue
			case c == '/':
				i++
				if !part('/', true) {
					return true
				}
				for i < len(s) && (s[i] == 'I' || s[i] == 'M') {
					i++
				}
				continue
			case c == '\\' && i+1 < len(s):
				d := s[i+1]
				i += 2
				if !part(d, true) {
					return true
				}
				for i < len(s) && (s[i] == 'I' || s[i] == 'M') {
					i++
				}
				continue
			}
			break address
		}
		if i >= len(s) {
			break
		}
		switch c := s[i]; c {
		case '{', '}', ';', '\n':
			i++ // a block after an address (1{e cmd}): its commands follow
		case 'w', 'W', 'r', 'R', 'e':
			return true
		case 's', 'y':
			if i+1 >= len(s) {
				return true
			}
			d := s[i+1]
			if d == '\\' || d == '\n' {
				return true
			}
			i += 2
			if !part(d, c == 's') || !part(d, false) {
				return true
			}
			if c == 's' {
				for i < len(s) && s[i] != ';' && s[i] != '\n' && s[i] != '}' {
					if f := s[i]; f == 'w' || f == 'W' || f == 'e' {
						return true
					}
					i++
				}
			}
		case ':', 'b', 't', 'T', 'v':
			// A label or version: GNU sed ends it at white space, and a
			// command may follow (:a 1e cmd).
			i++
			skipSpace()
			for i < len(s) && !space(s[i]) && s[i] != ';' && s[i] != '\n' && s[i] != '}' {
				i++
			}
		case 'a', 'i', 'c':
			// Text to the end of the line.
			for i < len(s) && s[i] != '\n' {
				if s[i] == '\\' {
					i++
				}
				i++
			}
		default:
			for i < len(s) && s[i] != ';' && s[i] != '\n' && s[i] != '}' {
				i++
			}
		}
	}
	return false
}

// awkProgram checks awk's program text (the first operand, when no -f
// gives one): system(), a pipe to or from a command, output redirected
// to a file.
func awkProgram(args []string) (string, bool) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "-F" || a == "-v" || a == "--field-separator" || a == "--assign" {
			i++
			continue
		}
		if strings.HasPrefix(a, "-") && a != "-" {
			continue
		}
		if IsComputed(a) || awkRisky(a) {
			return a, true
		}
		return "", false
	}
	return "", false
}

func awkRisky(p string) bool {
	if strings.Contains(p, "system") || strings.Contains(p, "|") || strings.Contains(p, ">>") {
		return true
	}
	for i := 0; i < len(p); i++ {
		if p[i] != '>' {
			continue
		}
		j := i + 1
		for j < len(p) && (p[j] == ' ' || p[j] == '\t') {
			j++
		}
		if j < len(p) && (p[j] == '"' || p[j] == '(' || p[j] == '$' || p[j] == '_' || p[j] >= 'a' && p[j] <= 'z' || p[j] >= 'A' && p[j] <= 'Z') {
			return true // print > "file", print > f
		}
	}
	return false
}

// jqEnv checks jq's operands for a filter that reads the environment
// (env, $ENV): secrets leave through the output.
func jqEnv(args []string) (string, bool) {
	for _, a := range args {
		if strings.HasPrefix(a, "-") {
			continue
		}
		if strings.Contains(a, "$ENV") || wordIn(a, "env") || wordIn(a, "input_filename") {
			return a, true
		}
	}
	return "", false
}

// wordIn reports whether w occurs in s as a whole identifier.
func wordIn(s, w string) bool {
	ident := func(c byte) bool {
		return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
	}
	for i := 0; ; {
		j := strings.Index(s[i:], w)
		if j < 0 {
			return false
		}
		j += i
		end := j + len(w)
		if (j == 0 || !ident(s[j-1])) && (end == len(s) || !ident(s[end])) {
			return true
		}
		i = j + 1
	}
}

// curlData checks curl's data options for a value read from a file
// (-d @file, --data-binary @file, -F name=@file): its content leaves.
func curlData(args []string) (string, bool) {
	for i, a := range args {
		if i+1 >= len(args) {
			break
		}
		switch a {
		case "-d", "--data", "--data-binary", "--data-raw", "--data-urlencode", "--json", "-F", "--form", "--form-string":
			if v := args[i+1]; strings.Contains(v, "@") && a != "--data-raw" && a != "--form-string" {
				return v, true
			}
		}
	}
	return "", false
}

// sshCommand checks ssh's -o options for one that runs a local command.
func sshCommand(args []string) (string, bool) {
	for _, a := range args {
		l := strings.ToLower(a)
		if strings.Contains(l, "proxycommand") || strings.Contains(l, "localcommand") || strings.Contains(l, "knownhostscommand") {
			return a, true
		}
	}
	return "", false
}
