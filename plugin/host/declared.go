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
	m   *manifest.Manifest
	set *policy.Set
}

// NewDeclared returns the declared-only plugin of m under set.
func NewDeclared(m *manifest.Manifest, set *policy.Set) *Declared { return &Declared{m: m, set: set} }

// Manifest returns the plugin's manifest.
func (d *Declared) Manifest() *manifest.Manifest { return d.m }

// Policy returns the plugin's compiled policy.
func (d *Declared) Policy() *policy.Set { return d.set }

// Tools returns a tool per declared tool.
func (d *Declared) Tools() ([]tool.CoreTool, error) {
	out := make([]tool.CoreTool, 0, len(d.m.Tools))
	for _, mt := range d.m.Tools {
		t, err := tool.Build(toolSpec(d.m, mt, mt.Description, anyObject, 0, refuseCall))
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
