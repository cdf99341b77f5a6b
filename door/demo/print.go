package demo

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/norma-run/norma/agent"
	"github.com/norma-run/norma/internal/termtext"
)

type printer struct {
	w     io.Writer
	color bool
}

func (p *printer) paint(code, s string) string {
	if !p.color {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}

func (p *printer) section(title string) {
	fmt.Fprintf(p.w, "\n%s\n%s\n", p.paint("1", title), strings.Repeat("─", len([]rune(title))))
}

func (p *printer) line(format string, args ...any) {
	fmt.Fprintf(p.w, format+"\n", args...)
}

// call prints one tool call: its decision, the tool, its target (unless
// it only repeats the tool's name, as a plugin tool's does) and, for a
// refusal, the reason and its message. Everything a model, tool or plugin
// may have written is escaped (termtext).
func (p *printer) call(c agent.CallRecord) {
	mark, color := "✓ allow", "32"
	switch {
	case c.Decision == "allow" && c.ApprovalID != "":
		mark = "✓ approved"
	case c.Decision != "allow" || c.IsError:
		mark, color = "✗ "+c.Decision, "31"
	}
	target := ""
	if c.Target != "" && c.Target != c.Tool {
		target = " " + termtext.Escape(c.Target)
	}
	fmt.Fprintf(p.w, "  %s %-46s%s (%s)\n", p.paint(color, fmt.Sprintf("%-12s", mark)), termtext.Escape(c.Tool),
		target, c.Duration.Round(time.Millisecond))
	if c.Decision != "allow" || c.IsError {
		fmt.Fprintf(p.w, "      %s %s\n", p.paint("33", termtext.Escape(c.Reason)), termtext.Escape(oneLine(c.Message, 140)))
	}
}

func oneLine(s string, n int) string {
	return termtext.Cut(strings.Join(strings.Fields(s), " "), n)
}
