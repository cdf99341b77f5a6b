// Package sandboxtest holds what every test binary that starts sandboxed
// processes needs: the init hook (the sandbox re-executes the current
// executable as its init) and the rule for a host without the sandbox —
// skip with the reason, or fail when NORMA_REQUIRE_SANDBOX=1 (set by CI).
package sandboxtest

import (
	"os"
	"strings"
	"testing"

	"github.com/norma-run/norma/sandbox"
)

// Main runs the sandbox init when this test binary was re-executed as one,
// and the tests otherwise. Call it from TestMain.
func Main(m *testing.M) {
	if sandbox.IsInit() {
		sandbox.InitMain()
	}
	os.Exit(m.Run())
}

// Require skips t, or fails it under NORMA_REQUIRE_SANDBOX=1, when this host
// cannot build the sandbox.
func Require(t testing.TB) {
	t.Helper()
	c := sandbox.Probe()
	if c.Ready {
		return
	}
	msg := "sandbox layers missing: " + strings.Join(c.Missing, "; ")
	if os.Getenv("NORMA_REQUIRE_SANDBOX") == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}
