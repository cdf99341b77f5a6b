package prompt

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/norma-run/norma/internal/termtext"
)

// Field is one field a server asks the person for.
type Field struct {
	Name, Title, Description, Type string
	Enum                           []string
	Required                       bool
}

// Elicitation actions.
const (
	Accept  = "accept"
	Decline = "decline"
	Cancel  = "cancel"
)

// Elicit asks the person at the terminal for what an MCP server requests,
// like an approval: it shows who asks, the message and the fields (all
// escaped: every string is the server's), then takes accept, decline or
// cancel (decline is the default), and on accept one line per field. The
// values are returned as typed; the caller converts them to the field's
// type. End of input cancels. It is line-oriented in every mode, and
// shares the approval prompt's input, one prompt at a time.
func (a *Approver) Elicit(ctx context.Context, who, message string, fields []Field) (string, map[string]string, error) {
	fmt.Fprintln(a.out)
	fmt.Fprintf(a.out, "── The MCP server %s asks you for information ──\n", termtext.Escape(bound(who, 64)))
	for _, l := range termtext.Lines(termtext.CutBytes(message, 2048)) {
		fmt.Fprintln(a.out, "  "+l)
	}
	for _, f := range fields {
		req := ""
		if f.Required {
			req = ", required"
		}
		line := fmt.Sprintf("  • %s (%s%s)", termtext.Escape(bound(f.Name, 64)), termtext.Escape(bound(f.Type, 16)), req)
		if d := strings.TrimSpace(f.Title + " " + f.Description); d != "" {
			line += ": " + termtext.Escape(bound(d, 160))
		}
		if len(f.Enum) > 0 {
			line += " [" + termtext.Escape(bound(strings.Join(f.Enum, ", "), 160)) + "]"
		}
		fmt.Fprintln(a.out, line)
	}
	fmt.Fprintln(a.out, "Only answer what you want this server to know: it may pass it on, and its tool result goes to the model.")
	for range 3 {
		fmt.Fprint(a.out, "Answer? a = accept and fill in, d = decline, c = cancel [a/D/c]: ")
		line, err := a.lines.next(ctx)
		if errors.Is(err, io.EOF) {
			fmt.Fprintln(a.out)
			return Cancel, nil, nil
		}
		if err != nil {
			return Cancel, nil, err
		}
		switch strings.ToLower(strings.TrimSpace(line)) {
		case "", "d", "decline":
			return Decline, nil, nil
		case "c", "cancel":
			return Cancel, nil, nil
		case "a", "accept":
			values := map[string]string{}
			for _, f := range fields {
				fmt.Fprintf(a.out, "%s: ", termtext.Escape(bound(f.Name, 64)))
				v, err := a.lines.next(ctx)
				if errors.Is(err, io.EOF) {
					fmt.Fprintln(a.out)
					return Cancel, nil, nil
				}
				if err != nil {
					return Cancel, nil, err
				}
				if v = strings.TrimSpace(v); v != "" {
					values[f.Name] = v
				}
			}
			return Accept, values, nil
		}
		fmt.Fprintln(a.out, "Answer a, d or c.")
	}
	return Decline, nil, nil
}
