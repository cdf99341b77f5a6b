package manifest

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// badVersion is a manifest with one error, on line 3 (version: v1.0).
const badVersion = "schema_version: 2\nid: org.acme.bad\nversion: v1.0\nentrypoint: bin/x\ntools: [{name: t, risk: read}]\n"

// TestLineBreaks: lines end in \n or \r\n, and positions count them as the
// YAML parser does; a bare \r, a line break to YAML and none to grep or an
// editor, is refused at its own FILE:LINE:COL, wherever it is. Every
// position reported is inside the file: the line it names is one of the
// file's lines, counted at \n.
func TestLineBreaks(t *testing.T) {
	tests := []struct {
		in   string
		want string // the start of one of its problems
		line string // the start of the reported line, as the file has it
	}{
		// \n and \r\n: the error is on the line that has it.
		{badVersion, "m.yaml:3:10: version:", "version: v1.0"},
		{strings.ReplaceAll(badVersion, "\n", "\r\n"), "m.yaml:3:10: version:", "version: v1.0"},
		{"\ufeff" + strings.ReplaceAll(badVersion, "\n", "\r\n"), "m.yaml:3:10: version:", "version: v1.0"},

		// A bare \r: before the fix YAML counted it as a line break and
		// the errors named lines 3, 4 and 9 of files of 1, 6 and 8 lines.
		{strings.ReplaceAll(badVersion, "\n", "\r"), "m.yaml:1:18: line break is a bare carriage return", "schema_version: 2\r"},
		{"# c\r" + badVersion, "m.yaml:1:4: line break is a bare carriage return", "# c\r"},
		{strings.Replace(badVersion, "version: v1.0", "version: 1.0.0", 1) + "\r\r\rfoo: 1\n", "m.yaml:6:1: line break is a bare carriage return", "\r\r\rfoo"},
		{"\r" + badVersion, "m.yaml:1:1: line break is a bare carriage return", "\r"},
		{strings.TrimSuffix(badVersion, "\n") + "\r", "m.yaml:5:31: line break is a bare carriage return", "tools:"},
		{strings.Replace(badVersion, "\n", "\r\r\n", 1), "m.yaml:1:18: line break is a bare carriage return", "schema_version: 2\r\r"},
		{strings.Replace(badVersion, "id: org.acme.bad", "id: \"org.\racme\"", 1), "m.yaml:2:10: line break is a bare carriage return", "id: \"org.\r"},
		{strings.Replace(badVersion, "tools: [{", "tools: [\r{", 1), "m.yaml:5:9: line break is a bare carriage return", "tools: [\r"},
		{"\ufeff\r" + badVersion, "m.yaml:1:1: line break is a bare carriage return", "\ufeff\r"}, // columns after the byte order mark
		{"id: \"é\r\"\n", "m.yaml:1:7: line break is a bare carriage return", "id: \"é\r"},        // columns count characters

		// An implicit null names no text; it is reported at the ':' or '-'
		// it follows, not past the end of the line or the file.
		{"id:", "m.yaml:1:3: id:", "id:"},
		{"schema_version: 2\nid: org.acme.x\nversion: 1.0.0\nentrypoint:", "m.yaml:4:11: entrypoint:", "entrypoint:"},
		{"-", "m.yaml:1:1:", "-"},
	}
	for _, tt := range tests {
		_, err := Parse("m.yaml", []byte(tt.in))
		probs, _ := err.(Errors)
		checkPositions(t, []byte(tt.in), probs)
		i := slices.IndexFunc(probs, func(p Problem) bool { return strings.HasPrefix(p.String(), tt.want) })
		if i < 0 {
			t.Errorf("Parse(%q) = %v, want %s", tt.in, err, tt.want)
			continue
		}
		p := probs[i]
		lines := strings.Split(tt.in, "\n")
		if p.Line < 1 || p.Line > len(lines) {
			t.Errorf("Parse(%q): line %d of a file of %d lines", tt.in, p.Line, len(lines))
			continue
		}
		if l := lines[p.Line-1]; !strings.HasPrefix(l, tt.line) {
			t.Errorf("Parse(%q): line %d is %q, want %q…", tt.in, p.Line, l, tt.line)
		}
		if strings.Contains(p.Msg, "carriage return") {
			// The column is the \r's, counted in characters after a BOM.
			l := strings.TrimPrefix(lines[p.Line-1], "\ufeff")
			if i := strings.IndexByte(l, '\r'); i < 0 || utf8.RuneCountInString(l[:i])+1 != p.Col {
				t.Errorf("Parse(%q): column %d, the \\r of %q is not there", tt.in, p.Col, l)
			}
		}
	}
}
