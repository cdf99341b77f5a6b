// Package prompt is the interactive terminal [approval.Approver]: it shows
// what is about to happen in a box (effect, target, preview, credential
// name, expiry) and asks, with No as the default, using
// github.com/charmbracelet/huh: yes, this once; yes for this session;
// always; or no, with a reason the model is told. The session and always
// choices are offered only for a call the gate gave exact rules for
// ([approval.RulesOf]), and name those rules before anything is kept.
package prompt

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/charmbracelet/huh"
	"github.com/charmbracelet/lipgloss"

	"github.com/norma-run/norma/approval"
	"github.com/norma-run/norma/internal/termtext"
)

// Approver asks a human at a terminal. It is not safe for concurrent use:
// one prompt at a time.
type Approver struct {
	in  io.Reader
	out io.Writer
	// accessible runs the line-oriented prompt (one letter on a line of
	// in: y, s, a or n; then a reason for n), for screen readers, pipes
	// and tests.
	accessible bool
	who        string
	now        func() time.Time
	lines      *lineReader
}

// Options configures an Approver.
type Options struct {
	// Accessible selects the line-oriented mode instead of huh's full
	// screen form; use it when in or out is not a terminal.
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
	a := &Approver{in: in, out: out, accessible: opts.Accessible, who: opts.Who, now: opts.Now, lines: &lineReader{r: in}}
	if a.who == "" {
		a.who = "user"
	}
	if a.now == nil {
		a.now = time.Now
	}
	return a, nil
}

// Box renders the preview box for r. Every field a model, a tool or a
// plugin controls is escaped (termtext): the box shows what runs, and no
// escape sequence can hide or rewrite part of it. A field that is empty is
// left out; the preview (the full command, arguments or diff) comes last,
// one escaped line per line.
func Box(r approval.Record, now time.Time) string {
	var b strings.Builder
	row := func(k, v string) {
		for i, l := range termtext.Lines(v) { // a target lists one request per line
			if i > 0 {
				k = ""
			}
			fmt.Fprintf(&b, "%-11s %s\n", k, l)
		}
	}
	plugin := r.Plugin
	if r.PluginVersion != "" {
		plugin += "@" + r.PluginVersion
	}
	row("Tool", r.Tool)
	row("Plugin", plugin)
	row("Effect", r.Effect)
	row("Target", r.Target)
	row("Credential", r.Credential)
	row("Scope", string(r.Scope))
	row("Expires", fmt.Sprintf("%s (in %s)", r.Expires.UTC().Format(time.RFC3339), r.Expires.Sub(now).Round(time.Second)))
	if lines := termtext.Lines(r.Preview); len(lines) > 0 {
		b.WriteString("Preview\n")
		for _, l := range lines {
			b.WriteString("  " + l + "\n")
		}
	}
	return lipgloss.NewStyle().Border(lipgloss.RoundedBorder()).Padding(0, 1).
		Render(strings.TrimRight(b.String(), "\n"))
}

// Choice is an answer at the prompt.
type Choice uint8

// Choices. The zero Choice is No.
const (
	No Choice = iota
	Once
	Session
	Always
)

// MaxReason bounds the reason of a no, in bytes; the rest is dropped.
const MaxReason = 300

