package command

import (
	"path"
	"slices"
	"strings"
)

// Written is a file a command writes (creates, changes, moves or
// removes), named by one of its arguments.
type Written struct {
	// Arg is the index in argv of the argument that names it.
	Arg int
	// Path is the file as written: the whole argument, or the value of
	// an option that holds it (--output=FILE, of=FILE).
	Path string
}

// operandCmd describes a command whose operands it writes.
type operandCmd struct {
	// takes are options that take a separate value (not a file written).
	takes []string
	// all: every operand is written (touch, rm, tee); otherwise only
	// the last one, the destination (cp, install, ln), unless a target
	// option names it.
	all bool
	// skip is how many leading operands are not files (chmod MODE).
	skip int
	// target are options whose value is the destination directory
	// (cp -t DIR).
	target []string
}

// operandCmds is the table of commands that write the files their
// operands name.
var operandCmds = map[string]operandCmd{
	"cp":       {takes: []string{"-S", "--suffix"}, target: []string{"-t", "--target-directory"}},
	"install":  {takes: []string{"-m", "--mode", "-o", "--owner", "-g", "--group", "-S", "--suffix"}, target: []string{"-t", "--target-directory"}},
	"ln":       {takes: []string{"-S", "--suffix"}, target: []string{"-t", "--target-directory"}},
	"mv":       {all: true, takes: []string{"-S", "--suffix"}, target: []string{"-t", "--target-directory"}},
	"tee":      {all: true},
	"touch":    {all: true, takes: []string{"-d", "--date", "-t", "-r", "--reference"}},
	"mkdir":    {all: true, takes: []string{"-m", "--mode"}},
	"rm":       {all: true},
	"rmdir":    {all: true},
	"unlink":   {all: true},
	"shred":    {all: true, takes: []string{"-n", "--iterations", "-s", "--size", "--random-source"}},
	"truncate": {all: true, takes: []string{"-s", "--size", "-r", "--reference"}},
	"chmod":    {all: true, skip: 1, takes: []string{"--reference"}},
	"chown":    {all: true, skip: 1, takes: []string{"--reference", "--from"}},
	"chgrp":    {all: true, skip: 1, takes: []string{"--reference"}},
}

// optionFiles are, per program, options whose value is a file it writes.
var optionFiles = map[string][]string{
	"sort": {"-o", "--output"},
	"git":  {"--output"},
	"curl": {"-o", "--output"},
	"wget": {"-O", "--output-document", "-o", "--output-file"},
}

// MayWrite reports whether a command run as prog may write a file its
// arguments name ([Writes] may find one): prog writes by the table, or
// runs another command (a wrapper), or is an assignment. A caller may
// skip Writes for any other.
func MayWrite(prog string) bool {
	if _, ok := operandCmds[prog]; ok {
		return true
	}
	if _, ok := optionFiles[prog]; ok {
		return true
	}
	switch prog {
	case "dd", "sed", "gsed":
		return true
	}
	return IsWrapper(prog) || isAssignment(prog) || IsComputed(prog)
}

// Writes returns the files argv writes by its arguments, from the table:
// the destination of cp, install and ln; every operand of mv, tee, touch,
// mkdir, rm, rmdir, unlink, shred, truncate; the files of chmod, chown and
// chgrp; dd of=FILE; the files sed -i edits; sort -o, git --output, curl
// -o and wget -O. Wrappers are looked through (sudo tee f). A computed
// word names no file here (what it is cannot be known: the command's
// other effects decide). Redirections are the shell's, not the
// command's, and are not among them.
func Writes(argv []string) []Written {
	off := 0
	for range maxDepth {
		if off >= len(argv) || IsComputed(argv[off]) {
			return nil
		}
		inner, _, ok := Unwrap(argv[off:])
		if !ok {
			break
		}
		if len(inner) == 0 || len(inner) > len(argv)-off || &inner[len(inner)-1] != &argv[len(argv)-1] {
			return nil // runs nothing, or words of its own (xargs)
		}
		off = len(argv) - len(inner)
	}
	for off < len(argv) && isAssignment(argv[off]) {
		off++
	}
	if off >= len(argv) {
		return nil
	}
	prog := path.Base(argv[off])
	args := argv[off+1:]
	var out []Written
	add := func(i int, p string) {
		if p != "" && !IsComputed(p) {
			out = append(out, Written{Arg: off + 1 + i, Path: p})
		}
	}
	if opts, ok := optionFiles[prog]; ok {
		for i, a := range args {
			for _, o := range opts {
				switch {
				case a == o && i+1 < len(args):
					add(i+1, args[i+1])
				case strings.HasPrefix(o, "--") && strings.HasPrefix(a, o+"="):
					add(i, a[len(o)+1:])
				case !strings.HasPrefix(o, "--") && len(a) > 2 && strings.HasPrefix(a, o):
					add(i, a[len(o):]) // -oFILE
				}
			}
		}
		return out
	}
	switch prog {
	case "dd":
		for i, a := range args {
			if v, ok := strings.CutPrefix(a, "of="); ok {
				add(i, v)
			}
		}
		return out
	case "sed", "gsed":
		sedInPlace(args, add)
		return out
	}
	c, ok := operandCmds[prog]
	if !ok {
		return nil
	}
	var operands []int
	target := -1
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			for j := i + 1; j < len(args); j++ {
				operands = append(operands, j)
			}
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			operands = append(operands, i)
			continue
		}
		name, _, eq := strings.Cut(a, "=")
		switch {
		case contains(c.target, a) && i+1 < len(args):
			target = i + 1
			i++
		case eq && contains(c.target, name):
			add(i, a[len(name)+1:])
			target = len(args)
		case len(a) > 2 && a[1] != '-' && contains(c.target, a[:2]):
			add(i, a[2:]) // -tDIR
			target = len(args)
		case contains(c.takes, a):
			i++
		case strings.HasPrefix(a, "--") && slices.ContainsFunc(c.target, func(t string) bool { return abbrev(name, t) }):
			// --target-dir=DIR, --t DIR: an abbreviation GNU getopt takes
			if eq {
				add(i, a[len(name)+1:])
				target = len(args)
			} else if i+1 < len(args) {
				target = i + 1
				i++
			}
		case strings.HasPrefix(a, "--") && !eq && slices.ContainsFunc(c.takes, func(t string) bool { return abbrev(name, t) }):
			i++
		case a[1] != '-':
			// A cluster holding the target's letter (-rt DIR, -rtDIR).
			for j := 2; j < len(a); j++ {
				if !contains(c.target, "-"+a[j:j+1]) {
					continue
				}
				if j+1 < len(a) {
					add(i, a[j+1:])
					target = len(args)
				} else if i+1 < len(args) {
					target = i + 1
					i++
				}
				break
			}
		}
	}
	if len(operands) <= c.skip {
		return out
	}
	operands = operands[c.skip:]
	switch {
	case target >= 0 && target < len(args):
		add(target, args[target])
		if c.all {
			for _, i := range operands {
				add(i, args[i])
			}
		}
	case target >= 0: // the target was an attached value, added above
		if c.all {
			for _, i := range operands {
				add(i, args[i])
			}
		}
	case c.all:
		for _, i := range operands {
			add(i, args[i])
		}
	case len(operands) >= 2:
		add(operands[len(operands)-1], args[operands[len(operands)-1]])
	}
	return out
}

