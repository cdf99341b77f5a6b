// Package prompt is the interactive terminal [approval.Approver]: it shows
// what is about to happen in a box (effect, target, preview, credential
// name, expiry) and asks y/N with No as the default, using
// github.com/charmbracelet/huh.
package prompt

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/charmbracelet/huh"
	"github.com/charmbracelet/lipgloss"

	"github.com/norma-run/norma/approval"
)

// Approver asks a human at a terminal. It is not safe for concurrent use:
// one prompt at a time.
type Approver struct {
	in  io.Reader
	out io.Writer
	// accessible runs the line-oriented prompt (plain y/N on in), for
	// screen readers, pipes and tests.
	accessible bool
	who        string
	now        func() time.Time
}

// Options configures an Approver.
type Options struct {
	// Accessible selects huh's line-oriented mode instead of the full
	// screen form; use it when in is not a terminal.
	Accessible bool
	// Who names the person answering, recorded as "terminal:<Who>".
	Who string
	// Now is the clock used to show the time left; nil means time.Now.
	Now func() time.Time
}

// New returns an Approver reading answers from in and drawing on out.
func New(in io.Reader, out io.Writer, opts *Options) (*Approver, error) {
	if in == nil || out == nil {
		return nil, errors.New("prompt: nil input or output")
	}
	if opts == nil {
		opts = &Options{}
	}
	a := &Approver{in: in, out: out, accessible: opts.Accessible, who: opts.Who, now: opts.Now}
	if a.who == "" {
		a.who = "user"
	}
	if a.now == nil {
		a.now = time.Now
	}
	return a, nil
}

// Box renders the preview box for r.
func Box(r approval.Record, now time.Time) string {
	var b strings.Builder
	row := func(k, v string) {
		if v == "" {
			v = "-"
		}
		fmt.Fprintf(&b, "%-11s %s\n", k, v)
	}
	plugin := r.Plugin
	if r.PluginVersion != "" {
		plugin += "@" + r.PluginVersion
	}
	row("Tool", r.Tool)
	row("Plugin", plugin)
	row("Effect", r.Effect)
	row("Target", r.Target)
	row("Preview", r.Preview)
	row("Credential", r.Credential)
	row("Scope", string(r.Scope))
	row("Expires", fmt.Sprintf("%s (in %s)", r.Expires.UTC().Format(time.RFC3339), r.Expires.Sub(now).Round(time.Second)))
	return lipgloss.NewStyle().Border(lipgloss.RoundedBorder()).Padding(0, 1).
		Render(strings.TrimRight(b.String(), "\n"))
}

// Approve implements [approval.Approver]. Anything but an explicit yes
// denies; an input error is returned as an error (and so denies too).
func (a *Approver) Approve(ctx context.Context, r approval.Record) (approval.Verdict, error) {
	fmt.Fprintln(a.out, "Approval required ("+r.ID+")")
	fmt.Fprintln(a.out, Box(r, a.now()))
	yes := false
	confirm := huh.NewConfirm().
		Title("Allow this action?").
		Affirmative("Yes").
		Negative("No").
		Value(&yes)
	var err error
	if a.accessible {
		err = confirm.RunAccessible(a.out, a.in)
	} else {
		err = huh.NewForm(huh.NewGroup(confirm)).WithInput(a.in).WithOutput(a.out).RunWithContext(ctx)
	}
	if err != nil {
		return approval.Verdict{}, fmt.Errorf("prompt: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return approval.Verdict{}, err
	}
	return approval.Verdict{Approve: yes, By: "terminal:" + a.who, Why: "answered at the terminal"}, nil
}
