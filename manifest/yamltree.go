package manifest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"
)

// Limits on the parser itself. A manifest is a few hundred lines; these
// bounds are generous for real files and cheap to hit for hostile ones.
const (
	MaxFileSize   = 1 << 20 // bytes
	MaxDepth      = 32      // nesting of mappings and sequences
	MaxAliases    = 64      // alias references in one file
	MaxValueNodes = 200_000 // nodes after alias expansion
)

type pos struct{ line, col int }

// tree is a YAML document converted to JSON-like values (map[string]any,
// []any, string, json.Number, bool, nil) with the position of every value
// and of every mapping key, keyed by JSON pointer.
type tree struct {
	file   string
	doc    ast.Node
	root   any
	values map[string]pos  // pointer → position of the value
	keys   map[string]pos  // pointer → position of the key that names it
	floats map[string]bool // pointers whose value was written as a float
}

// tokPos is where t starts. An implicit null (the missing value of "id:"
// or "-") names no text: the parser places it one or two columns after
// the ':' or '-' it follows, which can be past the end of the line or the
// file, so it is reported at that token instead.
func tokPos(t *token.Token) pos {
	if t != nil && t.Type == token.ImplicitNullType && t.Prev != nil && t.Prev.Position != nil {
		t = t.Prev
	}
	if t == nil || t.Position == nil {
		return pos{}
	}
	return pos{t.Position.Line, t.Position.Column}
}

// loadTree parses data into a tree, enforcing the limits. Problems are
// returned as Errors. Lines end in \n or \r\n; a bare \r is refused at
// its FILE:LINE:COL (bareCR).
func loadTree(file string, data []byte) (*tree, error) {
	if len(data) > MaxFileSize {
		return nil, Errors{{File: file, Msg: fmt.Sprintf("file is %d bytes; the limit is %d", len(data), MaxFileSize)}}
	}
	if !utf8.Valid(data) {
		line, col := firstInvalidUTF8(data)
		return nil, Errors{{File: file, Line: line, Col: col, Msg: "file is not valid UTF-8"}}
	}
	// Editors on Windows start files with a UTF-8 byte order mark; it is not
	// part of the document, so it must not become part of the first key.
	data = bytes.TrimPrefix(data, []byte("\ufeff"))
	if strings.ContainsRune(string(data), 0) {
		return nil, Errors{{File: file, Msg: "file contains a NUL byte"}}
	}
	if line, col, ok := bareCR(data); ok {
		return nil, Errors{{File: file, Line: line, Col: col,
			Msg: `line break is a bare carriage return (\r): end lines with \n or \r\n`}}
	}
	f, err := parser.ParseBytes(data, 0)
	if err != nil {
		p := yamlProblem(file, err)
		if lines := strings.Split(string(data), "\n"); p.Line > 0 && p.Line <= len(lines) && strings.Contains(lines[p.Line-1], "[") && strings.Contains(lines[p.Line-1], "{") {
			p.Msg += ` (inside [...], quote path templates: "/repos/{owner}")`
		}
		return nil, Errors{p}
	}
	var docs []ast.Node
	for _, d := range f.Docs {
		if d != nil && d.Body != nil {
			docs = append(docs, d.Body)
		}
	}
	if len(docs) != 1 {
		return nil, Errors{{File: file, Line: 1, Col: 1, Msg: fmt.Sprintf("want exactly one YAML document, found %d", len(docs))}}
	}
	c := &converter{
		t:       &tree{file: file, doc: docs[0], values: map[string]pos{}, keys: map[string]pos{}, floats: map[string]bool{}},
		anchors: map[string]ast.Node{},
	}
	root, err := c.convert(docs[0], "", 0, true)
	if err != nil {
		return nil, err
	}
	c.t.root = root
	if c.t.floats["/schema_version"] {
		// JSON Schema's const 2 also accepts 2.0; the format version is
		// the integer 2 as written, nothing that merely equals it.
		return nil, Errors{c.t.problem("/schema_version", false, "must be the integer 2, written as 2")}
	}
	return c.t, nil
}

