package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/norma-run/norma/door/agenthook"
	"github.com/norma-run/norma/internal/termtext"
)

// codexBin is the Codex binary that answers for Codex's hook trust:
// --codex, else codex on PATH.
func codexBin(flag string) (string, error) {
	if flag != "" {
		return flag, nil
	}
	p, err := exec.LookPath("codex")
	if err != nil {
		return "", errors.New("no codex on PATH: pass --codex with the path of the Codex binary")
	}
	return p, nil
}

// startCodex starts `codex app-server` of bin in dir, with the user's
// environment and env on top (CODEX_HOME for a scratch home).
func startCodex(ctx context.Context, bin, dir string, env ...string) (*agenthook.CodexAppServer, error) {
	c := exec.CommandContext(ctx, bin, "app-server")
	c.Dir = dir
	c.Env = append(os.Environ(), env...)
	return agenthook.StartCodexAppServer(ctx, c)
}

// codexPreview lists the hooks Codex will load from the hooks file path
// once it holds content, by asking a Codex of a scratch home that holds
// only that file: Codex's key and hash of each, as the real file will
// have them (the hash does not depend on the path; the keys are rebased).
func codexPreview(ctx context.Context, bin, path string, content []byte) ([]agenthook.CodexHook, error) {
	dir, err := os.MkdirTemp("", "norma-codex-preview-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	if dir, err = filepath.EvalSymlinks(dir); err != nil {
		return nil, err
	}
	scratch := filepath.Join(dir, "hooks.json")
	if err := os.WriteFile(scratch, content, 0o600); err != nil {
		return nil, err
	}
	s, err := startCodex(ctx, bin, dir, "CODEX_HOME="+dir)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	hs, err := s.Hooks(ctx, dir)
	if err != nil {
		return nil, err
	}
	return agenthook.RebaseCodexHooks(agenthook.NormaCodexHooks(hs, scratch), scratch, path)
}

// installCodexHook is `norma hook install codex`: the hooks file written
// as for every agent, and the trust of Norma's hooks recorded in Codex's
// config.toml under the same consent, through Codex's own app-server.
// Nothing is written when Codex cannot be asked; when the trust cannot be
// recorded after the file was written, the install fails and says what
// makes Codex run the hook.
func installCodexHook(cmd *cobra.Command, f hookInstallFlags, edit func(agenthook.Installer, []byte) ([]byte, error)) error {
	ctx, w := cmd.Context(), cmd.OutOrStdout()
	e, err := planAgentSettings(string(agenthook.Codex), f, edit)
	if err != nil {
		return err
	}
	project, err := filepath.Abs(f.project)
	if err != nil {
		return exitWith(exitUsage, err)
	}
	bin, err := codexBin(f.codex)
	if err != nil {
		return codexNotAsked(e.path, err)
	}
	// One session with the user's Codex for the whole install: its
	// home, the hooks it runs now, and after the write, the record.
	s, err := startCodex(ctx, bin, project)
	if err != nil {
		return codexNotAsked(e.path, err)
	}
	defer s.Close()
	config := filepath.Join(s.CodexHome(), "config.toml")
	if f.scope == string(agenthook.ScopeProject) {
		if err := codexLoadsProject(ctx, s, project, e.path); err != nil {
			if !errors.Is(err, errProjectNotLoaded) {
				return codexNotAsked(e.path, err)
			}
			return exitWith(exitFailed, fmt.Errorf("not written: %s: %w.\nTrust the project in Codex, then run %q again", e.path, err, "norma hook install codex --scope project"))
		}
	}

	// The hooks to trust: Norma's hooks of the file as it will be.
	var want []agenthook.CodexHook
	if e.changed() {
		want, err = codexPreview(ctx, bin, e.path, e.updated)
	} else {
		var hs []agenthook.CodexHook
		hs, err = s.Hooks(ctx, project)
		want = agenthook.NormaCodexHooks(hs, e.path)
	}
	if err != nil {
		return codexNotAsked(e.path, err)
	}
	if len(want) == 0 {
		if e.changed() {
			return codexNotAsked(e.path, errors.New("Codex would load none of Norma's hooks from it"))
		}
		return codexNotRun(e.path, config, errors.New("Codex loads none of Norma's hooks from it"), f)
	}
	var todo []agenthook.CodexHook
	for _, h := range want {
		if !h.Enabled {
			// The user turned it off in Codex; Norma does not turn it on.
			return codexNotRun(e.path, config, fmt.Errorf("the hook %s is disabled in Codex (/hooks): enable it there", h.Key), f)
		}
		if !h.Runs() {
			todo = append(todo, h)
		}
	}
	if !e.changed() && len(todo) == 0 {
		fmt.Fprintf(w, "%s: nothing to change; Codex runs Norma's %d hooks (trusted in %s)\n", termtext.Escape(e.path), len(want), termtext.Escape(config))
		return nil
	}

	// What is written, where, before anything is.
	question := "Record the trust in " + config + "?"
	if e.changed() {
		e.show(w)
		question = "Write " + e.path + " and record the trust in " + config + "?"
	} else {
		fmt.Fprintf(w, "%s: Norma's hooks are installed; Codex does not run them until their trust is recorded\n", termtext.Escape(e.path))
	}
	fmt.Fprintf(w, "Codex runs a hook only once its trust is recorded; Codex itself (codex app-server) will add to %s:\n", termtext.Escape(config))
	for _, line := range strings.Split(strings.TrimSuffix(agenthook.CodexTrustTOML(todo), "\n"), "\n") {
		if line == "" {
			fmt.Fprintln(w)
			continue
		}
		fmt.Fprintln(w, "  "+termtext.Escape(line))
	}
	if err := confirmWrite(cmd, f, termtext.Escape(question)); err != nil {
		return err
	}
	if e.changed() {
		if err := e.write(); err != nil {
			return err
		}
		fmt.Fprintf(w, "wrote %s\n", termtext.Escape(e.path))
	}

	// Codex must now list exactly the hooks previewed: the trust is
	// recorded for those keys and hashes, never for what it lists anew.
	hs, err := s.Hooks(ctx, project)
	if err != nil {
		return codexNotRun(e.path, config, err, f)
	}
	listed := map[string]agenthook.CodexHook{}
	for _, h := range agenthook.NormaCodexHooks(hs, e.path) {
		listed[h.Key] = h
	}
	for _, h := range todo {
		if got, ok := listed[h.Key]; !ok || got.CurrentHash != h.CurrentHash {
			err := fmt.Errorf("Codex lists the hook %s otherwise than it previewed (the file changed meanwhile?)", h.Key)
			if f.scope == string(agenthook.ScopeProject) {
				if perr := codexLoadsProject(ctx, s, project, e.path); perr != nil {
					err = perr
				}
			}
			return codexNotRun(e.path, config, err, f)
		}
	}
	file, err := s.Trust(ctx, todo)
	if err != nil {
		return codexNotRun(e.path, config, err, f)
	}
	hs, err = s.Hooks(ctx, project)
	if err != nil {
		return codexNotRun(e.path, config, err, f)
	}
	mine := agenthook.NormaCodexHooks(hs, e.path)
	for _, h := range mine {
		if !h.Runs() {
			why := "its trust is " + h.TrustStatus
			if !h.Enabled {
				why = "it is disabled in Codex (/hooks)"
			}
			return codexNotRun(e.path, config, fmt.Errorf("Codex does not run the hook %s: %s", h.Key, why), f)
		}
	}
	fmt.Fprintf(w, "recorded in %s: Codex runs Norma's %d hooks\n", termtext.Escape(file), len(mine))
	return nil
}

