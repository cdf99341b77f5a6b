package host

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/norma-run/norma/audit"
	"github.com/norma-run/norma/capability"
)

// Reason codes of elicitation.
const (
	// ReasonElicitationHeadless: no person can answer (no terminal,
	// dontAsk, a queued run), so the request was declined.
	ReasonElicitationHeadless capability.Reason = "ELICITATION_HEADLESS"
	// ReasonElicitationUnsupported: a mode other than form (Norma declares
	// form elicitation only), declined.
	ReasonElicitationUnsupported capability.Reason = "ELICITATION_UNSUPPORTED"
)

// Elicitation is a server's request for input from the person, as the
// approver shows it. Every string is the server's: escape it before
// printing (internal/termtext).
type Elicitation struct {
	Plugin, Server string
	Message        string
	Fields         []ElicitField
}

// ElicitField is one requested field of a form elicitation.
type ElicitField struct {
	Name, Title, Description string
	Type                     string // string, number, integer, boolean
	Format                   string
	Enum                     []string
	Default                  any
	Required                 bool
}

// ElicitAnswer is the person's answer: Action is "accept" (with Content),
// "decline" or "cancel".
type ElicitAnswer struct {
	Action  string
	Content map[string]any
}

// maxElicitFields bounds the fields shown of one request.
const maxElicitFields = 32

// elicit asks the person through Config.Elicit; without one (headless) it
// declines. Each request and its outcome are audited with the field names,
// never the values.
func (p *Plugin) elicit(ctx context.Context, params *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	cfg := p.h.cfg
	record := func(action string, reason capability.Reason, fields []ElicitField) {
		names := make([]string, 0, len(fields))
		for _, f := range fields {
			names = append(names, f.Name)
		}
		d := map[string]string{"action": action, "fields": truncate(strings.Join(names, ","), 512),
			"message": truncate(cfg.Redactor.Redact(params.Message), 256)}
		decision := "allow"
		if action != "accept" {
			decision = "deny"
		}
		cfg.Audit.Record(context.WithoutCancel(ctx), audit.Event{Type: audit.TypeElicitation, RunID: cfg.RunID, Plugin: p.m.ID,
			PluginVersion: p.m.Version, Decision: decision, Reason: string(reason), Layer: "host", Detail: d})
	}
	if params == nil {
		params = &mcp.ElicitParams{}
	}
	if params.Mode != "" && params.Mode != "form" {
		record("decline", ReasonElicitationUnsupported, nil)
		return &mcp.ElicitResult{Action: "decline"}, nil
	}
	q := Elicitation{Plugin: p.m.ID, Server: p.server, Message: truncate(params.Message, 2048), Fields: elicitFields(params.RequestedSchema)}
	if cfg.Elicit == nil {
		record("decline", ReasonElicitationHeadless, q.Fields)
		return &mcp.ElicitResult{Action: "decline"}, nil
	}
	a, err := cfg.Elicit(ctx, q)
	if err != nil {
		record("cancel", capability.ReasonOf(err), q.Fields)
		return &mcp.ElicitResult{Action: "cancel"}, nil
	}
	switch a.Action {
	case "accept":
		record("accept", "", q.Fields)
		return &mcp.ElicitResult{Action: "accept", Content: a.Content}, nil
	case "decline":
		record("decline", "", q.Fields)
		return &mcp.ElicitResult{Action: "decline"}, nil
	default:
		record("cancel", "", q.Fields)
		return &mcp.ElicitResult{Action: "cancel"}, nil
	}
}

// elicitFields reads the requested schema's top-level properties, sorted
// by name, at most maxElicitFields.
func elicitFields(schema any) []ElicitField {
	b, err := json.Marshal(schema)
	if err != nil {
		return nil
	}
	var s struct {
		Properties map[string]struct {
			Type, Title, Description, Format string
			Enum                             []any
			Default                          any
		}
		Required []string
	}
	if json.Unmarshal(b, &s) != nil {
		return nil
	}
	var out []ElicitField
	for name, f := range s.Properties {
		ef := ElicitField{Name: truncate(name, 64), Title: truncate(f.Title, 128), Description: truncate(f.Description, 256),
			Type: truncate(f.Type, 16), Format: truncate(f.Format, 32), Default: f.Default, Required: slices.Contains(s.Required, name)}
		for _, e := range f.Enum {
			ef.Enum = append(ef.Enum, truncate(fmt.Sprint(e), 64))
		}
		out = append(out, ef)
	}
	slices.SortFunc(out, func(a, b ElicitField) int { return strings.Compare(a.Name, b.Name) })
	if len(out) > maxElicitFields {
		out = out[:maxElicitFields]
	}
	return out
}

// ElicitValues converts the person's typed answers to the fields' types
// (boolean: y/yes/true/n/no/false; integer; number; else the text). A
// required field left empty, or a value that is not of its type or not
// one of its choices, is an error naming the field.
func ElicitValues(fields []ElicitField, typed map[string]string) (map[string]any, error) {
	out := map[string]any{}
	for _, f := range fields {
		s, ok := typed[f.Name]
		if !ok || s == "" {
			if f.Required {
				return nil, fmt.Errorf("%s is required", f.Name)
			}
			continue
		}
		if len(f.Enum) > 0 && !slices.Contains(f.Enum, s) {
			return nil, fmt.Errorf("%s must be one of %s", f.Name, strings.Join(f.Enum, ", "))
		}
		switch f.Type {
		case "boolean":
			switch strings.ToLower(s) {
			case "y", "yes", "true":
				out[f.Name] = true
			case "n", "no", "false":
				out[f.Name] = false
			default:
				return nil, fmt.Errorf("%s must be yes or no", f.Name)
			}
		case "integer":
			var n int64
			if _, err := fmt.Sscan(s, &n); err != nil || fmt.Sprint(n) != s {
				return nil, fmt.Errorf("%s must be an integer", f.Name)
			}
			out[f.Name] = n
		case "number":
			var x float64
			if _, err := fmt.Sscan(s, &x); err != nil {
				return nil, fmt.Errorf("%s must be a number", f.Name)
			}
			out[f.Name] = x
		case "array":
			var items []string
			for it := range strings.SplitSeq(s, ",") {
				if it = strings.TrimSpace(it); it != "" {
					items = append(items, it)
				}
			}
			out[f.Name] = items
		default:
			out[f.Name] = s
		}
	}
	return out, nil
}
