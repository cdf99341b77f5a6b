package command

import (
	"slices"
	"strings"
)

// ro is what a read-only program may be given and still only read and
// print: an allowlist, not a list of what is risky. A GNU or git option
// may be abbreviated (--o for --output), clustered (-ne, -vS) or carry its
// value attached (-Ocmd), and a file name may begin with a dash; only
// words this table names exactly are options the program is known to
// read with. Anything else makes the command not read-only: it is then
// asked, as any command is.
type ro struct {
	// flags are the single-letter options allowed, alone or clustered
	// (-la); values are the letters among them that take a value, in the
	// next word or attached (-n 5, -n5).
	flags, values string
	// longs are the long options allowed, exactly; a long in longValues
	// takes a value (--max-count=5 or --max-count 5).
	longs, longValues []string
	// numeric allows -N (head -5, git log -3).
	numeric bool
	// maxOperands bounds the words that are not options (-1: no bound):
	// uniq IN OUT writes OUT.
	maxOperands int
}

// readOnly is the allowlist of programs that only read files and print.
// Left out on purpose, though Claude Code may treat them as read-only:
// sed and awk (programs that run commands and write files: sed e and w,
// awk system() and print >), rg (--pre, -z run programs), sort (-o,
// --compress-program), xxd (-r writes), tree (-o), file (-C), fd (-x),
// date (-s), diff and grep with recursion (they read every file of a
// directory, denied ones too), jq (--rawfile reads any file, env).
var readOnly = map[string]ro{
	"ls":        {flags: "aAlhRtrSsd1FGiopnucCmxXvQqgU", longs: []string{"--all", "--almost-all", "--human-readable", "--recursive", "--reverse", "--color", "--color=auto", "--color=never", "--color=always", "--classify", "--directory", "--inode", "--size"}, maxOperands: -1},
	"cat":       {flags: "nbAsveET", longs: []string{"--number", "--number-nonblank", "--show-all", "--squeeze-blank"}, maxOperands: -1},
	"head":      {flags: "ncqvz", values: "nc", numeric: true, longs: []string{"--quiet", "--verbose"}, longValues: []string{"--lines", "--bytes"}, maxOperands: -1},
	"tail":      {flags: "ncqvz", values: "nc", numeric: true, longs: []string{"--quiet", "--verbose"}, longValues: []string{"--lines", "--bytes"}, maxOperands: -1},
	"wc":        {flags: "lwcmL", longs: []string{"--lines", "--words", "--bytes", "--chars", "--max-line-length"}, maxOperands: -1},
	"grep":      {flags: "inlLcvwxoEFGHhsqIaZ", values: "eABCm", numeric: true, longs: []string{"--ignore-case", "--line-number", "--count", "--invert-match", "--word-regexp", "--line-regexp", "--only-matching", "--extended-regexp", "--fixed-strings", "--files-with-matches", "--files-without-match", "--color", "--color=auto", "--color=never", "--color=always", "--no-filename", "--with-filename", "--quiet", "--silent"}, longValues: []string{"--regexp", "--max-count", "--after-context", "--before-context", "--context"}, maxOperands: -1},
	"egrep":     {flags: "inlLcvwxoHhsqI", values: "eABCm", numeric: true, maxOperands: -1},
	"fgrep":     {flags: "inlLcvwxoHhsqI", values: "eABCm", numeric: true, maxOperands: -1},
	"pwd":       {flags: "LP"},
	"echo":      {flags: "neE", maxOperands: -1},
	"true":      {maxOperands: -1},
	"false":     {maxOperands: -1},
	"which":     {flags: "a", maxOperands: -1},
	"whoami":    {},
	"id":        {flags: "ugGnr", maxOperands: 1},
	"uname":     {flags: "asnrvmpio"},
	"basename":  {flags: "asz", values: "s", maxOperands: -1},
	"dirname":   {flags: "z", maxOperands: -1},
	"realpath":  {flags: "esmqzLP", maxOperands: -1},
	"readlink":  {flags: "fesmnqvz", maxOperands: -1},
	"stat":      {flags: "L", maxOperands: -1},
	"du":        {flags: "shacbkmxL", values: "d", longs: []string{"--summarize", "--human-readable", "--all", "--total"}, longValues: []string{"--max-depth"}, maxOperands: -1},
	"df":        {flags: "hHTikPl", maxOperands: -1},
	"cut":       {flags: "snz", values: "dfcb", longValues: []string{"--delimiter", "--fields", "--characters", "--bytes"}, maxOperands: -1},
	"tr":        {flags: "dsc", maxOperands: 2},
	"nl":        {flags: "ba", maxOperands: 1},
	"tac":       {maxOperands: -1},
	"rev":       {maxOperands: -1},
	"seq":       {flags: "w", values: "s", maxOperands: 3},
	"md5sum":    {flags: "cb", maxOperands: -1},
	"sha1sum":   {flags: "cb", maxOperands: -1},
	"sha256sum": {flags: "cb", maxOperands: -1},
	"sha512sum": {flags: "cb", maxOperands: -1},
	"test":      {maxOperands: -1},
	"[":         {maxOperands: -1},
	"cd":        {maxOperands: 1},
	"find":      {maxOperands: -1}, // its expression: findReadOnly
}

