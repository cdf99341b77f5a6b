//go:build linux && !norma_init

package sandbox

import (
	"bytes"
	"flag"
	"os"
	"testing"

	"github.com/norma-run/norma/sandbox/seccompgen"
)

var updateSeccomp = flag.Bool("update", false, "rewrite seccomp_*.bpf from package seccompgen")

// TestSeccompFiltersCurrent: the embedded filters are what seccompgen
// assembles from the sources now.
func TestSeccompFiltersCurrent(t *testing.T) {
	for _, tc := range []struct {
		file     string
		broker   bool
		embedded []byte
	}{{"seccomp_isolated.bpf", false, isolatedFilter}, {"seccomp_broker.bpf", true, brokerFilter}} {
		want, err := seccompgen.Filter(tc.broker)
		if err != nil {
			t.Fatal(err)
		}
		if *updateSeccomp {
			if err := os.WriteFile(tc.file, want, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if !bytes.Equal(tc.embedded, want) {
			t.Errorf("%s is stale: go test ./sandbox -run TestSeccompFiltersCurrent -update", tc.file)
		}
	}
}
