package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/norma-run/norma/door/agenthook"
)

// TestServeHooksConcurrent runs the daemon's one engine from many
// goroutines at once (run it with -race): every answer is its own call's.
func TestServeHooksConcurrent(t *testing.T) {
	e := newRunEnv(t)
	for _, kv := range isolated(t) {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	cmd := newRoot()
	if err := cmd.ParseFlags([]string{"--home", e.home}); err != nil {
		t.Fatal(err)
	}
	cmd.SetContext(t.Context())
	h, err := newServeHooks(cmd)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			file, want := "docs/intro.md", "allow"
			if i%2 == 1 {
				file, want = ".env", "deny"
			}
			body := preToolUse(e.ws, fmt.Sprintf("toolu_%d", i), "Read", fmt.Sprintf(`{"file_path":%q}`, filepath.Join(e.ws, file)))
			a := h.Answer(context.Background(), agenthook.ClaudeCode, []byte(body))
			var out struct {
				H struct {
					D string `json:"permissionDecision"`
				} `json:"hookSpecificOutput"`
			}
			if err := json.Unmarshal(a.Out, &out); err != nil || out.H.D != want || a.Exit != 0 {
				t.Errorf("call %d: %q exit %d, want %s", i, a.Out, a.Exit, want)
			}
		})
	}
	wg.Wait()
}
