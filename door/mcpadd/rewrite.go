package mcpadd

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// IsProxy reports whether s already runs `norma mcp proxy` (a file that
// `norma mcp import --rewrite` rewrote): it is neither imported nor
// rewritten again.
func IsProxy(s ServerConfig) bool {
	return strings.HasPrefix(filepath.Base(s.Command), "norma") && len(s.Args) >= 2 && s.Args[0] == "mcp" && s.Args[1] == "proxy"
}

// Rewrite returns b, the bytes of the client's file (as [ParseConfig]
// reads it, by file's extension), with the command and args of each
// server named in argv set to argv[name] (the program, then its
// arguments). Everything else — other keys of the entry (env, type,
// timeouts), other servers, other settings, the layout and comments —
// is kept byte for byte: only the two values are replaced (args is
// added after command when the entry has none). The result is parsed
// again and checked.
func Rewrite(file string, b []byte, argv map[string][]string) ([]byte, error) {
	toml := strings.EqualFold(filepath.Ext(file), ".toml")
	var out []byte
	var err error
	if toml {
		out, err = rewriteTOML(b, argv)
	} else {
		out, err = rewriteJSON(b, argv)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return out, checkRewrite(file, toml, b, out, argv)
}

// checkRewrite parses before and after: the rewritten servers have the
// new command line, every other server is as it was.
func checkRewrite(file string, toml bool, before, after []byte, argv map[string][]string) error {
	parse := parseJSON
	if toml {
		parse = parseTOML
	}
	old, err := parse(file, before)
	if err != nil {
		return err
	}
	cur, err := parse(file, after)
	if err != nil {
		return fmt.Errorf("%s: the rewritten file does not parse: %w", file, err)
	}
	for name, e := range old {
		c, ok := cur[name]
		if a, re := argv[name]; re {
			e.Command, e.Args = a[0], a[1:]
		}
		if !ok || c.Command != e.Command || !slices.Equal(c.Args, e.Args) || c.URL != e.URL || len(c.Env) != len(e.Env) {
			return fmt.Errorf("%s: rewriting server %s went wrong; the file is left as it was", file, name)
		}
	}
	return nil
}

// edit replaces b[start:end] with text.
type edit struct {
	start, end int
	text       string
}

func apply(b []byte, edits []edit) []byte {
	slices.SortFunc(edits, func(x, y edit) int { return x.start - y.start })
	var out bytes.Buffer
	at := 0
	for _, e := range edits {
		out.Write(b[at:e.start])
		out.WriteString(e.text)
		at = e.end
	}
	out.Write(b[at:])
	return out.Bytes()
}

// jsonText is v as compact JSON without HTML escaping.
func jsonText(v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
	return strings.TrimSuffix(buf.String(), "\n")
}

// rewriteJSON finds mcpServers.NAME.command and .args by their byte
// offsets in the token stream and replaces their values.
func rewriteJSON(b []byte, argv map[string][]string) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, errors.New("not a JSON object")
	}
	var edits []edit
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return nil, err
		}
		if key != "mcpServers" {
			if err := skipValue(dec); err != nil {
				return nil, err
			}
			continue
		}
		if t, err := dec.Token(); err != nil || t != json.Delim('{') {
			return nil, errors.New("mcpServers is not an object")
		}
		for dec.More() {
			name, err := dec.Token()
			if err != nil {
				return nil, err
			}
			a, ok := argv[fmt.Sprint(name)]
			if !ok {
				if err := skipValue(dec); err != nil {
					return nil, err
				}
				continue
			}
			es, err := serverEdits(b, dec, a)
			if err != nil {
				return nil, fmt.Errorf("server %v: %w", name, err)
			}
			edits = append(edits, es...)
		}
		if _, err := dec.Token(); err != nil { // }
			return nil, err
		}
	}
	return apply(b, edits), nil
}

// serverEdits reads one server object and returns the edits of its
// command and args values.
func serverEdits(b []byte, dec *json.Decoder, a []string) ([]edit, error) {
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, errors.New("not an object")
	}
	var cmd, args *edit
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return nil, err
		}
		start := valueStart(b, int(dec.InputOffset()))
		if err := skipValue(dec); err != nil {
			return nil, err
		}
		e := &edit{start: start, end: int(dec.InputOffset())}
		switch key {
		case "command":
			e.text, cmd = jsonText(a[0]), e
		case "args":
			e.text, args = jsonText(a[1:]), e
		}
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	if cmd == nil {
		return nil, errors.New("no command")
	}
	out := []edit{*cmd}
	if args != nil {
		out = append(out, *args)
	} else {
		out[0].text += `, "args": ` + jsonText(a[1:])
	}
	return out, nil
}

