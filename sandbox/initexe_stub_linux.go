//go:build linux && norma_init

package sandbox

import "errors"

// initExe is empty in the slim init itself (built with -tags norma_init),
// which never starts a sandbox and must not embed an older copy of itself.
var initExe []byte

// seccompAvailable is only asked by Probe, on the host; the slim init
// does not link go-seccomp-bpf.
func seccompAvailable() bool { return false }

// seccompFilter is host-side: the slim init never starts a sandbox.
func seccompFilter(bool) ([]byte, error) {
	return nil, errors.New("sandbox: the slim init does not start sandboxes")
}