// gitReadOnly are git's subcommands that only read the repository, with
// the options each may take (their operands are revisions and paths).
// Left out: --output, --ext-diff, --textconv, -O/--open-files-in-pager,
// --no-index (it compares any two files of the host).
var gitReadOnly = map[string]ro{
	"status":     {flags: "sbuv", longs: []string{"--short", "--branch", "--porcelain", "--long", "--untracked-files=no", "--untracked-files=normal", "--untracked-files=all", "--ignored"}, maxOperands: -1},
	"log":        {flags: "p", values: "n", numeric: true, longs: []string{"--oneline", "--graph", "--decorate", "--stat", "--shortstat", "--name-only", "--name-status", "--all", "--reverse", "--patch", "--no-merges", "--merges", "--first-parent", "--abbrev-commit", "--no-color", "--color"}, longValues: []string{"--max-count", "--since", "--until", "--after", "--before", "--author", "--grep", "--format", "--pretty"}, maxOperands: -1},
	"diff":       {flags: "wbRU", longs: []string{"--stat", "--cached", "--staged", "--name-only", "--name-status", "--numstat", "--shortstat", "--word-diff", "--color", "--no-color", "--ignore-all-space", "--check"}, maxOperands: -1},
	"show":       {flags: "s", longs: []string{"--stat", "--oneline", "--name-only", "--name-status", "--no-patch", "--format=%H", "--color", "--no-color"}, longValues: []string{"--format", "--pretty"}, maxOperands: -1},
	"rev-parse":  {longs: []string{"--show-toplevel", "--git-dir", "--abbrev-ref", "--short", "--verify", "--is-inside-work-tree", "--show-prefix", "--symbolic-full-name"}, maxOperands: -1},
	"ls-files":   {flags: "cdmoistz", longs: []string{"--cached", "--deleted", "--modified", "--others", "--ignored", "--stage", "--exclude-standard"}, maxOperands: -1},
	"blame":      {flags: "lstw", values: "L", maxOperands: -1},
	"describe":   {longs: []string{"--tags", "--always", "--dirty", "--abbrev=0", "--long"}, maxOperands: -1},
	"shortlog":   {flags: "sne", maxOperands: -1},
	"ls-tree":    {flags: "rdtz", longs: []string{"--name-only", "--full-tree"}, maxOperands: -1},
	"rev-list":   {values: "n", longs: []string{"--count", "--all"}, longValues: []string{"--max-count"}, maxOperands: -1},
	"merge-base": {longs: []string{"--is-ancestor", "--all"}, maxOperands: -1},
	"show-ref":   {longs: []string{"--heads", "--tags"}, maxOperands: -1},
	"branch":     {flags: "avr", longs: []string{"--list", "--all", "--show-current", "--remotes", "--verbose"}, maxOperands: 0},
}

