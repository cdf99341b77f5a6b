package agenthook

// Codex CLI's hook trust, as Codex 0.171 implements it (openai/codex,
// codex-rs/hooks/src/engine/discovery.rs; the hooks page of its docs,
// https://developers.openai.com/codex/hooks, "Review and trust hooks"):
//
//   - Codex runs a hook that is not managed (every hook of ~/.codex and of
//     a project's .codex) only when it is enabled and its trust is
//     recorded at its current hash; any other hook is skipped without a
//     word, in `codex exec` too.
//   - The record is hooks.state."KEY".trusted_hash in the user's
//     $CODEX_HOME/config.toml. KEY names the hook by position:
//     SOURCE_PATH:EVENT:GROUP_INDEX:HANDLER_INDEX (event in snake_case).
//     The hash is Codex's own digest ("sha256:...") of the hook's
//     normalized definition (event, matcher, command, timeout), not of
//     the file, so it does not depend on where the hook lives; a hook
//     whose definition or position changes loses its trust.
//   - Codex's app-server lists every hook with its key, current hash and
//     trust status (hooks/list), and writes config.toml with its own
//     editor (config/batchWrite, which keeps comments and every other
//     key): what its /hooks review screen does. Norma asks it the same
//     two questions and never computes a hash itself.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// CodexHook is one hook as Codex lists it (its app-server's hooks/list).
type CodexHook struct {
	Key         string  `json:"key"`
	EventName   string  `json:"eventName"`
	Command     string  `json:"command"`
	Matcher     *string `json:"matcher"`
	SourcePath  string  `json:"sourcePath"`
	Enabled     bool    `json:"enabled"`
	IsManaged   bool    `json:"isManaged"`
	CurrentHash string  `json:"currentHash"`
	// TrustStatus is Codex's: managed, trusted, untrusted (no record) or
	// modified (a record of another hash).
	TrustStatus string `json:"trustStatus"`
}

// Runs reports whether Codex runs h: enabled, and managed or trusted at
// its current hash.
func (h CodexHook) Runs() bool {
	return h.Enabled && (h.TrustStatus == "managed" || h.TrustStatus == "trusted")
}

// NormaCodexHooks returns the hooks of hs that are Norma's (their command
// is `norma ... hook codex`) in the hooks file path.
func NormaCodexHooks(hs []CodexHook, path string) []CodexHook {
	var out []CodexHook
	for _, h := range hs {
		if samePath(h.SourcePath, path) && IsNormaCommand(h.Command, Codex) {
			out = append(out, h)
		}
	}
	return out
}

// samePath reports whether a and b name one file, symbolic links
// resolved where they exist.
func samePath(a, b string) bool {
	if a == b {
		return true
	}
	ra, errA := filepath.EvalSymlinks(a)
	rb, errB := filepath.EvalSymlinks(b)
	return errA == nil && errB == nil && ra == rb
}

// RebaseCodexHooks returns hs, listed from the hooks file from, as they
// are named in the hooks file to that holds the same content: each key's
// source path replaced. Codex's hash does not depend on the path, so the
// hooks a scratch copy of a hooks file lists are those the file will
// list, by the same keys under its own path. A key that does not start
// with from is an error: Codex named it in a way Norma does not know.
func RebaseCodexHooks(hs []CodexHook, from, to string) ([]CodexHook, error) {
	out := make([]CodexHook, 0, len(hs))
	for _, h := range hs {
		rest, ok := strings.CutPrefix(h.Key, from+":")
		if !ok {
			return nil, fmt.Errorf("agenthook: Codex names the hook %q by a key that does not start with its file %s", h.Key, from)
		}
		h.Key, h.SourcePath = to+":"+rest, to
		out = append(out, h)
	}
	return out, nil
}

// CodexTrustTOML is the entries of Codex's config.toml that record the
// trust of hs, as Codex writes them (the preview shown before Norma asks
// Codex to write them).
func CodexTrustTOML(hs []CodexHook) string {
	var b strings.Builder
	for i, h := range hs {
		if i > 0 {
			b.WriteByte('\n')
		}
		k, _ := json.Marshal(h.Key)
		v, _ := json.Marshal(h.CurrentHash)
		fmt.Fprintf(&b, "[hooks.state.%s]\ntrusted_hash = %s\n", k, v)
	}
	return b.String()
}