// sedInPlace adds the files sed -i edits: its operands after the script
// (the first operand, unless -e or -f gives it).
func sedInPlace(args []string, add func(int, string)) {
	inPlace, script := false, false
	var operands []int
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			for j := i + 1; j < len(args); j++ {
				operands = append(operands, j)
			}
			i = len(args)
		case a == "-e" || a == "--expression" || a == "-f" || a == "--file":
			script = true
			i++
		case strings.HasPrefix(a, "--expression=") || strings.HasPrefix(a, "--file="):
			script = true
		case a == "-i" || strings.HasPrefix(a, "--in-place"):
			inPlace = true
		case strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && len(a) > 1:
			if i := strings.IndexAny(a, "ief"); i >= 0 {
				switch a[i] {
				case 'i':
					inPlace = true
				case 'e', 'f':
					script = true
				}
			}
		case !strings.HasPrefix(a, "-"):
			operands = append(operands, i)
		}
	}
	if !inPlace {
		return
	}
	if !script && len(operands) > 0 {
		operands = operands[1:]
	}
	for _, i := range operands {
		add(i, args[i])
	}
}

// revReaders are git's subcommands that print a file's content named
// REV:PATH (git show HEAD:.env, git cat-file -p :0:.env, git diff
// HEAD:a HEAD:b).
var revReaders = map[string]bool{"show": true, "cat-file": true, "diff": true}

// RevPaths returns the files a git command reads from the repository by
// a REV:PATH operand of git show, cat-file or diff (HEAD:.env,
// main:src/a.go, :.env and :0:.env from the index), as paths relative to
// the top of the repository, cleaned (a leading ./, relative to the
// working directory in git, is read as relative to the top as well). A
// search (:/text) and a computed word name no path. argv is one simple
// command as written; wrappers and global options are looked through
// ([Run]).
func RevPaths(argv []string) []string {
	run, _ := Run(argv)
	if len(run) < 3 || run[0] != "git" || !revReaders[run[1]] {
		return nil
	}
	var out []string
	for _, a := range run[2:] {
		if strings.HasPrefix(a, "-") || IsComputed(a) {
			continue
		}
		p, ok := revPath(a)
		if !ok {
			continue
		}
		if len(p) >= 2 && p[0] >= '0' && p[0] <= '3' && p[1] == ':' {
			p = p[2:] // :N:PATH, a stage of the index
		}
		if p == "" || strings.HasPrefix(p, "/") {
			continue
		}
		out = append(out, path.Clean(p))
	}
	return out
}

// revPath returns the PATH of a REV:PATH word: what follows the first
// colon outside braces, as git reads it (HEAD^{/fix: typo}:.env and
// HEAD@{1:00}:.env name .env). A brace left open names no path that can
// be known: the whole word is then taken for one, which a rule can only
// match broadly.
func revPath(a string) (string, bool) {
	depth := 0
	for i := 0; i < len(a); i++ {
		switch a[i] {
		case '{':
			depth++
		case '}':
			if depth > 0 {
				depth--
			}
		case ':':
			if depth == 0 {
				return a[i+1:], true
			}
		}
	}
	if depth > 0 && strings.Contains(a, ":") {
		_, p, _ := strings.Cut(a[strings.LastIndexByte(a, '}')+1:], ":")
		return p, p != ""
	}
	return "", false
}
