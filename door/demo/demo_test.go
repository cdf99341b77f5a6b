package demo

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/norma-run/norma/sandbox/sandboxtest"
)

func TestMain(m *testing.M) { sandboxtest.Main(m) }

// TestDemo runs the whole showcase and asserts its summary: the counts of
// allowed, approved and denied calls, the reasons, mallory's empty report,
// the held update with exactly its widening, and the verified chain.
func TestDemo(t *testing.T) {
	sandboxtest.Require(t)
	var out bytes.Buffer
	sum, err := Run(t.Context(), Options{Root: "../..", Yes: true, Out: &out})
	if err != nil {
		t.Fatalf("demo: %v\n%s", err, out.String())
	}
	t.Cleanup(func() { os.RemoveAll(sum.Home) })
	want := Summary{Allowed: 4, Approved: 1, Denied: 2, Comments: 1, UpdateHeld: true, ChainVerified: true}
	if sum.Allowed != want.Allowed || sum.Approved != want.Approved || sum.Denied != want.Denied || sum.Comments != want.Comments ||
		!sum.UpdateHeld || !sum.ChainVerified {
		t.Errorf("summary = %+v\n%s", sum, out.String())
	}
	if sum.Reasons["FILESYSTEM_READ_DENIED"] != 1 || sum.Reasons["NETWORK_DESTINATION_DENIED"] != 1 {
		t.Errorf("reasons = %v", sum.Reasons)
	}
	if sum.MalloryAttempts < 15 || sum.MallorySucceeded != 0 {
		t.Errorf("mallory: %d attempts, %d succeeded\n%s", sum.MalloryAttempts, sum.MallorySucceeded, out.String())
	}
	if got := strings.Join(sum.Widened, "\n"); got != "filesystem.read workspace://src/**\nnetwork POST https://hooks.example.invalid:443/notify/{channel}" {
		t.Errorf("widened = %q", got)
	}
	if sum.Canary {
		t.Error("the secret token or a canary leaked")
	}
	// Byte scan: the secret is in the workspace's .env (which every tool was
	// denied) and, encrypted, in the vault; it is nowhere in the state
	// directory in clear: not in the audit database or its WAL, the run
	// state, spilled outputs or logs — nor in what the demo printed.
	if strings.Contains(out.String(), sum.token) {
		t.Error("the secret token was printed")
	}
	filepath.WalkDir(sum.Home, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		if b, err := os.ReadFile(p); err == nil && bytes.Contains(b, []byte(sum.token)) {
			t.Errorf("the secret token is in clear in %s", p)
		}
		return nil
	})
	if sum.Events < 10 {
		t.Errorf("only %d audit events", sum.Events)
	}
}
