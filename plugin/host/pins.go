package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/norma-run/norma/audit"
	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/internal/atomicfile"
	"github.com/norma-run/norma/manifest"
)

// pinnedTool is a served tool as pinned on first start after consent.
type pinnedTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
	Digest      string          `json:"digest"`
}

// pinFile is the plugin's tools.pin.json.
type pinFile struct {
	Version          string       `json:"version"`
	PermissionDigest string       `json:"permissionDigest"`
	Tools            []pinnedTool `json:"tools"`
	// Features are what the server advertised besides tools, so that a
	// Load that does not start the process still offers its resources
	// and prompts.
	Features serverFeatures `json:"features,omitzero"`
}

// serverFeatures are a server's advertised capabilities besides tools.
type serverFeatures struct {
	Resources bool `json:"resources,omitempty"`
	Prompts   bool `json:"prompts,omitempty"`
}

// serverCaps reads the features s's server advertised.
func serverCaps(s *mcp.ClientSession) serverFeatures {
	r := s.InitializeResult()
	if r == nil || r.Capabilities == nil {
		return serverFeatures{}
	}
	return serverFeatures{Resources: r.Capabilities.Resources != nil, Prompts: r.Capabilities.Prompts != nil}
}

// readPins returns the pins of the plugin's version and permissions, or
// false when there are none (or they are for another version).
func (p *Plugin) readPins() (map[string]pinnedTool, serverFeatures, bool) {
	b, err := os.ReadFile(p.lockPath)
	if err != nil {
		return nil, serverFeatures{}, false
	}
	var f pinFile
	if json.Unmarshal(b, &f) != nil || f.Version != p.m.Version || f.PermissionDigest != p.m.Permissions.Digest() {
		return nil, serverFeatures{}, false
	}
	out := map[string]pinnedTool{}
	for _, t := range f.Tools {
		out[t.Name] = t
	}
	return out, f.Features, true
}

// writePins records the pins in the plugin's state; a development
// plugin (no lockPath) keeps them in memory, for the run.
func (p *Plugin) writePins() error {
	if p.lockPath == "" {
		return nil
	}
	f := pinFile{Version: p.m.Version, PermissionDigest: p.m.Permissions.Digest(), Features: p.caps}
	for _, t := range p.tools {
		f.Tools = append(f.Tools, t)
	}
	slices.SortFunc(f.Tools, func(a, b pinnedTool) int { return strings.Compare(a.Name, b.Name) })
	b, _ := json.MarshalIndent(f, "", "  ")
	if err := os.MkdirAll(filepath.Dir(p.lockPath), 0o700); err != nil {
		return err
	}
	return atomicfile.Write(p.lockPath, b, 0o600)
}

func (p *Plugin) isHeld() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.held
}

// hold stops the plugin until re-consent and audits it.
func (p *Plugin) hold(ctx context.Context, reason capability.Reason, detail string) error {
	err := &capability.Error{Decision: capability.Decision{Mode: capability.Deny, Reason: reason, Layer: "host"}, Detail: detail}
	p.mu.Lock()
	p.held = err
	p.mu.Unlock()
	// The hold outlives this process: a restart must not quietly serve the
	// changed tools. `norma plugin consent ID --tools` releases it. A
	// development plugin has no state: its hold lasts for the run.
	if p.dev == nil {
		if werr := writeHold(p.h.cfg.Home, p.m, reason, detail); werr != nil {
			p.h.cfg.Audit.Record(context.WithoutCancel(ctx), audit.Event{Type: audit.TypePluginHeld, Plugin: p.m.ID,
				PluginVersion: p.m.Version, Reason: string(reason), Detail: map[string]string{"persist": werr.Error()}})
		}
	}
	p.h.cfg.Audit.Record(context.WithoutCancel(ctx), audit.Event{Type: audit.TypePluginHeld, RunID: p.h.cfg.RunID,
		Plugin: p.m.ID, PluginVersion: p.m.Version, ManifestDigest: p.m.Digest(), Reason: string(reason),
		Detail: map[string]string{"why": detail}})
	p.stop()
	return err
}

// holdFile is a plugin's tools.held.json.
type holdFile struct {
	Version string    `json:"version"`
	Reason  string    `json:"reason"`
	Detail  string    `json:"detail"`
	At      time.Time `json:"at"`
}

func holdPath(home, id string) string { return filepath.Join(home, "plugins", id, "tools.held.json") }

func writeHold(home string, m *manifest.Manifest, reason capability.Reason, detail string) error {
	b, _ := json.MarshalIndent(holdFile{Version: m.Version, Reason: string(reason), Detail: detail, At: time.Now().UTC()}, "", "  ")
	path := holdPath(home, m.ID)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return atomicfile.Write(path, b, 0o600)
}

// readHold returns the hold recorded for m's version, as an error, or nil.
// An unreadable hold file holds too (fail closed).
func readHold(home string, m *manifest.Manifest) (*capability.Error, error) {
	b, err := os.ReadFile(holdPath(home, m.ID))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	held := func(detail string) *capability.Error {
		return &capability.Error{Decision: capability.Decision{Mode: capability.Deny, Reason: ReasonPluginHeld, Layer: "host"}, Detail: detail}
	}
	if err != nil {
		return held("the hold file cannot be read: " + err.Error()), nil
	}
	var h holdFile
	if json.Unmarshal(b, &h) != nil {
		return held("the hold file is corrupt"), nil
	}
	if h.Version != m.Version {
		return nil, nil // a new version was consented to since
	}
	return held(fmt.Sprintf("%s since %s: %s; review it, then run `norma plugin consent %s --tools`", h.Reason, h.At.Format(time.RFC3339), h.Detail, m.ID)), nil
}

// Hold describes a recorded tool hold of plugin id, or "" when none.
func Hold(home, id string) string {
	b, err := os.ReadFile(holdPath(home, id))
	if err != nil {
		return ""
	}
	var h holdFile
	if json.Unmarshal(b, &h) != nil {
		return "the hold file is corrupt"
	}
	return fmt.Sprintf("%s@%s: %s (%s)", id, h.Version, h.Detail, h.Reason)
}

// ReleaseHold is the user's consent to a plugin's changed tools: it drops
// the hold and the tool pins, so the next start pins what the plugin serves
// now (every tool must still be declared in its signed manifest).
func ReleaseHold(home, id string) error {
	for _, p := range []string{holdPath(home, id), filepath.Join(home, "plugins", id, "tools.pin.json")} {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}
