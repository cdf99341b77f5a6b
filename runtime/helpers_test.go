package runtime_test

import (
	"testing"

	"github.com/norma-run/norma/agent"
	"github.com/norma-run/norma/provider/scripted"
	"github.com/norma-run/norma/runtime"
)

// scriptedSession is a session of rt whose model plays script, with its
// run state in a temporary directory; it is closed when the test ends.
func scriptedSession(t *testing.T, rt *runtime.Runtime, script string) *agent.Session {
	t.Helper()
	sc, err := scripted.Parse("script.yaml", []byte(script))
	if err != nil {
		t.Fatal(err)
	}
	s, err := rt.Session(t.Context(), agent.WithProvider(scripted.New(sc), "scripted"), agent.WithStateDir(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