// CodexAppServer is a session with `codex app-server`, Codex's own JSON-RPC
// interface over stdio: the one way Norma reads and records Codex's hook
// trust. It is not safe for concurrent use.
type CodexAppServer struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan []byte
	done   chan struct{}
	closed sync.Once
	stderr *capped
	next   int
	home   string
	wait   chan error
}

// codexCallTimeout bounds one app-server call that the caller's context
// does not bound sooner: Codex's start (its first answer) takes seconds
// on a busy machine.
const codexCallTimeout = 60 * time.Second

// StartCodexAppServer starts cmd (`codex app-server`, with the
// environment and directory the caller chose: CODEX_HOME names the Codex
// home it reads and writes) and initializes the session. The caller
// closes it.
func StartCodexAppServer(ctx context.Context, cmd *exec.Cmd) (*CodexAppServer, error) {
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	// Stdout goes through a pipe of Norma's own, read to its end, so
	// that Wait returns once the process is gone (and, with WaitDelay,
	// even if a process it started holds the pipe).
	pr, pw := io.Pipe()
	s := &CodexAppServer{cmd: cmd, stdin: stdin, lines: make(chan []byte, 16), done: make(chan struct{}),
		stderr: &capped{max: 4 << 10}, wait: make(chan error, 1)}
	cmd.Stdout, cmd.Stderr = pw, s.stderr
	if cmd.WaitDelay == 0 {
		cmd.WaitDelay = 2 * time.Second
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", cmd.Path, err)
	}
	go func() {
		defer close(s.lines)
		sc := bufio.NewScanner(pr)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			select {
			case s.lines <- bytes.Clone(sc.Bytes()):
			case <-s.done: // closed: read on to the end, unread
			}
		}
		io.Copy(io.Discard, pr)
	}()
	go func() {
		err := cmd.Wait()
		pw.Close()
		s.wait <- err
	}()
	var init struct {
		CodexHome string `json:"codexHome"`
	}
	if err := s.call(ctx, "initialize", map[string]any{"clientInfo": map[string]any{"name": "norma", "title": "Norma", "version": "1"}}, &init); err != nil {
		s.Close()
		return nil, err
	}
	if err := s.send(map[string]any{"jsonrpc": "2.0", "method": "initialized"}); err != nil {
		s.Close()
		return nil, err
	}
	s.home = init.CodexHome
	return s, nil
}

// CodexHome is the Codex home the app-server reads and writes, as it
// said when the session began.
func (s *CodexAppServer) CodexHome() string { return s.home }

// Hooks lists the hooks Codex loads for a session in cwd (the user's, the
// project's when the project is trusted, the plugins'), with their trust.
func (s *CodexAppServer) Hooks(ctx context.Context, cwd string) ([]CodexHook, error) {
	var res struct {
		Data []struct {
			Hooks  []CodexHook `json:"hooks"`
			Errors []struct {
				Path    string `json:"path"`
				Message string `json:"message"`
			} `json:"errors"`
		} `json:"data"`
	}
	if err := s.call(ctx, "hooks/list", map[string]any{"cwds": []string{cwd}}, &res); err != nil {
		return nil, err
	}
	var out []CodexHook
	var errs []error
	for _, d := range res.Data {
		out = append(out, d.Hooks...)
		for _, e := range d.Errors {
			errs = append(errs, fmt.Errorf("%s: %s", e.Path, e.Message))
		}
	}
	if len(errs) > 0 {
		return out, fmt.Errorf("codex hooks/list: %w", errors.Join(errs...))
	}
	return out, nil
}

// ProjectLayer reports whether Codex, for a session in cwd, has the
// configuration layer of the project folder dotCodex (PROJECT/.codex),
// and why it does not load it, if it does not: Codex loads a project's
// hooks only in a project the user trusts. A folder that does not exist
// yet has no layer (found false).
func (s *CodexAppServer) ProjectLayer(ctx context.Context, cwd, dotCodex string) (found bool, disabledReason string, err error) {
	var res struct {
		Layers []struct {
			Name struct {
				Type           string `json:"type"`
				DotCodexFolder string `json:"dotCodexFolder"`
			} `json:"name"`
			DisabledReason *string `json:"disabledReason"`
		} `json:"layers"`
	}
	if err := s.call(ctx, "config/read", map[string]any{"cwd": cwd, "includeLayers": true}, &res); err != nil {
		return false, "", err
	}
	for _, l := range res.Layers {
		if l.Name.Type != "project" || !samePath(l.Name.DotCodexFolder, dotCodex) {
			continue
		}
		switch {
		case l.DisabledReason == nil:
			return true, "", nil
		case *l.DisabledReason == "":
			return true, "Codex does not load it", nil
		}
		return true, *l.DisabledReason, nil
	}
	return false, "", nil
}