// codexLoadsProject is nil unless Codex has the project configuration
// layer of the hooks file path and does not load it (the project is not
// trusted in Codex): then it says why, in Codex's words.
func codexLoadsProject(ctx context.Context, s *agenthook.CodexAppServer, project, path string) error {
	dotCodex := filepath.Dir(path)
	found, why, err := s.ProjectLayer(ctx, project, dotCodex)
	switch {
	case err != nil:
		return err
	case found && why != "":
		return fmt.Errorf("%w %s, so it would run none of its hooks: %s", errProjectNotLoaded, dotCodex, strings.TrimRight(why, ". "))
	}
	return nil
}

// errProjectNotLoaded says that Codex does not load a project's
// configuration folder.
var errProjectNotLoaded = errors.New("Codex does not load")

// codexNotAsked is the failure of an install that wrote nothing because
// Codex could not be asked about its hooks.
func codexNotAsked(path string, err error) error {
	return exitWith(exitFailed, fmt.Errorf("not written: %s: Codex runs a hook only once its trust is recorded, and Norma records it through Codex (codex app-server), which it could not ask: %w", path, err))
}

// codexNotRun is the failure of an install after which Codex does not run
// Norma's hooks, with what to run. An error of errProjectNotLoaded says
// to trust the project; any other, to trust the hooks.
func codexNotRun(path, config string, err error, f hookInstallFlags) error {
	again := "norma hook install codex"
	if f.scope == string(agenthook.ScopeProject) {
		again += " --scope project"
	}
	fix := fmt.Sprintf("Their trust is not recorded in %s. Run %q again once Codex can be asked, "+
		"or run \"codex\", open /hooks and trust the hooks that run \"norma ... hook codex\"", config, again)
	if errors.Is(err, errProjectNotLoaded) {
		fix = fmt.Sprintf("Trust the project in Codex, then run %q again", again)
	}
	return exitWith(exitFailed, fmt.Errorf("Codex will skip Norma's hooks in %s without a word: %w.\n%s", path, err, fix))
}
