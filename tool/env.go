package tool

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"time"
)

// FS is the scoped file-system capability; *fsguard.FS implements it. Every
// name is workspace-relative and every operation is checked by the guard.
type FS interface {
	Open(ctx context.Context, name string) (*os.File, error)
	ReadFile(ctx context.Context, name string) ([]byte, error)
	WriteFile(ctx context.Context, name string, data []byte, perm fs.FileMode) error
	MkdirAll(ctx context.Context, name string, perm fs.FileMode) error
	Remove(ctx context.Context, name string) error
	Rename(ctx context.Context, oldname, newname string) error
	Stat(ctx context.Context, name string) (fs.FileInfo, error)
	ReadDir(ctx context.Context, name string) ([]fs.DirEntry, error)
	Resolve(name string) (string, error)
}

// Secret is a handle to a secret: it names the secret and the origin it may
// be sent to, and never holds or reveals the value (the egress broker injects
// it). Implementations must redact themselves in logs.
type Secret interface {
	Name() string
	Origin() string
	LogValue() slog.Value
}

// Secrets hands out secret handles; the secrets package implements it. An
// error means the handle is refused.
type Secrets interface {
	Handle(ctx context.Context, name string) (Secret, error)
}

// Command is one process to run: argv without a shell, and how its
// standard streams are wired. Every field is a plain value, so the
// contract does not depend on how the process is confined.
type Command struct {
	// Argv is the program and its arguments; a shell runs only when argv
	// names one (["/bin/bash", "-c", line]), and the gate then checks the
	// commands of line as well.
	Argv []string
	// Dir is the workspace-relative working directory. "" is the workspace
	// root when the process may see it (else a private temporary
	// directory); anything else must be a local path the process may see.
	Dir string
	// Env are KEY=VALUE entries added to the runner's environment (which
	// is explicit: nothing is inherited from the host). Names that make a
	// program run code nobody checked (LD_*, BASH_ENV, BASH_FUNC_*, …)
	// are refused.
	Env []string
	// Stdin is the standard input; nil is empty input.
	Stdin io.Reader
	// Stdout and Stderr receive the output as it arrives. For Run, nil
	// collects it (bounded by MaxCollect) into the CommandResult; for
	// Start, nil discards it. A terminal is the tty side of a
	// pseudo-terminal pair passed as Stdin, Stdout and Stderr.
	Stdout, Stderr io.Writer
	// Timeout, when positive, kills the whole process tree after this
	// long; the result then reports TimedOut.
	Timeout time.Duration
}

// MaxCollect bounds the output Run collects per stream when the Command
// has no writer for it; the rest is dropped.
const MaxCollect = 1 << 20

// CommandResult is how a process tree ended.
type CommandResult struct {
	// Stdout and Stderr are the collected output (Run with nil writers).
	Stdout, Stderr []byte
	// ExitCode is the exit status, or -1 when a signal killed the process.
	ExitCode int
	// Signal is the number of the signal that killed it (0 when it exited).
	Signal int
	// TimedOut reports that Command.Timeout expired and the tree was killed.
	TimedOut bool
	// MemoryExceeded reports that the tree went over its memory limit and
	// the kernel killed a process of it.
	MemoryExceeded bool
}

// Process is a process tree started by [Runner.Start]. Its methods are
// safe for concurrent use.
type Process interface {
	// Wait waits until the whole tree has exited and reports how it ended;
	// it may be called more than once and gives the same answer.
	Wait() (CommandResult, error)
	// Kill kills the whole tree and does not wait.
	Kill() error
	// Pid is the host pid of the tree's root, for operators and tests.
	Pid() int
}

// Redactor masks secrets in a stream of output. The gate redacts every
// result and the output of every process started through Env.Exec; its
// Runner is also a Redactor, so that a tool that reads a process's output
// itself (a terminal's master side) writes it through Stream.
type Redactor interface {
	// Stream wraps w so that what is written to it reaches w with
	// secrets masked, as one stream (a secret split across writes is
	// still caught); Close writes what it held back and does not close w.
	Stream(w io.Writer) io.WriteCloser
}

// Runner is the process capability: it runs processes confined by the
// policy of the call (inside the OS sandbox, for the built-in tools). The
// gate wraps it for every call, so that each argv — and every command a
// shell argv runs — is checked against the deny rules and the policy before
// it starts; Env.Exec is nil when the policy does not allow spawning at
// all. An error means the process never started; the errors of the gate's
// checks are *capability.Error values. A Runner is safe for concurrent use.
type Runner interface {
	// Run runs cmd to completion; cancelling ctx kills the whole tree. A
	// non-zero exit is not an error.
	Run(ctx context.Context, cmd Command) (CommandResult, error)
	// Start starts cmd and returns without waiting: the process outlives
	// the call if the caller lets it (give a context that is not the
	// call's). The tree is killed when ctx is done or Timeout expires; the
	// caller must call Wait.
	Start(ctx context.Context, cmd Command) (Process, error)
}

// Env is everything a handler receives: capabilities and the identity of
// the call, nothing else. There is no workspace path, no process
// environment and no unguarded client. A nil capability is not available to
// this call (Exec is nil when the policy does not allow spawning at all).
type Env struct {
	// FS is the scoped file system.
	FS FS
	// HTTP sends requests through the network guard (or the broker).
	HTTP *http.Client
	// Secrets hands out secret handles.
	Secrets Secrets
	// Exec runs and starts processes (foreground commands, processes that
	// outlive the call, terminals), each one checked by the gate; nil when
	// spawning is not allowed. A tool that needs it and finds nil refuses
	// with CAPABILITY_MISSING and runs nothing.
	Exec Runner

	// RunID, Principals and ToolUseID identify the call.
	RunID      string
	Principals []string
	ToolUseID  string
	// ApprovalKey is the idempotency key of the approval that let this
	// call run (approval.Ticket.IdempotencyKey), empty when the call
	// needed none. Send IdempotencyKey, which falls back on a key of the
	// call.
	ApprovalKey string
}

// IdempotencyKey is the key to send as the Idempotency-Key of a remote
// write so that a retried call is applied once: the approval's
// (ApprovalKey), or else one derived from RunID and ToolUseID, so that a
// retry of the same tool_use has the same key. The derived key is
// computed when asked for (a SHA-256), since most calls never send one;
// it is the same on every call.
func (e Env) IdempotencyKey() string {
	if e.ApprovalKey != "" {
		return e.ApprovalKey
	}
	return callKey(e.RunID, e.ToolUseID)
}

// callKey is the idempotency key of a call no approval gave one: "nik_"
// and 40 hex digits of SHA-256 over the run and the tool_use id. One
// allocation: the string.
func callKey(runID, toolUseID string) string {
	msg := make([]byte, 0, 128)
	msg = append(msg, "norma-call-v1\x00"...)
	msg = append(msg, runID...)
	msg = append(msg, 0)
	msg = append(msg, toolUseID...)
	sum := sha256.Sum256(msg)
	var b [len("nik_") + 40]byte
	n := copy(b[:], "nik_")
	hex.Encode(b[n:], sum[:20])
	return string(b[:])
}
