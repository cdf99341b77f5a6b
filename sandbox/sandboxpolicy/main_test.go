package sandboxpolicy

import (
	"testing"

	"github.com/norma-run/norma/sandbox/sandboxtest"
)

// The sandbox re-executes this test binary as its init.
func TestMain(m *testing.M) { sandboxtest.Main(m) }
