package command

import (
	"path/filepath"
	"strings"
)

// fileOps are the file-system commands Claude Code's acceptEdits mode
// runs without asking (its permission-modes documentation: mkdir, touch,
// rm, rmdir, mv, cp and sed).
var fileOps = map[string]bool{"mkdir": true, "touch": true, "rm": true, "rmdir": true, "mv": true, "cp": true, "sed": true}

// FileOp reports whether argv, one simple command as written, is a
// file-system command that the acceptEdits mode runs without asking, as
// Claude Code's does: mkdir, touch, rm, rmdir, mv, cp, or sed whose
// scripts neither run a command nor read or write a file of their own
// (sed -i edits its operands; no -f, no e, r or w commands). Every word
// is literal (no expansion, no pathname pattern) and every operand and
// option value is a path below the working directory, written relative
// and without .. (not ., not /abs, not ~): a command that reaches
// anywhere else asks. The program is named as written: no wrapper, no
// path to it.
//
// Which files it writes is still the policy's and the rules' to decide
// ([Writes]: a deny of Edit(./x/**) denies rm x/a).
func FileOp(argv []string) bool {
	if len(argv) < 2 || !fileOps[argv[0]] {
		return false
	}
	args := argv[1:]
	script := -1 // sed's script operand, when no -e gives one
	if argv[0] == "sed" {
		if _, risky := sedScripts(args); risky {
			return false
		}
		script = sedScriptOperand(args)
		if script == -2 {
			return false
		}
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
		if !operands && strings.HasPrefix(a, "-") {
			if argv[0] == "sed" {
				switch {
				case a == "-e" || a == "--expression":
					value = true
					continue
				case strings.HasPrefix(a, "-e") || strings.HasPrefix(a, "--expression="):
					continue
				case a == "--file" || strings.HasPrefix(a, "--file=") ||
					len(a) > 1 && a[1] != '-' && strings.ContainsRune(a[1:], 'f'):
					return false // a script read from a file
				}
			}
			if _, v, ok := strings.Cut(a, "="); ok && strings.HasPrefix(a, "--") && !localPath(v) {
				return false
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
