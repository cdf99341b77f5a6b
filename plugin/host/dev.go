package host

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/norma-run/norma/audit"
	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/manifest"
)

// ReasonDevPackage refuses the package directory of a development plugin
// that overlaps the workspace or the state directory: it is mounted
// read-only whole, so it would show the server files the workspace policy
// denies (.env) or Norma's own state.
const ReasonDevPackage capability.Reason = "PLUGIN_DEV_PACKAGE"

// devLaunch is how a plugin that is not installed starts (see
// [Host.LoadDev]): its command line in place of the manifest's entrypoint
// and args, in its package directory.
type devLaunch struct {
	argv []string // CMD ARGS as given
	// data is its data directory (data_dir: true): a temporary one,
	// created at the first start and removed at Close.
	data string
}

// LoadDev loads the plugin of manifest m, not installed, for development
// (`norma mcp proxy --manifest FILE -- CMD ARGS...`): dir, the manifest's
// directory, is its package (${package}, mounted read-only, and the
// server's working directory), and argv starts its server in place of the
// manifest's entrypoint and args. Everything else is what [Host.Load]
// does for an installed plugin, by the same code: the policy compiled
// from the manifest and grant (nil: no grant layer, so the manifest's own
// requests, under the ceiling layers), the sandbox spec, the broker, the
// environment, [EntryCommand] for argv[0], the tool checks. It is started
// at once.
//
// argv[0] is a path (relative to dir) or a bare name looked up in
// [SandboxPath], never the caller's PATH; argv[1:] may use the manifest's
// templates (${workspace}, ...). Nothing is written to the plugin state:
// its tool pins and a hold last for the run only, and a data directory is
// a temporary one. The load is audited as consent_granted with detail
// dev=true and the manifest's digest.
func (h *Host) LoadDev(ctx context.Context, m *manifest.Manifest, dir string, argv []string, grant *manifest.Layer) (*Plugin, error) {
	if m == nil || len(argv) == 0 || argv[0] == "" {
		return nil, errors.New("plugin host: LoadDev: a manifest and a command are required")
	}
	dir, err := h.devPackage(dir)
	if err != nil {
		return nil, err
	}
	set, err := h.cache.Get(h.cfg.inputs(m, grant, 0))
	if err != nil {
		return nil, err
	}
	p := &Plugin{h: h, server: m.ID, m: m, dir: dir, grant: grant, set: set, stderr: newRing(64 << 10),
		credits: make(chan string, 16), dev: &devLaunch{argv: append([]string(nil), argv...)}}
	h.mu.Lock()
	_, dup := h.plugins[m.ID]
	h.mu.Unlock()
	if dup {
		return nil, fmt.Errorf("plugin host: LoadDev: a plugin %s is already loaded", m.ID)
	}
	grantOf := "none: the manifest's own requests, under the workspace, settings and run layers"
	if grant != nil {
		grantOf = grant.Digest()
	}
	h.cfg.Audit.Record(context.WithoutCancel(ctx), audit.Event{Type: audit.TypeConsentGranted, RunID: h.cfg.RunID, Plugin: m.ID,
		PluginVersion: m.Version, ManifestDigest: m.Digest(),
		Detail: map[string]string{"dev": "true", "package": dir, "command": strings.Join(argv, " "), "grant": grantOf}})
	if err := p.ensureStarted(ctx); err != nil {
		p.Close()
		return nil, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, dup := h.plugins[m.ID]; dup {
		p.Close()
		return nil, fmt.Errorf("plugin host: LoadDev: a plugin %s is already loaded", m.ID)
	}
	h.plugins[m.ID] = p
	return p, nil
}

// devPackage returns the real path of a development plugin's package
// directory, refused when it overlaps the workspace or the state
// directory (either inside the other).
func (h *Host) devPackage(dir string) (string, error) {
	real, err := filepath.EvalSymlinks(dir)
	if err == nil {
		real, err = filepath.Abs(real)
	}
	if err != nil {
		return "", fmt.Errorf("plugin host: the package directory: %w", err)
	}
	if fi, err := os.Stat(real); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("plugin host: the package directory %s is not a directory", dir)
	}
	refuse := func(what, path string) error {
		return capability.Denied(ReasonDevPackage, real, fmt.Sprintf("the manifest's directory %s overlaps %s %s: it is mounted read-only whole, "+
			"so the server would see what the policy hides there; keep the manifest and the server in a directory of their own", real, what, path))
	}
	for _, x := range []struct{ what, path string }{{"the workspace", h.cfg.Workspace}, {"Norma's state directory", h.cfg.Home}} {
		if x.path == "" {
			continue
		}
		other, err := filepath.EvalSymlinks(x.path)
		if err != nil {
			other = x.path
		}
		if inDir(real, other) || inDir(other, real) {
			return "", refuse(x.what, other)
		}
	}
	return real, nil
}

// inDir reports whether p is dir or lies below it (both clean, absolute).
func inDir(p, dir string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && (rel == "." || filepath.IsLocal(rel))
}

// command is how the plugin's server starts: the installed plugin's
// entrypoint (in its package) and the manifest's args, or a development
// plugin's CMD and ARGS; both through [EntryCommand].
func (p *Plugin) command() (Command, []string, error) {
	if p.dev == nil {
		cmd, err := EntryCommand(filepath.Join(p.dir, filepath.FromSlash(p.m.Entrypoint)))
		if err != nil {
			return Command{}, nil, fmt.Errorf("entrypoint: %w", err)
		}
		return cmd, p.m.Args, nil
	}
	name := p.dev.argv[0]
	var prog string
	var err error
	if strings.Contains(name, "/") {
		prog = name
		if !filepath.IsAbs(prog) {
			prog = filepath.Join(p.dir, prog)
		}
	} else if prog, err = findInterpreter(name); err != nil {
		return Command{}, nil, fmt.Errorf("command: %w", err)
	}
	cmd, err := EntryCommand(prog)
	if err != nil {
		return Command{}, nil, fmt.Errorf("command: %w", err)
	}
	return cmd, p.dev.argv[1:], nil
}

// workDir is the server's working directory: /tmp for an installed
// plugin, the package directory for a development one (where its CMD's
// relative paths, such as `node dist/index.js`, are meant).
func (p *Plugin) workDir() string {
	if p.dev != nil {
		return p.dir
	}
	return "/tmp"
}

// dataDir returns the plugin's data directory: an installed plugin's
// STATE/plugins/ID/data, a development plugin's temporary one (created
// here). The caller holds p.mu (a start).
func (p *Plugin) dataDir() (string, error) {
	if p.dev == nil {
		return p.h.cfg.Manager.DataDir(p.m.ID), nil
	}
	if p.dev.data == "" {
		d, err := os.MkdirTemp("", "norma-dev-data-")
		if err != nil {
			return "", err
		}
		p.dev.data = d
	}
	return p.dev.data, nil
}

// closeDev removes a development plugin's temporary data directory.
func (p *Plugin) closeDev() {
	if p.dev == nil {
		return
	}
	p.mu.Lock()
	d := p.dev.data
	p.dev.data = ""
	p.mu.Unlock()
	if d != "" {
		os.RemoveAll(d)
	}
}
