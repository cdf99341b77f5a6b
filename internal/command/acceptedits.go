package command

import (
	"path/filepath"
	"slices"
	"strings"
)

// fileOps are the file-system commands Claude Code's acceptEdits mode
// runs without asking (its permission-modes documentation: mkdir, touch,
// rm, rmdir, mv, cp and sed), each with the options it may take there:
// an allowlist of short flags (in any cluster) and long options, none
// taking a value but sed's -e. Everything else (cp -t DIR, -S SUFFIX,
// -b, -l, -s, -L; mv -t; touch -r FILE; mkdir -m; sed -l N, -f, -i with a
// suffix; any abbreviation of a long option) changes which files are
// written or read, and asks.
var fileOps = map[string]fileOpts{
	"mkdir": {short: "pv", long: []string{"--parents", "--verbose"}},
	"touch": {short: "acm", long: []string{"--no-create"}},
	"rm":    {short: "rRfvid", long: []string{"--recursive", "--force", "--verbose", "--dir"}},
	"rmdir": {short: "pv", long: []string{"--parents", "--verbose", "--ignore-fail-on-non-empty"}},
	"mv":    {short: "fnvi", long: []string{"--force", "--no-clobber", "--verbose"}},
	"cp":    {short: "rRfnvipPu", long: []string{"--recursive", "--force", "--no-clobber", "--verbose", "--preserve", "--no-dereference"}},
	"sed": {short: "nErsz", long: []string{"--in-place", "--quiet", "--silent", "--regexp-extended", "--separate", "--null-data",
		"--posix", "--sandbox"}},
}

// fileOpts are the options a command of fileOps may take.
type fileOpts struct {
	short string
	long  []string
}

// FileOp reports whether argv, one simple command as written, is a
// file-system command that the acceptEdits mode runs without asking, as
// Claude Code's does: mkdir, touch, rm, rmdir, mv, cp, or sed whose
// scripts neither run a command nor read or write a file of their own
// (sed -i edits its operands; no -f, no e, r or w commands), with only
// the options of [fileOps]. Every word is literal (no expansion, no
// pathname pattern) and every operand is a path below the working
// directory, written relative and without .. (not ., not /abs, not ~): a
// command that reaches anywhere else asks. The program is named as
// written: no wrapper, no path to it.
//
// Which files it writes is still the policy's and the rules' to decide
// ([Writes]: a deny of Edit(./x/**) denies rm x/a).
func FileOp(argv []string) bool {
	if len(argv) < 2 {
		return false
	}
	opts, ok := fileOps[argv[0]]
	if !ok {
		return false
	}
	sed := argv[0] == "sed"
	args := argv[1:]
	script := -1 // sed's script operand, when no -e gives one
	if sed {
		if _, risky := sedScripts(args); risky {
			return false
		}
		script = sedScriptOperand(args)
	}
	operands, value := false, false
	for i, a := range args {
		if IsComputed(a) || a == "" {
			return false
		}
		if value {
			value = false // a sed -e script
			continue
		}
		if !operands && a == "--" {
			operands = true
			continue
		}
		if !operands && strings.HasPrefix(a, "-") && a != "-" {
			switch {
			case sed && (a == "-e" || a == "--expression"):
				value = true
			case sed && (strings.HasPrefix(a, "-e") && !strings.HasPrefix(a, "--") || strings.HasPrefix(a, "--expression=")):
			case sed && a == "-i":
			case strings.HasPrefix(a, "--"):
				if !slices.Contains(opts.long, a) {
					return false
				}
			default:
				c := a[1:]
				switch {
				case sed && strings.HasSuffix(c, "e"):
					c, value = c[:len(c)-1], true // -ne SCRIPT (-ie is -i with the suffix e: refused below)
				case sed && strings.HasSuffix(c, "i"):
					c = c[:len(c)-1] // -ni: -i last, without a suffix
				}
				for _, r := range c {
					if !strings.ContainsRune(opts.short, r) {
						return false
					}
				}
			}
			continue
		}
		if i == script {
			continue
		}
		if !localPath(a) {
			return false
		}
	}
	return true
}

// sedScriptOperand returns the index in args of sed's script operand:
// the first operand when no -e or --expression gives the script, -1 when
// one does, -2 when a script comes from a file (-f).
func sedScriptOperand(args []string) int {
	first := -1
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			if first < 0 && i+1 < len(args) {
				first = i + 1
			}
			i = len(args)
		case a == "-e" || a == "--expression" || strings.HasPrefix(a, "--expression=") ||
			strings.HasPrefix(a, "-e") && !strings.HasPrefix(a, "--"):
			return -1
		case a == "-f" || a == "--file" || strings.HasPrefix(a, "--file="):
			return -2
		case !strings.HasPrefix(a, "-") && first < 0:
			first = i
		}
	}
	return first
}

// localPath reports whether p names a path below the working directory
// (not the directory itself), as written: relative, without .., not
// starting with ~.
func localPath(p string) bool {
	if strings.HasPrefix(p, "~") || !filepath.IsLocal(p) {
		return false
	}
	return filepath.Clean(p) != "."
}
