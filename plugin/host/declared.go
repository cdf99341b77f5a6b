package host

import (
	"context"
	"encoding/json"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/manifest"
	"github.com/norma-run/norma/policy"
	"github.com/norma-run/norma/tool"
)

// anyObject is the input schema of a tool known by its manifest only: the
// server that would give the real schema is not running.
var anyObject = json.RawMessage(`{"type":"object"}`)

// Declared is a plugin known by its manifest and compiled policy only:
// nothing is started. Its tools have the registry specs of a loaded
// plugin's (names, effects, approval, the external-write target), with an
// input schema that admits any object, and a call that is refused. `norma
// policy explain --manifest` decides on it through the gate.
type Declared struct {
	m      *manifest.Manifest
	server string // the server name of its tools (mcp__SERVER__TOOL)
	set    *policy.Set
	pins   map[string]pinnedTool // the served tools of the last start; nil: unknown
	// features are what its server advertised at its last start.
	features serverFeatures
}

// Declare returns the plugin of manifest m, not installed, as if it were
// installed with grant (nil: no grant layer) under cfg's ceiling layers:
// compiled from the same inputs as [Host.Load]'s. Only the ceiling layers
// and Unsafe of cfg are used. `norma policy explain --manifest` decides on
// it.
func Declare(cfg Config, m *manifest.Manifest, grant *manifest.Layer) (*Declared, error) {
	set, err := policy.Compile(cfg.inputs(m, grant, 0))
	if err != nil {
		return nil, err
	}
	return &Declared{m: m, server: m.ID, set: set}, nil
}

// Manifest returns the plugin's manifest.
func (d *Declared) Manifest() *manifest.Manifest { return d.m }

// ServerName is the server name its tools go by (mcp__SERVER__TOOL).
func (d *Declared) ServerName() string { return d.server }

// Policy returns the plugin's compiled policy.
func (d *Declared) Policy() *policy.Set { return d.set }

// Tools returns a tool per declared tool: with the pins of the plugin's
// last start, exactly the tools it served, with their descriptions and
// schemas, as Load registers them.
func (d *Declared) Tools() ([]tool.CoreTool, error) {
	out := make([]tool.CoreTool, 0, len(d.m.Tools))
	for _, mt := range d.m.Tools {
		desc, schema := mt.Description, anyObject
		if d.pins != nil {
			pt, ok := d.pins[mt.Name]
			if !ok {
				continue // declared but not served: nothing to call
			}
			desc, schema = pt.Description, pt.InputSchema
		}
		t, err := tool.Build(toolSpec(d.server, d.m, mt, desc, schema, 0, refuseCall))
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

func refuseCall(context.Context, tool.Env, tool.Input) (tool.Result, error) {
	return tool.Result{}, capability.Denied(capability.ReasonHostUnavailable, "plugin", "a plugin known by its manifest only cannot be called")
}

// Describe returns installed plugin id as [Host.Load] would register it —
// its manifest, grant and compiled policy, its tools from the pins of its
// last start — without starting anything, opening the vault or writing
// any state. A held plugin is refused as Load refuses it. cfg needs Home,
// Manager and the ceiling layers only. `norma policy explain` decides on
// installed plugins this way.
func Describe(cfg Config, id string) (*Declared, error) {
	h := &Host{cfg: cfg, cache: policy.NewCache(0)}
	p, err := h.prepare(id)
	if err != nil {
		return nil, err
	}
	if held, err := readHold(cfg.Home, p.m); err != nil || held != nil {
		if err == nil {
			err = held
		}
		return nil, err
	}
	d := &Declared{m: p.m, server: p.server, set: p.set}
	if pins, features, ok := p.readPins(); ok {
		d.pins, d.features = pins, features
	}
	return d, nil
}
