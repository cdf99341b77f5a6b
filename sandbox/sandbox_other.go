//go:build !linux

package sandbox

import (
	"context"
	"io"
	"runtime"

	"github.com/norma-run/norma/capability"
)

var errUnsupported = NewError(capability.ReasonSandboxUnavailable, "platform", "",
	"the OS sandbox is implemented for Linux only", nil)

// Runner starts sandboxed processes; on this platform it always refuses.
type Runner struct {
	Executable string
}

// Process is a sandboxed process tree; it cannot exist on this platform.
type Process struct {
	Stdin  io.WriteCloser
	Stdout io.ReadCloser
	Stderr io.ReadCloser
}

// Run refuses: there is no OS sandbox on this platform.
func Run(ctx context.Context, s Spec) (Result, error) { return Result{}, errUnsupported }

// Start refuses: there is no OS sandbox on this platform.
func Start(ctx context.Context, s Spec) (*Process, error) { return nil, errUnsupported }

// Run refuses: there is no OS sandbox on this platform.
func (r *Runner) Run(ctx context.Context, s Spec) (Result, error) { return Result{}, errUnsupported }

// Start refuses: there is no OS sandbox on this platform.
func (r *Runner) Start(ctx context.Context, s Spec) (*Process, error) { return nil, errUnsupported }

// Pid returns 0.
func (p *Process) Pid() int { return 0 }

// Kill does nothing.
func (p *Process) Kill() error { return errUnsupported }

// Wait returns an error.
func (p *Process) Wait() (Result, error) { return Result{}, errUnsupported }

// IsInit reports false: there is no sandbox init on this platform.
func IsInit() bool { return false }

// InitMain panics: it is only reachable when IsInit is true.
func InitMain() { panic("sandbox: InitMain on an unsupported platform") }

// Probe reports that nothing is available.
func Probe() Capabilities {
	c := Capabilities{OS: runtime.GOOS, Arch: runtime.GOARCH}
	c.derive()
	return c
}

// Ready is Probe().Ready: false off Linux.
func Ready() bool { return Probe().Ready }
