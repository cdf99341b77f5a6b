package agenthook

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/norma-run/norma/audit"
	"github.com/norma-run/norma/gate"
	"github.com/norma-run/norma/policy"
	"github.com/norma-run/norma/runtime"
	"github.com/norma-run/norma/settings"
)

// maxRuntimes bounds the runtimes an engine keeps open.
const maxRuntimes = 32

// auditTimeout bounds recording one event, also after the decision's own
// deadline passed (the refusal it became is recorded).
const auditTimeout = 5 * time.Second

// runtime returns the runtime of ev's workspace and mode, opened anew
// when the files it was built from changed since it was cached.
func (e *Engine) runtime(ctx context.Context, ev Event) (*rtEntry, error) {
	k := rtKey{cwd: ev.Cwd, mode: ev.PermissionMode}
	fp := e.fingerprint(ev.Cwd)
	e.mu.Lock()
	en := e.rt[k]
	if en != nil && en.fp == fp {
		e.mu.Unlock()
		return en, nil
	}
	delete(e.rt, k)
	e.mu.Unlock()
	if en != nil {
		en.closeLater()
	}
	en, err := e.open(ctx, ev)
	if err != nil {
		return nil, err
	}
	en.fp = fp
	e.mu.Lock()
	if old := e.rt[k]; old != nil && old.fp == fp {
		// Another call opened the same one meanwhile: keep that.
		e.mu.Unlock()
		en.rt.Close()
		return old, nil
	} else if old != nil {
		old.closeLater()
	}
	if len(e.rt) >= maxRuntimes {
		// A daemon serving many workspaces keeps a bounded few open.
		for k2, old := range e.rt {
			delete(e.rt, k2)
			old.closeLater()
			break
		}
	}
	e.rt[k] = en
	e.mu.Unlock()
	return en, nil
}

// closeLater closes a runtime no longer cached once the call deciding
// with it, if any, is done.
func (en *rtEntry) closeLater() {
	go func() {
		en.mu.Lock()
		defer en.mu.Unlock()
		en.closed = true
		en.rt.Close()
	}()
}

// open opens the workspace runtime of ev as `norma policy explain --tool`
// does (runtime.OpenExplain, the installed plugins as last served), in
// Norma's mode narrowed by the agent's.
func (e *Engine) open(ctx context.Context, ev Event) (*rtEntry, error) {
	// Rules written with an absolute path (//abs, ~/x) name the
	// workspace as the agent's shell does: by its resolved path, and the
	// shell's home directory.
	rules := policy.Rules{Root: resolved(ev.Cwd), Home: resolved(e.o.Shell.Home)}
	o := runtime.Options{Dir: ev.Cwd, Home: e.o.Home, Mode: gate.ModeDefault, Settings: e.o.Settings, Audit: discard{},
		Describe: true, NarrowMode: narrow(ev.PermissionMode), Warn: e.o.Warn, Rules: rules, Environ: e.o.Environ}
	rt, err := runtime.OpenExplain(ctx, o)
	if err != nil {
		return nil, fmt.Errorf("the Norma runtime of %s did not open: %w", ev.Cwd, err)
	}
	rs, err := policy.CompileRules(rt.Rules())
	if err != nil {
		rt.Close()
		return nil, err
	}
	return &rtEntry{rt: rt, rules: rs, shell: e.o.Shell}, nil
}

// resolved is the absolute path p with symbolic links resolved, p
// cleaned when it does not resolve, "" when p is not absolute.
func resolved(p string) string {
	if !filepath.IsAbs(p) {
		return ""
	}
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return filepath.Clean(p)
}

// fingerprint is a stat fingerprint of the files a runtime of workspace
// dir is built from: the settings files, the workspace's .norma directory
// (policy, settings, hooks), the state directory's trust records and the
// installed plugins' state. Stat only: it costs some tens of
// microseconds, so each call can revalidate. A file that changes keeps
// its size and its modification time only if it is rewritten in place
// within the clock's resolution; Norma's own writers replace files (a new
// inode).
func (e *Engine) fingerprint(dir string) string {
	var b strings.Builder
	so := e.o.Settings
	if so.UserDir != "" {
		stamp(&b, filepath.Join(so.UserDir, "settings.yaml"))
	}
	if so.Flag != "" {
		stamp(&b, so.Flag)
	}
	if so.Managed != "" {
		stamp(&b, so.Managed)
	}
	stamp(&b, filepath.Join(dir, settings.WorkspaceFile))
	stamp(&b, filepath.Join(dir, settings.LocalFile))
	stamp(&b, filepath.Join(dir, runtime.PolicyFile))
	stampTree(&b, filepath.Join(dir, ".norma", "hooks"), 2)
	if h := e.o.Home; h != "" {
		stamp(&b, filepath.Join(h, runtime.PolicyTrustFile))
		stamp(&b, filepath.Join(h, runtime.HookTrustFile))
		stampTree(&b, filepath.Join(h, "plugins"), 2)
	}
	return b.String()
}

func stamp(b *strings.Builder, p string) {
	fi, err := os.Stat(p)
	if err != nil {
		fmt.Fprintf(b, "%s:-\n", p)
		return
	}
	fmt.Fprintf(b, "%s:%d:%d:%d:%s\n", p, fi.Size(), fi.ModTime().UnixNano(), inode(fi), fi.Mode())
}

// stampTree stamps dir and what lies in it, depth levels deep.
func stampTree(b *strings.Builder, dir string, depth int) {
	stamp(b, dir)
	if depth == 0 {
		return
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, d := range ents {
		p := filepath.Join(dir, d.Name())
		if d.Type()&fs.ModeDir != 0 {
			stampTree(b, p, depth-1)
		} else {
			stamp(b, p)
		}
	}
}

// discard is the runtimes' own sink: explaining records nothing; the
// engine records the decision itself.
type discard struct{}

func (discard) Record(context.Context, audit.Event) error { return nil }

// toolFailed reports whether a tool_response says the call failed: a
// JSON object with is_error or success false, or an error field.
func toolFailed(resp json.RawMessage) bool {
	var r struct {
		IsError *bool           `json:"is_error"`
		Success *bool           `json:"success"`
		Error   json.RawMessage `json:"error"`
	}
	if json.Unmarshal(resp, &r) != nil {
		return false
	}
	return (r.IsError != nil && *r.IsError) || (r.Success != nil && !*r.Success) || (len(r.Error) > 0 && string(r.Error) != "null" && string(r.Error) != `""`)
}

// cached returns the cached runtime of cwd and mode, for tests.
func (e *Engine) cached(cwd, mode string) *rtEntry {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.rt[rtKey{cwd: cwd, mode: mode}]
}
