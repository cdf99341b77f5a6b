package tool

import (
	"context"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
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

// Command is one process to run: argv without a shell, optional stdin, and a
// workspace-relative working directory ("" is the workspace root).
type Command struct {
	Argv  []string
	Stdin []byte
	Dir   string
}

// CommandResult is a finished process.
type CommandResult struct {
	Stdout, Stderr []byte
	ExitCode       int
}

// Runner runs processes inside the sandbox. The gate wraps it so that every
// argv is checked by the policy and the permission rules before it runs.
type Runner interface {
	Run(ctx context.Context, cmd Command) (CommandResult, error)
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
	// Exec runs processes; nil when spawning is not allowed.
	Exec Runner

	// RunID, Principals and ToolUseID identify the call.
	RunID      string
	Principals []string
	ToolUseID  string
	// IdempotencyKey is derived from the approval that let this call run,
	// or from the action hash when none was needed; send it as the
	// Idempotency-Key of a remote write so a retried call is applied once.
	IdempotencyKey string
}