// bareCR finds the first \r not followed by \n, at the line and column
// (in characters, after a byte order mark) where grep, editors' "go to
// line" and every position loadTree reports count it: lines end at \n.
// YAML also breaks lines at a bare \r, so a file with one would have
// fields on lines nobody else sees: "# x\rid: ..." is a comment to a
// reader and a mapping to the YAML parser, and the positions of what
// follows point past the line they name, or past the end of the file.
// Refusing it keeps one line-break rule for everyone, as settings does.
func bareCR(data []byte) (line, col int, ok bool) {
	for i, b := range data {
		if b == '\r' && (i+1 == len(data) || data[i+1] != '\n') {
			start := bytes.LastIndexByte(data[:i], '\n') + 1
			return bytes.Count(data[:i], []byte("\n")) + 1, utf8.RuneCount(data[start:i]) + 1, true
		}
	}
	return 0, 0, false
}

func firstInvalidUTF8(b []byte) (line, col int) {
	line, col = 1, 1
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r == utf8.RuneError && n <= 1 {
			return line, col
		}
		if r == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
		b = b[n:]
	}
	return line, col
}

type converter struct {
	t       *tree
	anchors map[string]ast.Node
	aliases int
	nodes   int
}

func (c *converter) fail(n ast.Node, msg string) error {
	p := pos{}
	if n != nil {
		p = tokPos(n.GetToken())
	}
	return Errors{{File: c.t.file, Line: p.line, Col: p.col, Msg: msg}}
}

