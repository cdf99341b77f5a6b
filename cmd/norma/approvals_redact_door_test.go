package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestDoorApprovalPreviewRedacted: a headless run asks to Edit a line two
// lines below a token (the diff's context shows it) and a vault secret.
// The approval is stored with its preview: the run's --json event,
// `approvals list`, `approvals show` (text and --json) and every file of
// the state directory hold the masks, never the values. (norma run once
// built its approval service without the run's redactor.)
func TestDoorApprovalPreviewRedacted(t *testing.T) {
	e := newRunEnv(t)
	vault := "VAULT-" + runCanary + "-41c9e0"
	gh := "gh" + "p_" + "Zq4W9xR2mT7vL1nB8kC3pY6dF0sH5jG2aE9u"
	set := exec.Command(normaBin(t), "--home", e.home, "secret", "set", "db_password")
	set.Stdin = strings.NewReader(vault + "\n")
	if out, err := set.CombinedOutput(); err != nil {
		t.Fatalf("secret set: %v\n%s", err, out)
	}
	if err := os.WriteFile(filepath.Join(e.ws, "notes.txt"), []byte("token: "+gh+"\npassword: "+vault+"\nversion: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	script := e.script(t, `turns:
  - tool_calls:
      - {id: e1, name: Edit, input: {path: notes.txt, old_string: "version: 1", new_string: "version: 2"}}
  - text: "Done."
`)
	code, out, errs := door(t, "--home", e.home, "run", "--workspace", e.ws, "--script", script, "--json", "--approval-wait", "0s", "bump")
	if code != 0 {
		t.Fatalf("run: exit %d\n%s%s", code, out, errs)
	}
	leaks := func(where, s string) {
		t.Helper()
		for _, c := range []string{gh, vault} {
			if strings.Contains(s, c) {
				t.Errorf("%s holds %q", where, c)
			}
		}
	}
	leaks("the run's output", out+errs)
	ids := pendingIDs(t, e.home)
	if len(ids) != 1 {
		t.Fatalf("pending approvals %v, want the Edit's", ids)
	}
	_, list, _ := door(t, "--home", e.home, "approvals", "list", "--json")
	leaks("approvals list", list)
	_, text, _ := door(t, "--home", e.home, "approvals", "show", ids[0])
	_, js, _ := door(t, "--home", e.home, "approvals", "show", ids[0], "--json")
	leaks("approvals show", text+js)
	if !strings.Contains(text, "version: 2") || !strings.Contains(text, "[REDACTED:github-token]") || !strings.Contains(text, "[REDACTED:db_password]") {
		t.Errorf("approvals show lacks the diff with its masks:\n%s", text)
	}
	stateFiles(e.home, leaks)
	if b, _ := os.ReadFile(filepath.Join(e.ws, "notes.txt")); !strings.Contains(string(b), "version: 1") {
		t.Errorf("the Edit ran before approval: %s", b)
	}
}
