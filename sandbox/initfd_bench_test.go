//go:build linux && !norma_init

package sandbox

import (
	"testing"

	"golang.org/x/sys/unix"
)

// BenchmarkSealedMemfd is what each process that launches a sandbox pays
// once: the embedded slim init copied into a sealed memfd.
func BenchmarkSealedMemfd(b *testing.B) {
	b.SetBytes(int64(len(initExe)))
	for b.Loop() {
		fd, err := sealedMemfd("norma-sandbox-init", initExe)
		if err != nil {
			b.Fatal(err)
		}
		unix.Close(fd)
	}
}
