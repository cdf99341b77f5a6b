package demo

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/norma-run/norma/agent"
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

func (p *printer) call(c agent.CallRecord) {
	mark, color := "✓ allow", "32"
	switch {
	case c.Decision == "allow" && c.ApprovalID != "":
		mark = "✓ approved"
	case c.Decision != "allow" || c.IsError:
		mark, color = "✗ "+c.Decision, "31"
	}
	target := c.Target
	if target == "" {
		target = "-"
	}
	fmt.Fprintf(p.w, "  %s %-46s %s (%s)\n", p.paint(color, fmt.Sprintf("%-12s", mark)), c.Tool, target, c.Duration.Round(time.Millisecond))
	if c.Decision != "allow" || c.IsError {
		fmt.Fprintf(p.w, "      %s %s\n", p.paint("33", c.Reason), oneLine(c.Message, 140))
	}
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		s = s[:n] + "…"
	}
	return s
}
