package manifest

import (
	"fmt"
	"strings"
)

// Problem is one error found in a file. Line and Col are 1-based; zero when
// the problem is about the file as a whole.
type Problem struct {
	File  string `json:"file"`
	Line  int    `json:"line"`
	Col   int    `json:"col"`
	Field string `json:"field,omitempty"` // e.g. permissions.filesystem.read[0]
	Msg   string `json:"message"`
}

func (p Problem) String() string {
	var b strings.Builder
	b.WriteString(p.File)
	if p.Line > 0 {
		fmt.Fprintf(&b, ":%d:%d", p.Line, p.Col)
	}
	b.WriteString(": ")
	if p.Field != "" {
		b.WriteString(p.Field)
		b.WriteString(": ")
	}
	b.WriteString(p.Msg)
	return b.String()
}

// Errors is every problem found in one file, in file order. Parse functions
// return it (as error) when the file is invalid.
type Errors []Problem

func (e Errors) Error() string {
	lines := make([]string, len(e))
	for i, p := range e {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}