// valueStart is the offset of the value after the key that ends at off:
// past the colon and white space.
func valueStart(b []byte, off int) int {
	for off < len(b) && (b[off] == ':' || b[off] == ' ' || b[off] == '\t' || b[off] == '\n' || b[off] == '\r') {
		off++
	}
	return off
}

func skipValue(dec *json.Decoder) error {
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		if errors.Is(err, io.EOF) {
			return io.ErrUnexpectedEOF
		}
		return err
	}
	return nil
}

// tomlTable matches a [mcp_servers.NAME] header; compiled at first use,
// as are the expressions below (a command hook links this package too).
var tomlTable = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^\s*\[\s*mcp_servers\s*\.\s*("([^"\\]*)"|'([^']*)'|([A-Za-z0-9_-]+))\s*\]\s*(#.*)?$`)
})

// rewriteTOML edits the command and args lines of each [mcp_servers.NAME]
// table; a server written as an inline table is an error.
func rewriteTOML(b []byte, argv map[string][]string) ([]byte, error) {
	lines := strings.SplitAfter(string(b), "\n")
	var out strings.Builder
	done := map[string]bool{}
	for i := 0; i < len(lines); i++ {
		m := tomlTable().FindStringSubmatch(strings.TrimRight(lines[i], "\r\n"))
		out.WriteString(lines[i])
		if m == nil {
			continue
		}
		name := m[2] + m[3] + m[4]
		a, ok := argv[name]
		if !ok {
			continue
		}
		// The table's lines, up to the next table header.
		j := i + 1
		for j < len(lines) && !strings.HasPrefix(strings.TrimSpace(lines[j]), "[") {
			j++
		}
		body, err := rewriteTable(lines[i+1:j], a)
		if err != nil {
			return nil, fmt.Errorf("server %s: %w", name, err)
		}
		out.WriteString(body)
		done[name] = true
		i = j - 1
	}
	for name := range argv {
		if !done[name] {
			return nil, fmt.Errorf("server %s: not a [mcp_servers.%s] table (inline tables are not rewritten)", name, name)
		}
	}
	return []byte(out.String()), nil
}

// rewriteTable replaces the command and args values of one table's
// lines, keeping what follows them on their lines (a comment).
func rewriteTable(lines []string, a []string) (string, error) {
	body := strings.Join(lines, "")
	var edits []edit
	cm := tomlCommand().FindStringSubmatchIndex(body)
	if cm == nil {
		return "", errors.New("no command")
	}
	n, ok := stringEnd(body[cm[1]:])
	if !ok {
		return "", errors.New("command is not a one-line string")
	}
	edits = append(edits, edit{cm[1], cm[1] + n, jsonText(a[0])})
	if am := tomlArgs().FindStringSubmatchIndex(body); am != nil {
		n, ok := arrayEnd(body[am[1]:])
		if !ok {
			return "", errors.New("args is not an array")
		}
		edits = append(edits, edit{am[1], am[1] + n, jsonText(a[1:])})
	} else {
		edits[0].text += "\nargs = " + jsonText(a[1:])
	}
	return string(apply([]byte(body), edits)), nil
}

var (
	tomlCommand = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?m)^[ \t]*command[ \t]*=[ \t]*`) })
	tomlArgs    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?m)^[ \t]*args[ \t]*=[ \t]*`) })
)

// stringEnd returns the length of the TOML one-line string s begins with.
func stringEnd(s string) (int, bool) {
	if strings.HasPrefix(s, `"""`) || strings.HasPrefix(s, "'''") || s == "" || (s[0] != '"' && s[0] != '\'') {
		return 0, false
	}
	q := s[0]
	for i := 1; i < len(s) && s[i] != '\n'; i++ {
		if q == '"' && s[i] == '\\' {
			i++
			continue
		}
		if s[i] == q {
			return i + 1, true
		}
	}
	return 0, false
}

// arrayEnd returns the length of s up to and including the ] that closes
// the array s begins with (after white space), skipping strings.
func arrayEnd(s string) (int, bool) {
	i := 0
	for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	if i >= len(s) || s[i] != '[' {
		return 0, false
	}
	depth := 0
	for ; i < len(s); i++ {
		switch c := s[i]; c {
		case '[':
			depth++
		case ']':
			depth--
			if depth == 0 {
				return i + 1, true
			}
		case '"', '\'':
			for i++; i < len(s) && s[i] != c; i++ {
				if c == '"' && s[i] == '\\' {
					i++
				}
			}
		case '#':
			for i < len(s) && s[i] != '\n' {
				i++
			}
		}
	}
	return 0, false
}
