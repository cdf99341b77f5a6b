//go:build linux && norma_init

package sandbox

// initExe is empty in the slim init itself (built with -tags norma_init),
// which never starts a sandbox and must not embed an older copy of itself.
var initExe []byte