// Trust records the trust of hs at their current hashes in the user's
// config.toml, by Codex's own writer (one upsert into hooks.state, which
// keeps every other key of the file and of each hook's state). It returns
// the file Codex wrote.
func (s *CodexAppServer) Trust(ctx context.Context, hs []CodexHook) (string, error) {
	state := map[string]any{}
	for _, h := range hs {
		state[h.Key] = map[string]any{"trusted_hash": h.CurrentHash}
	}
	var res struct {
		Status   string `json:"status"`
		FilePath string `json:"filePath"`
	}
	err := s.call(ctx, "config/batchWrite", map[string]any{
		"edits": []any{map[string]any{"keyPath": "hooks.state", "mergeStrategy": "upsert", "value": state}},
	}, &res)
	if err != nil {
		return "", err
	}
	if res.Status != "ok" {
		return res.FilePath, fmt.Errorf("codex config/batchWrite: status %q (another configuration layer overrides the user's)", res.Status)
	}
	return res.FilePath, nil
}

// Close ends the session: stdin closed, the process waited for a moment,
// then killed. Closing twice does nothing more.
func (s *CodexAppServer) Close() error {
	s.closed.Do(func() {
		close(s.done)
		s.stdin.Close()
		t := time.NewTimer(3 * time.Second)
		defer t.Stop()
		select {
		case <-s.wait:
		case <-t.C:
			s.cmd.Process.Kill()
			<-s.wait
		}
	})
	return nil
}

func (s *CodexAppServer) send(msg any) error {
	b, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	_, err = s.stdin.Write(append(b, '\n'))
	return err
}

// call sends one request and waits for its answer, skipping the
// notifications Codex sends meanwhile; a request of the server's
// (Norma starts no thread, so none is expected) is refused.
func (s *CodexAppServer) call(ctx context.Context, method string, params, result any) error {
	ctx, cancel := context.WithTimeout(ctx, codexCallTimeout)
	defer cancel()
	s.next++
	id := s.next
	if err := s.send(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params}); err != nil {
		return s.failed(method, err)
	}
	for {
		select {
		case <-ctx.Done():
			return s.failed(method, ctx.Err())
		case line, ok := <-s.lines:
			if !ok {
				return s.failed(method, errors.New("codex app-server exited"))
			}
			var m struct {
				ID     *json.RawMessage `json:"id"`
				Method string           `json:"method"`
				Result json.RawMessage  `json:"result"`
				Error  *struct {
					Code    int    `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if json.Unmarshal(line, &m) != nil || m.ID == nil {
				continue // a notification, or a line that is not JSON-RPC
			}
			if m.Method != "" {
				s.send(map[string]any{"jsonrpc": "2.0", "id": m.ID, "error": map[string]any{"code": -32601, "message": "norma answers no requests"}})
				continue
			}
			var got int
			if json.Unmarshal(*m.ID, &got) != nil || got != id {
				continue
			}
			if m.Error != nil {
				return fmt.Errorf("codex %s: %s (code %d)", method, m.Error.Message, m.Error.Code)
			}
			if err := json.Unmarshal(m.Result, result); err != nil {
				return fmt.Errorf("codex %s: unexpected answer: %w", method, err)
			}
			return nil
		}
	}
}

// failed is err of method, with the end of what Codex wrote on stderr.
func (s *CodexAppServer) failed(method string, err error) error {
	if tail := strings.TrimSpace(s.stderr.String()); tail != "" {
		return fmt.Errorf("codex %s: %w; codex said: %s", method, err, tail)
	}
	return fmt.Errorf("codex %s: %w", method, err)
}

// capped keeps the last max bytes written to it.
type capped struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (c *capped) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.b = append(c.b, p...)
	if len(c.b) > c.max {
		c.b = c.b[len(c.b)-c.max:]
	}
	return len(p), nil
}

func (c *capped) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return string(c.b)
}
