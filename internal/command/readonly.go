package command

// readOnly are the programs that only read files and print: with no
// risky flag ([Risky]) and none of their arguments a file they write
// ([Writes]), running one changes nothing but its output.
var readOnly = map[string]bool{
	"ls": true, "cat": true, "head": true, "tail": true, "wc": true, "grep": true, "egrep": true, "fgrep": true,
	"rg": true, "pwd": true, "echo": true, "printf": true, "true": true, "false": true, "which": true,
	"type": true, "file": true, "stat": true, "du": true, "df": true, "tree": true, "find": true, "fd": true,
	"fdfind": true, "sort": true, "cut": true, "tr": true, "nl": true, "diff": true, "cmp": true, "comm": true,
	"basename": true, "dirname": true, "realpath": true, "readlink": true, "date": true, "whoami": true,
	"id": true, "uname": true, "test": true, "[": true, "seq": true, "md5sum": true, "sha1sum": true,
	"sha256sum": true, "sha512sum": true, "od": true, "hexdump": true, "column": true, "fold": true,
	"tac": true, "rev": true, "expand": true, "unexpand": true, "paste": true, "join": true, "jq": true,
	"sed": true, "awk": true, "gawk": true, "cd": true, "uniq": true, "xxd": true,
}

// gitReadOnly are git's subcommands that only read the repository.
var gitReadOnly = map[string]bool{
	"status": true, "log": true, "diff": true, "show": true, "rev-parse": true, "ls-files": true,
	"blame": true, "grep": true, "describe": true, "shortlog": true, "ls-tree": true, "cat-file": true,
	"rev-list": true, "merge-base": true, "show-ref": true, "diff-tree": true,
	"diff-files": true, "diff-index": true, "for-each-ref": true,
}

// ReadOnly reports whether argv, one simple command, only reads files and
// prints: a program of the read-only table (ls, cat, head, grep, rg, find,
// sort, sed, awk, jq, git status, log, diff, show, ...) reached through
// neutral wrappers and global options only ([Run]), with no risky flag
// ([Risky]), writing no file by an argument ([Writes]), and, for uniq and
// xxd, no output operand. Where the files it reads may be is the
// caller's to decide (a denied file stays denied).
func ReadOnly(argv []string) bool {
	run, neutral := Run(argv)
	if !neutral || len(run) == 0 || IsComputed(run[0]) {
		return false
	}
	if _, risky := Risky(run); risky || len(Writes(run)) > 0 {
		return false
	}
	switch run[0] {
	case "git":
		return len(run) > 1 && gitReadOnly[run[1]]
	case "uniq", "xxd":
		// uniq IN OUT and xxd IN OUT write OUT.
		n := 0
		for _, a := range run[1:] {
			if a == "" || a[0] != '-' {
				n++
			}
		}
		return n <= 1
	case "sed":
		// Without -i it prints; its scripts were checked by Risky.
		return true
	}
	return readOnly[run[0]]
}