// ReadOnly reports whether argv, one simple command, only reads files and
// prints: a program of the read-only allowlist (ls, cat, head, grep
// without recursion, find, git status, log, diff, show, ...) reached
// through neutral wrappers and global options only ([Run]), every word
// literal (a computed word or a pathname pattern may become any option:
// a file named --output=x), every option one the allowlist names, and no
// risky flag ([Risky]) nor file written by an argument ([Writes]). Where
// the files it reads may be is the caller's to decide (a denied file
// stays denied).
func ReadOnly(argv []string) bool {
	run, neutral := Run(argv)
	if !neutral || len(run) == 0 {
		return false
	}
	for _, a := range run {
		if IsComputed(a) {
			return false
		}
	}
	if _, risky := Risky(run); risky || len(Writes(run)) > 0 {
		return false
	}
	switch run[0] {
	case "git":
		if len(run) < 2 {
			return false
		}
		spec, ok := gitReadOnly[run[1]]
		// REV:PATH names a file's content in the repository (git show
		// HEAD:.env): a read of PATH ([RevPaths]), which the caller
		// decides as any other, when git is run as written, at the top
		// of the workspace; through a wrapper or a global option (git -C
		// sub show HEAD:x reads sub's x) it is asked.
		if slices.ContainsFunc(run[2:], func(a string) bool { return strings.Contains(a, ":") }) &&
			!(revReaders[run[1]] && len(argv) > 1 && argv[0] == "git" && argv[1] == run[1]) {
			return false
		}
		return ok && spec.allows(run[2:])
	case "find":
		return findReadOnly(run[1:])
	}
	spec, ok := readOnly[run[0]]
	return ok && spec.allows(run[1:])
}

// allows reports whether args are options of the allowlist and at most
// maxOperands operands. After "--" every word is an operand.
func (r ro) allows(args []string) bool {
	operands := 0
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			operands += len(args) - i - 1
			i = len(args)
		case a == "-" || !strings.HasPrefix(a, "-"):
			operands++ // "-" is standard input, or an operand (uniq - OUT)
		case strings.HasPrefix(a, "--"):
			skip, ok := r.long(a)
			if !ok {
				return false
			}
			i += skip
		default:
			skip, ok := r.short(a[1:])
			if !ok {
				return false
			}
			i += skip
		}
	}
	return r.maxOperands < 0 || operands <= r.maxOperands
}

// long checks one long option; skip is 1 when its value is the next word.
func (r ro) long(a string) (skip int, ok bool) {
	for _, l := range r.longs {
		if a == l {
			return 0, true
		}
	}
	name, _, hasValue := strings.Cut(a, "=")
	for _, l := range r.longValues {
		if name == l {
			if hasValue {
				return 0, true
			}
			return 1, true
		}
	}
	return 0, false
}

// short checks one cluster of single-letter options (the word without
// its dash); skip is 1 when its last letter takes the next word as value.
func (r ro) short(cluster string) (skip int, ok bool) {
	if r.numeric && isDigits(cluster) {
		return 0, true
	}
	for i, c := range cluster {
		if !strings.ContainsRune(r.flags+r.values, c) {
			return 0, false
		}
		if strings.ContainsRune(r.values, c) {
			if i+1 < len(cluster) {
				return 0, true // -n5: the rest is the value
			}
			return 1, true
		}
	}
	return 0, true
}

// findPredicates are find's predicates that only test or print names,
// with whether each takes a value. Left out: -exec, -execdir, -ok,
// -okdir, -delete, -fprint*, -fls (they run or write), -L and -follow.
var findPredicates = map[string]bool{
	"-name": true, "-iname": true, "-path": true, "-ipath": true, "-type": true, "-maxdepth": true,
	"-mindepth": true, "-size": true, "-mtime": true, "-mmin": true, "-newer": true, "-user": true,
	"-empty": false, "-print": false, "-print0": false, "-not": false, "-and": false, "-or": false,
	"-o": false, "-a": false, "!": false, "(": false, ")": false, "-prune": false, "-true": false,
	"-false": false, "-readable": false, "-executable": false,
}

// findReadOnly reports whether find's arguments are starting points
// followed by predicates of findPredicates only.
func findReadOnly(args []string) bool {
	i := 0
	for i < len(args) && !strings.HasPrefix(args[i], "-") && args[i] != "!" && args[i] != "(" {
		i++ // starting points
	}
	for ; i < len(args); i++ {
		takes, ok := findPredicates[args[i]]
		if !ok {
			return false
		}
		if takes {
			i++
		}
	}
	return true
}
