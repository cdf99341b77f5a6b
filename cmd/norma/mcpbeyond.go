package main

import (
	"context"
	"fmt"
	"io"
	"sync"

	"github.com/norma-run/norma/approval/prompt"
	"github.com/norma-run/norma/internal/termtext"
	"github.com/norma-run/norma/plugin/host"
	"github.com/norma-run/norma/provider"
)

// notice shows a plugin's logging message or progress notification to the
// person: a --json event, or a line on stderr, escaped (the text is the
// server's). It never reaches the model.
func (p *runPrinter) notice(stderr io.Writer, n host.Notice) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.json {
		v := map[string]any{"event": "plugin_notice", "server": termtext.Escape(n.Server), "plugin": n.Plugin, "kind": n.Kind,
			"text": termtext.Escape(n.Text)}
		if n.Kind == host.NoticeLog {
			v["level"], v["logger"] = termtext.Escape(n.Level), termtext.Escape(n.Logger)
		} else {
			v["progress"], v["total"] = n.Progress, n.Total
		}
		p.line(v)
		return
	}
	p.clearSpin()
	what := "log " + n.Level
	if n.Kind == host.NoticeProgress {
		what = fmt.Sprintf("progress %g", n.Progress)
		if n.Total > 0 {
			what += fmt.Sprintf("/%g", n.Total)
		}
	}
	fmt.Fprintf(stderr, "norma: %s: %s: %s\n", termtext.Escape(n.Server), termtext.Escape(what), termtext.Escape(n.Text))
}

// terminalElicit asks the person at the terminal for a server's
// elicitation, through the approval prompt's input, one prompt at a time
// (mu is the approvals' too).
func terminalElicit(a *prompt.Approver, out *runPrinter, mu *sync.Mutex) func(context.Context, host.Elicitation) (host.ElicitAnswer, error) {
	return func(ctx context.Context, q host.Elicitation) (host.ElicitAnswer, error) {
		mu.Lock()
		defer mu.Unlock()
		out.pause(true)
		defer out.pause(false)
		fields := make([]prompt.Field, 0, len(q.Fields))
		for _, f := range q.Fields {
			fields = append(fields, prompt.Field{Name: f.Name, Title: f.Title, Description: f.Description, Type: f.Type, Enum: f.Enum, Required: f.Required})
		}
		for range 3 {
			action, typed, err := a.Elicit(ctx, q.Server, q.Message, fields)
			if err != nil || action != prompt.Accept {
				return host.ElicitAnswer{Action: action}, err
			}
			values, err := host.ElicitValues(q.Fields, typed)
			if err == nil {
				return host.ElicitAnswer{Action: prompt.Accept, Content: values}, nil
			}
			fmt.Fprintf(out.w, "%s; answer again.\n", termtext.Escape(err.Error()))
		}
		return host.ElicitAnswer{Action: prompt.Cancel}, nil
	}
}

// samplerOf is the provider that answers plugins' sampling requests: the
// run's own, or the scripted provider's sampling list.
func samplerOf(p provider.Provider) provider.Provider {
	if s, ok := p.(interface{ Sampler() provider.Provider }); ok {
		return s.Sampler()
	}
	return p
}
