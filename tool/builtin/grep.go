package builtin

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"regexp/syntax"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/tool"
)

// Grep limits.
const (
	// DefaultGrepHeadLimit is how many lines (content) or files the output
	// holds without head_limit.
	DefaultGrepHeadLimit = 250
	// MaxGrepFileBytes: larger files are skipped.
	MaxGrepFileBytes = 16 << 20
	// maxGrepLineChars cuts long matching lines in content output.
	maxGrepLineChars = 500
	// maxGrepContext bounds context lines.
	maxGrepContext = 20
)

// Grep output modes.
const (
	grepContent = "content"
	grepFiles   = "files_with_matches"
	grepCount   = "count"
)

type grepArgs struct {
	Pattern         string   `json:"pattern"`
	Path            string   `json:"path"`
	Include         []string `json:"include"`
	OutputMode      string   `json:"output_mode"`
	Context         int      `json:"context"`
	CaseInsensitive bool     `json:"case_insensitive"`
	HeadLimit       int      `json:"head_limit"`
}

func grepTool() tool.Spec {
	return tool.Spec{
		Name:        "Grep",
		Description: "Search workspace files with a regular expression.",
		Prompt: "Searches file contents with an RE2 regular expression (Go syntax: no backreferences or lookaround), line by line like grep: a match never spans a line end, and a pattern with a newline (\\n) is refused. " +
			"output_mode: files_with_matches (default: the paths of matching files), content (path:line:text, with context lines around each match), or count (path:matching-line count). " +
			"include limits the search to files matching any of its globs (a glob without / is matched against the file name, e.g. *.go; with / against the path). " +
			"Binary files, files over 16 MiB, .git and node_modules are skipped; denied files and directories are never read or entered. Output is sorted by path and bounded by head_limit (default 250).",
		Schema: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["pattern"],"properties":{` +
			`"pattern":{"type":"string","minLength":1,"maxLength":4096},"path":{"type":"string","minLength":1,"maxLength":4096},` +
			`"include":{"type":"array","maxItems":32,"items":{"type":"string","minLength":1,"maxLength":256}},` +
			`"output_mode":{"enum":["content","files_with_matches","count"],"default":"files_with_matches"},` +
			`"context":{"type":"integer","minimum":0,"maximum":20},"case_insensitive":{"type":"boolean"},` +
			`"head_limit":{"type":"integer","minimum":1,"maximum":5000}}}`),
		ReadOnly:         yes,
		ConcurrencySafe:  yes,
		CheckPermissions: allow,
		Accesses:         searchAccess("path"),
		Call: func(ctx context.Context, env tool.Env, in tool.Input) (tool.Result, error) {
			var a grepArgs
			if err := in.Decode(&a); err != nil {
				return tool.Result{}, fail(capability.ReasonInvalidRequest, "%v", err)
			}
			out, err := grep(ctx, env, a)
			return tool.Result{Content: out}, err
		},
	}
}

// matcher finds matching lines in a file's content.
type matcher struct {
	re       *regexp.Regexp
	prefix   []byte // a literal every match starts with
	literal  bool   // the whole expression is prefix
	include  []string
	mode     string
	context  int
	maxLines int
}

func newMatcher(a grepArgs) (*matcher, error) {
	re, err := lineRegexp(a.Pattern, a.CaseInsensitive)
	if err != nil {
		return nil, err
	}
	for _, g := range a.Include {
		if err := validRelPattern(g); err != nil {
			return nil, err
		}
	}
	m := &matcher{re: re, include: a.Include, mode: a.OutputMode, context: min(max(a.Context, 0), maxGrepContext), maxLines: a.HeadLimit}
	if m.mode == "" {
		m.mode = grepFiles
	}
	if m.maxLines <= 0 {
		m.maxLines = DefaultGrepHeadLimit
	}
	p, complete := re.LiteralPrefix()
	m.prefix, m.literal = []byte(p), complete && p != "" && !strings.Contains(p, "\n")
	return m, nil
}

// lineRegexp compiles pattern to match within one line, as grep does: the
// matcher runs over a whole file, so the expression is rewritten never to
// match the line separator. "\n" leaves every character class (".", a
// negated class, \s, a range such as [\x00-0]); ^ and $ (and \A, \z) are
// the line's start and end whatever the flags. A match then lies inside
// one line and matches that line alone, so the file is searched as its
// lines would be one by one. A pattern that names a newline ("a\nb",
// [\n], \n?) is refused, as ripgrep refuses it: no line holds one.
func lineRegexp(pattern string, caseInsensitive bool) (*regexp.Regexp, error) {
	flags := syntax.Perl &^ syntax.OneLine
	if caseInsensitive {
		flags |= syntax.FoldCase
	}
	tree, err := syntax.Parse(pattern, flags)
	if err != nil {
		return nil, fail(capability.ReasonInvalidRequest, "pattern does not compile: %v", err)
	}
	if !withinLine(tree) {
		return nil, fail(capability.ReasonInvalidRequest, "pattern has a line break (\\n): grep matches one line at a time")
	}
	re, err := regexp.Compile(tree.String())
	if err != nil {
		return nil, fail(capability.ReasonInvalidRequest, "pattern does not compile: %v", err)
	}
	return re, nil
}

// withinLine rewrites re in place so that it never matches "\n" (see
// lineRegexp); false when a literal is or holds "\n" or a class held
// nothing else.
func withinLine(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpLiteral:
		if slices.Contains(re.Rune, '\n') {
			return false
		}
	case syntax.OpCharClass:
		var r []rune
		for i := 0; i+1 < len(re.Rune); i += 2 {
			lo, hi := re.Rune[i], re.Rune[i+1]
			if lo <= '\n' && '\n' <= hi {
				if lo < '\n' {
					r = append(r, lo, '\n'-1)
				}
				if hi > '\n' {
					r = append(r, '\n'+1, hi)
				}
				continue
			}
			r = append(r, lo, hi)
		}
		if len(r) == 0 && len(re.Rune) > 0 {
			return false
		}
		re.Rune = r
	case syntax.OpAnyChar:
		re.Op = syntax.OpAnyCharNotNL
	case syntax.OpBeginText:
		re.Op = syntax.OpBeginLine
	case syntax.OpEndText:
		re.Op, re.Flags = syntax.OpEndLine, re.Flags&^syntax.WasDollar
	}
	for _, sub := range re.Sub {
		if !withinLine(sub) {
			return false
		}
	}
	return true
}

func (m *matcher) included(relPath string) bool {
	if len(m.include) == 0 {
		return true
	}
	base := path.Base(relPath)
	for _, g := range m.include {
		target := base
		if strings.Contains(g, "/") {
			target = relPath
		}
		if ok, _ := doublestar.Match(g, target); ok {
			return true
		}
	}
	return false
}

// find returns the 0-based numbers of the lines holding a match (at most
// limit of them; limit < 0 means stop at the first) and how many matching
// lines there are in all.
func (m *matcher) find(data []byte, limit int) (lines []int, count int) {
	if len(data) == 0 {
		return nil, 0 // an empty file has no lines
	}
	if len(m.prefix) > 0 && bytes.Index(data, m.prefix) < 0 {
		return nil, 0
	}
	pos, line, counted := 0, 0, 0
	for pos <= len(data) {
		var start int
		if m.literal {
			i := bytes.Index(data[pos:], m.prefix)
			if i < 0 {
				break
			}
			start = pos + i
		} else {
			loc := m.re.FindIndex(data[pos:])
			if loc == nil {
				break
			}
			start = pos + loc[0]
			if loc[1] == loc[0] && start == len(data) && start > 0 && data[start-1] == '\n' {
				break // an empty match after the final newline is no line
			}
		}
		line += bytes.Count(data[counted:start], []byte{'\n'})
		counted = start
		count++
		if limit < 0 {
			return nil, 1
		}
		if len(lines) < limit {
			lines = append(lines, line)
		}
		nl := bytes.IndexByte(data[start:], '\n')
		if nl < 0 {
			break
		}
		pos = start + nl + 1
		line++
		counted = pos
	}
	return lines, count
}

type grepHit struct {
	path  string
	count int
	text  []string // content mode: rendered lines
}

// render formats the matching lines of one file with context, grep style:
// path:N:text for matches, path-N-text for context, "--" between groups.
func (m *matcher) render(p string, data []byte, lines []int) []string {
	var starts []int
	starts = append(starts, 0)
	for i, c := range data {
		if c == '\n' && i+1 < len(data) {
			starts = append(starts, i+1)
		}
	}
	lineText := func(n int) string {
		s := starts[n]
		e := len(data)
		if n+1 < len(starts) {
			e = starts[n+1] - 1
		}
		t := strings.TrimSuffix(string(data[s:min(e, s+maxGrepLineChars*4)]), "\r")
		return truncRunes(strings.TrimSuffix(t, "\n"), maxGrepLineChars)
	}
	var out []string
	last := -1
	isMatch := map[int]bool{}
	for _, l := range lines {
		isMatch[l] = true
	}
	for _, l := range lines {
		from, to := max(l-m.context, 0), min(l+m.context, len(starts)-1)
		if from <= last {
			from = last + 1
		} else if last >= 0 && m.context > 0 {
			out = append(out, "--")
		}
		for n := from; n <= to; n++ {
			sep := "-"
			if isMatch[n] {
				sep = ":"
			}
			out = append(out, p+sep+strconv.Itoa(n+1)+sep+lineText(n))
		}
		last = max(last, to)
	}
	return out
}

// grep walks the tree through the guard on one goroutine and searches the
// files on GOMAXPROCS workers. Denied directories are never entered (the
// guard's walker does not report them), ignored ones are skipped.
func grep(ctx context.Context, env tool.Env, a grepArgs) (string, error) {
	w, err := needWalker(env)
	if err != nil {
		return "", err
	}
	m, err := newMatcher(a)
	if err != nil {
		return "", err
	}
	root := a.Path
	if root == "" {
		root = "."
	}
	canonRoot, err := env.FS.Resolve(root)
	if err != nil {
		return "", fsErr(err)
	}
	type job struct {
		p string
		d fs.DirEntry
	}
	jobs := make(chan job, 512)
	var (
		mu   sync.Mutex
		hits []grepHit
		wg   sync.WaitGroup
	)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	workers := min(max(runtime.GOMAXPROCS(0), 2), 16)
	for range workers {
		wg.Go(func() {
			var local []grepHit
			for j := range jobs {
				if h, ok := m.searchFile(ctx, env.FS, j.p, j.d); ok {
					local = append(local, h)
				}
			}
			mu.Lock()
			hits = append(hits, local...)
			mu.Unlock()
		})
	}
	walkErr := w.WalkDir(ctx, canonRoot, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == canonRoot {
				return fsErr(err)
			}
			return nil // an unreadable directory is skipped, as grep -s does
		}
		if d.IsDir() {
			if p != canonRoot && ignoredDirs[d.Name()] {
				return fs.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || !m.included(rel(canonRoot, p)) {
			return nil
		}
		select {
		case jobs <- job{p, d}:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	close(jobs)
	wg.Wait()
	if walkErr != nil {
		return "", fsErr(walkErr)
	}
	if err := ctx.Err(); err != nil {
		return "", err
	}
	slices.SortFunc(hits, func(a, b grepHit) int { return strings.Compare(a.path, b.path) })
	return m.format(hits), nil
}

// searchFile reads one file through the guard and matches it.
func (m *matcher) searchFile(ctx context.Context, fsys tool.FS, p string, d fs.DirEntry) (grepHit, bool) {
	if ctx.Err() != nil {
		return grepHit{}, false
	}
	if fi, err := d.Info(); err != nil || fi.Size() > MaxGrepFileBytes {
		return grepHit{}, false
	}
	data, err := fsys.ReadFile(ctx, p)
	if err != nil || isBinary(data) {
		return grepHit{}, false
	}
	switch m.mode {
	case grepFiles:
		if _, n := m.find(data, -1); n > 0 {
			return grepHit{path: p, count: n}, true
		}
	case grepCount:
		if _, n := m.find(data, 0); n > 0 {
			return grepHit{path: p, count: n}, true
		}
	default:
		lines, n := m.find(data, m.maxLines)
		if n > 0 {
			return grepHit{path: p, count: n, text: m.render(p, data, lines)}, true
		}
	}
	return grepHit{}, false
}

func (m *matcher) format(hits []grepHit) string {
	if len(hits) == 0 {
		return "no matches"
	}
	var b strings.Builder
	switch m.mode {
	case grepFiles, grepCount:
		for i, h := range hits {
			if i == m.maxLines {
				fmt.Fprintf(&b, "(%d more files not shown; raise head_limit or narrow the search)\n", len(hits)-i)
				break
			}
			b.WriteString(h.path)
			if m.mode == grepCount {
				b.WriteByte(':')
				b.WriteString(strconv.Itoa(h.count))
			}
			b.WriteByte('\n')
		}
	default:
		shown, total := 0, 0
		for _, h := range hits {
			total += h.count
		}
		matched := 0
		for i, h := range hits {
			if shown >= m.maxLines {
				fmt.Fprintf(&b, "(%d more matching lines in %d files not shown; raise head_limit or narrow the search)\n", total-matched, len(hits)-i)
				break
			}
			if i > 0 && m.context > 0 {
				b.WriteString("--\n")
			}
			for _, t := range h.text {
				if shown >= m.maxLines {
					break
				}
				b.WriteString(t)
				b.WriteByte('\n')
				shown++
			}
			matched += h.count
		}
	}
	return strings.TrimSuffix(b.String(), "\n")
}
