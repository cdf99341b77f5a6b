package hook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// MaxHookFile bounds the size of a hook file that is verified and copied.
const MaxHookFile = 16 << 20

// MaxHookOutput bounds what is kept of a command hook's stdout and stderr.
const MaxHookOutput = 1 << 20

// Command is a command hook: an executable file run with the event as JSON
// on stdin. The process gets only Env plus PATH and LANG (never the host
// process's environment), runs in its own process group in Dir (empty: a
// private temporary directory) and is killed, with its group, when the hook
// times out or the dispatch is canceled.
type Command struct {
	// Path is the absolute path of the hook file.
	Path string
	Args []string
	// Env holds extra KEY=VALUE entries the operator configured.
	Env []string
	// Dir is the working directory; empty means a private temp directory.
	Dir string
	// Trust, when not nil, makes the file run only if its sha256 is
	// recorded there. Hooks that come from a workspace must set it.
	Trust *TrustStore
	// Path of the interpreter-free PATH given to the hook; empty means
	// "/usr/local/bin:/usr/bin:/bin".
	SearchPath string
}

type limitedBuffer struct {
	bytes.Buffer
	max       int
	truncated bool
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.Len(); room < len(p) {
		if room > 0 {
			b.Buffer.Write(p[:room])
		}
		b.truncated = true
		return len(p), nil
	}
	return b.Buffer.Write(p)
}

// Run implements Handler with the exit-code protocol: 0 success (stdout
// may be a JSON Output; other stdout is additional context), 2 block
// (stderr is the reason), anything else failure.
func (c *Command) Run(ctx context.Context, in Input) (Output, error) {
	if !filepath.IsAbs(c.Path) {
		return Output{}, fmt.Errorf("hook: command path %q is not absolute", c.Path)
	}
	exe := c.Path
	tmp, err := os.MkdirTemp("", "norma-hook-")
	if err != nil {
		return Output{}, fmt.Errorf("hook: temp dir: %w", err)
	}
	defer os.RemoveAll(tmp)
	if c.Trust != nil {
		exe, err = c.verifiedCopy(tmp)
		if err != nil {
			return Output{}, err
		}
	}
	stdin, err := json.Marshal(in)
	if err != nil {
		return Output{}, fmt.Errorf("hook: encode input: %w", err)
	}
	stdout := &limitedBuffer{max: MaxHookOutput}
	stderr := &limitedBuffer{max: 4096}
	err = c.start(ctx, exe, tmp, stdin, stdout, stderr)
	if ctx.Err() != nil {
		return Output{}, ctx.Err()
	}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee) && ee.ExitCode() == 2:
		reason := strings.TrimSpace(stderr.String())
		if reason == "" {
			reason = "blocked by hook"
		}
		return Output{}, fmt.Errorf("%w: %s", ErrBlocked, reason)
	case errors.As(err, &ee):
		return Output{}, fmt.Errorf("exit status %d", ee.ExitCode())
	default:
		return Output{}, fmt.Errorf("run: %w", err)
	}
	if stdout.truncated {
		return Output{}, errors.New("stdout exceeds the output limit")
	}
	out := bytes.TrimSpace(stdout.Bytes())
	if len(out) == 0 {
		return Output{}, nil
	}
	if out[0] != '{' {
		return Output{Specific: &Specific{AdditionalContext: string(out)}}, nil
	}
	var o Output
	dec := json.NewDecoder(bytes.NewReader(out))
	if err := dec.Decode(&o); err != nil {
		return Output{}, fmt.Errorf("stdout is not a valid hook output: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return Output{}, errors.New("stdout has data after the JSON output")
	}
	return o, nil
}

// verifiedCopy reads the hook file, checks it against the trust store and
// writes the verified bytes to an executable private copy.
func (c *Command) verifiedCopy(dir string) (string, error) {
	f, err := os.Open(c.Path)
	if err != nil {
		return "", fmt.Errorf("hook: open: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxHookFile+1))
	if err != nil {
		return "", fmt.Errorf("hook: read: %w", err)
	}
	if len(data) > MaxHookFile {
		return "", errors.New("hook: file too large")
	}
	if err := c.Trust.Check(c.Path, c.Args, data); err != nil {
		return "", err
	}
	exe := filepath.Join(dir, "hook")
	if err := os.WriteFile(exe, data, 0o700); err != nil {
		return "", fmt.Errorf("hook: copy: %w", err)
	}
	return exe, nil
}

// start runs the hook at exe and waits for it. A verified copy was just
// written by this process: a fork by another goroutine between that write
// and its close can hold the file open for writing in a child that has not
// yet exec'd, so exec fails with ETXTBSY (golang/go#22315). Nothing ran
// then, so the start is retried, briefly, as the go command does.
func (c *Command) start(ctx context.Context, exe, tmp string, stdin []byte, stdout, stderr io.Writer) error {
	path := c.SearchPath
	if path == "" {
		path = "/usr/local/bin:/usr/bin:/bin"
	}
	for attempt := 1; ; attempt++ {
		cmd := exec.CommandContext(ctx, exe, c.Args...)
		cmd.Dir = c.Dir
		if cmd.Dir == "" {
			cmd.Dir = tmp
		}
		cmd.Env = append([]string{"PATH=" + path, "LANG=C.UTF-8", "HOME=" + tmp}, c.Env...)
		cmd.Stdin = bytes.NewReader(stdin)
		cmd.Stdout, cmd.Stderr = stdout, stderr
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		cmd.Cancel = func() error {
			// Kill the whole group: a hook that forked must not outlive it.
			return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
		cmd.WaitDelay = 2 * time.Second
		err := cmd.Start()
		if errors.Is(err, syscall.ETXTBSY) && attempt < 10 && ctx.Err() == nil {
			time.Sleep(time.Duration(attempt) * 5 * time.Millisecond)
			continue
		}
		if err != nil {
			return err
		}
		return cmd.Wait()
	}
}
