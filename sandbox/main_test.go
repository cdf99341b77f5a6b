package sandbox_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/norma-run/norma/sandbox"
)

// escapee is the path of the escape helper (testdata/escapee), built once
// by TestMain into a temporary directory that tests grant read-only.
var escapee string

func runTests(m *testing.M) int {
	if os.Getenv("NORMA_TEST_ORPHAN_SANDBOX") == "1" {
		orphanSandbox()
	}
	dir, err := os.MkdirTemp("", "norma-escapee-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	escapee = filepath.Join(dir, "escapee")
	build := exec.Command("go", "build", "-o", escapee, "./testdata/escapee")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building the escape helper: %v\n%s", err, out)
		return 1
	}
	return m.Run()
}

// orphanSandbox starts a long sandboxed sleep, prints the pid of its init
// and exits without waiting: the sandbox must die with us.
func orphanSandbox() {
	p, err := sandbox.Start(context.Background(), sandbox.Spec{Argv: []string{"sleep", "60"}, Stdin: nil})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	fmt.Println(p.Pid())
	time.Sleep(100 * time.Millisecond)
	os.Exit(0)
}