// decimalInt is how an integer is written in our files. YAML also reads
// 0x2, 0o2, 0b10 and 1_000 as integers; a reviewer reading the file should
// not have to.
var decimalInt = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^-?(0|[1-9][0-9]*)$`) })

// failAt is fail naming the field at ptr.
func (c *converter) failAt(n ast.Node, ptr, msg string) error {
	p := tokPos(n.GetToken())
	return Errors{{File: c.t.file, Line: p.line, Col: p.col, Field: fieldPath(ptr), Msg: msg}}
}

// convert turns n into a value. record is false inside an alias expansion:
// positions then point at the alias, recorded by the caller.
func (c *converter) convert(n ast.Node, ptr string, depth int, record bool) (any, error) {
	if depth > MaxDepth {
		return nil, c.fail(n, fmt.Sprintf("nesting deeper than %d levels", MaxDepth))
	}
	c.nodes++
	if c.nodes > MaxValueNodes {
		return nil, c.fail(n, fmt.Sprintf("document expands to more than %d values (alias expansion limit)", MaxValueNodes))
	}
	if record {
		if _, ok := c.t.values[ptr]; !ok {
			c.t.values[ptr] = tokPos(n.GetToken())
		}
	}
	switch v := n.(type) {
	case *ast.AnchorNode:
		name := v.Name.GetToken().Value
		c.anchors[name] = v.Value
		return c.convert(v.Value, ptr, depth, record)
	case *ast.AliasNode:
		c.aliases++
		if c.aliases > MaxAliases {
			return nil, c.fail(n, fmt.Sprintf("more than %d aliases (alias expansion limit)", MaxAliases))
		}
		name := v.Value.GetToken().Value
		target, ok := c.anchors[name]
		if !ok {
			return nil, c.fail(n, fmt.Sprintf("alias *%s refers to no earlier anchor", name))
		}
		return c.convert(target, ptr, depth+1, false)
	case *ast.TagNode:
		return nil, c.fail(n, fmt.Sprintf("YAML tags such as %s are not allowed", v.Start.Value))
	case *ast.MappingNode:
		return c.mapping(v.Values, ptr, depth, record)
	case *ast.MappingValueNode:
		return c.mapping([]*ast.MappingValueNode{v}, ptr, depth, record)
	case *ast.SequenceNode:
		out := make([]any, 0, len(v.Values))
		for i, item := range v.Values {
			x, err := c.convert(item, ptr+"/"+strconv.Itoa(i), depth+1, record)
			if err != nil {
				return nil, err
			}
			out = append(out, x)
		}
		return out, nil
	case *ast.StringNode:
		return v.Value, nil
	case *ast.LiteralNode:
		return v.Value.Value, nil
	case *ast.IntegerNode:
		if lit := v.GetToken().Value; !decimalInt().MatchString(lit) {
			return nil, c.failAt(n, ptr, fmt.Sprintf("write integers in plain decimal (found %s)", strconv.Quote(lit)))
		}
		return json.Number(fmt.Sprint(v.Value)), nil
	case *ast.FloatNode:
		if math.IsInf(v.Value, 0) || math.IsNaN(v.Value) {
			return nil, c.fail(n, "non-finite numbers are not allowed")
		}
		if record {
			c.t.floats[ptr] = true
		}
		return json.Number(strconv.FormatFloat(v.Value, 'g', -1, 64)), nil
	case *ast.InfinityNode, *ast.NanNode:
		return nil, c.fail(n, "non-finite numbers are not allowed")
	case *ast.BoolNode:
		return v.Value, nil
	case *ast.NullNode:
		return nil, nil
	case *ast.CommentGroupNode:
		return nil, nil
	}
	return nil, c.fail(n, fmt.Sprintf("unsupported YAML node %s", n.Type()))
}

func (c *converter) mapping(values []*ast.MappingValueNode, ptr string, depth int, record bool) (any, error) {
	out := make(map[string]any, len(values))
	for _, mv := range values {
		keyNode := mv.Key
		var key string
		switch k := keyNode.(type) {
		case *ast.StringNode:
			key = k.Value
		case *ast.MappingKeyNode:
			return nil, c.fail(k, "complex mapping keys are not allowed")
		default:
			if keyNode == nil {
				return nil, c.fail(mv, "mapping key is missing")
			}
			// Plain scalars such as `1:` or `true:` are keys in YAML; our
			// format names every field, so take the text and let the schema
			// refuse it by name.
			key = keyNode.GetToken().Value
		}
		if key == "<<" {
			return nil, c.fail(keyNode, "merge keys (<<) are not allowed")
		}
		if _, dup := out[key]; dup {
			return nil, c.fail(keyNode, fmt.Sprintf("duplicate key %q", key))
		}
		child := ptr + "/" + escapePtr(key)
		if record {
			c.t.keys[child] = tokPos(keyNode.GetToken())
		}
		x, err := c.convert(mv.Value, child, depth+1, record)
		if err != nil {
			return nil, err
		}
		out[key] = x
	}
	return out, nil
}

func escapePtr(s string) string {
	if !strings.ContainsAny(s, "~/") {
		return s
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

func unescapePtr(s string) string {
	if !strings.Contains(s, "~") {
		return s
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
}

// problem builds a Problem at the JSON pointer ptr; onKey points at the key
// that names the value rather than the value itself.
func (t *tree) problem(ptr string, onKey bool, msg string) Problem {
	p, ok := pos{}, false
	if ptr == "" {
		p, ok = pos{1, 1}, true // the document as a whole
	}
	if onKey {
		p, ok = t.keys[ptr]
	}
	if !ok {
		p, ok = t.values[ptr]
	}
	// Fall back to the nearest ancestor with a position.
	for q := ptr; !ok && q != ""; {
		i := strings.LastIndexByte(q, '/')
		q = q[:i]
		p, ok = t.values[q]
	}
	return Problem{File: t.file, Line: p.line, Col: p.col, Field: fieldPath(ptr), Msg: msg}
}

// fieldPath turns "/permissions/filesystem/read/0" into
// "permissions.filesystem.read[0]".
func fieldPath(ptr string) string {
	if ptr == "" {
		return ""
	}
	var b strings.Builder
	for _, seg := range strings.Split(ptr[1:], "/") {
		seg = unescapePtr(seg)
		if _, err := strconv.Atoi(seg); err == nil {
			b.WriteString("[" + seg + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(seg)
	}
	return b.String()
}

type yamlError interface {
	GetToken() *token.Token
	GetMessage() string
}

func yamlProblem(file string, err error) Problem {
	if ye, ok := err.(yamlError); ok {
		p := tokPos(ye.GetToken())
		return Problem{File: file, Line: p.line, Col: p.col, Msg: ye.GetMessage()}
	}
	return Problem{File: file, Msg: err.Error()}
}