// Approve implements [approval.Approver]. Anything but an explicit yes
// denies; an input error is returned as an error (and so denies too). The
// rules of ctx ([approval.RulesOf]) are shown, and only with them are
// "yes for this session" and "always" offered; the verdict carries the
// choice as [approval.Verdict.Remember] and a no's reason as Why.
func (a *Approver) Approve(ctx context.Context, r approval.Record) (approval.Verdict, error) {
	rules := approval.RulesOf(ctx)
	fmt.Fprintln(a.out, "Approval required ("+termtext.Escape(r.ID)+")")
	fmt.Fprintln(a.out, Box(r, a.now()))
	var (
		c   Choice
		why string
		err error
	)
	if a.accessible {
		c, why, err = a.askLines(ctx, rules)
	} else {
		c, why, err = a.askForm(ctx, rules)
	}
	if err != nil {
		return approval.Verdict{}, fmt.Errorf("prompt: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return approval.Verdict{}, err
	}
	v := approval.Verdict{By: "terminal:" + a.who}
	list := strings.Join(rules, ", ")
	switch c {
	case Once:
		v.Approve, v.Why = true, "answered at the terminal: yes, this once"
	case Session:
		v.Approve, v.Remember, v.Why = true, approval.RememberSession, "answered at the terminal: yes for this session: "+list
	case Always:
		v.Approve, v.Remember, v.Why = true, approval.RememberAlways, "answered at the terminal: always: "+list
		fmt.Fprintf(a.out, "Adding %s to %s.\n", termtext.Escape(list), settingsFile)
	default:
		v.Why = bound(strings.TrimSpace(why), MaxReason)
	}
	return v, nil
}

// settingsFile is where "always" keeps its rules (settings.LocalFile; the
// agent writes it).
const settingsFile = ".norma/settings.local.yaml"

func labels(rules []string) (once, session, always, no string) {
	list := termtext.Escape(strings.Join(rules, ", "))
	return "yes, this once",
		"yes for this session: allow " + list,
		"always: add " + list + " to " + settingsFile,
		"no (then say why, if you like: the model is told)"
}

// askLines is the accessible prompt: one line for the choice, one more
// for the reason of a no. Up to three unclear answers are asked again;
// then, and at the end of input, the answer is no.
func (a *Approver) askLines(ctx context.Context, rules []string) (Choice, string, error) {
	once, session, always, no := labels(rules)
	fmt.Fprintln(a.out, "Allow this action?")
	fmt.Fprintln(a.out, "  y  "+once)
	keys := "y/N"
	if len(rules) > 0 {
		fmt.Fprintln(a.out, "  s  "+session)
		fmt.Fprintln(a.out, "  a  "+always)
		keys = "y/s/a/N"
	}
	fmt.Fprintln(a.out, "  n  "+no)
	for range 3 {
		fmt.Fprintf(a.out, "Choose [%s]: ", keys)
		line, err := a.lines.next(ctx)
		if errors.Is(err, io.EOF) {
			fmt.Fprintln(a.out)
			return No, "", nil
		}
		if err != nil {
			return No, "", err
		}
		switch strings.ToLower(strings.TrimSpace(line)) {
		case "y", "yes":
			return Once, "", nil
		case "s", "session":
			if len(rules) > 0 {
				return Session, "", nil
			}
		case "a", "always":
			if len(rules) > 0 {
				return Always, "", nil
			}
		case "", "n", "no":
			fmt.Fprint(a.out, "Why not? (optional, the model is told): ")
			why, err := a.lines.next(ctx)
			if err != nil && !errors.Is(err, io.EOF) {
				return No, "", err
			}
			return No, why, nil
		}
		fmt.Fprintf(a.out, "Answer one of %s.\n", keys)
	}
	return No, "", nil
}

// askForm is the full screen prompt: a select with No first chosen, then
// an input for the reason of a no.
func (a *Approver) askForm(ctx context.Context, rules []string) (Choice, string, error) {
	once, session, always, no := labels(rules)
	c := No
	opts := []huh.Option[Choice]{huh.NewOption(once, Once)}
	if len(rules) > 0 {
		opts = append(opts, huh.NewOption(session, Session), huh.NewOption(always, Always))
	}
	opts = append(opts, huh.NewOption(no, No))
	sel := huh.NewSelect[Choice]().Title("Allow this action?").Value(&c).Options(opts...)
	var why string
	in := huh.NewInput().Title("Why not? (optional, the model is told)").CharLimit(MaxReason).Value(&why)
	// One form (one reader of the terminal): the reason is asked only
	// after a no.
	form := huh.NewForm(huh.NewGroup(sel), huh.NewGroup(in).WithHideFunc(func() bool { return c != No }))
	if err := form.WithInput(a.in).WithOutput(a.out).RunWithContext(ctx); err != nil {
		return No, "", err
	}
	if c != No {
		why = ""
	}
	return c, why, nil
}

func bound(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && (s[cut]&0xC0) == 0x80 {
		cut--
	}
	return s[:cut]
}

// lineReader reads lines of r for one prompt at a time, honouring the
// prompt's context: a read runs on its own goroutine, so a prompt can give
// up; a line that was typed for a prompt that gave up (it arrived before
// the next prompt asked) is dropped, never taken as the answer to the
// next one.
type lineReader struct {
	r  io.Reader
	mu sync.Mutex
	br *bufio.Reader
	// inflight receives the result of the read in progress, if any.
	inflight chan lineResult
	eof      error
}

type lineResult struct {
	line string
	err  error
}

// maxLine bounds one line of input; the rest of a longer line is dropped.
const maxLine = 4096

// next returns the next line (without its line ending). The end of input
// is io.EOF.
func (l *lineReader) next(ctx context.Context) (string, error) {
	l.mu.Lock()
	if l.br == nil {
		l.br = bufio.NewReaderSize(l.r, maxLine)
	}
	if l.inflight != nil {
		select {
		case res := <-l.inflight:
			// Typed before this prompt asked: an earlier prompt's answer.
			l.inflight = nil
			if res.err != nil {
				l.eof = res.err
			}
		default:
			// Still reading: what comes is typed for this prompt.
		}
	}
	if l.eof != nil {
		err := l.eof
		l.mu.Unlock()
		return "", err
	}
	if l.inflight == nil {
		ch := make(chan lineResult, 1)
		l.inflight = ch
		go func() { ch <- readLine(l.br) }()
	}
	ch := l.inflight
	l.mu.Unlock()
	select {
	case <-ctx.Done():
		return "", ctx.Err()
	case res := <-ch:
		l.mu.Lock()
		l.inflight = nil
		if res.err != nil {
			l.eof = res.err
		}
		l.mu.Unlock()
		return res.line, res.err
	}
}

func readLine(br *bufio.Reader) lineResult {
	var b strings.Builder
	for {
		frag, isPrefix, err := br.ReadLine()
		if b.Len() < maxLine {
			b.Write(frag[:min(len(frag), maxLine-b.Len())])
		}
		if err != nil {
			if b.Len() > 0 {
				return lineResult{line: b.String()}
			}
			return lineResult{err: err}
		}
		if !isPrefix {
			return lineResult{line: b.String()}
		}
	}
}
