package agent

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/norma-run/norma/provider"
	"github.com/norma-run/norma/secret"
)

// TestRedactState: the state file gets the conversation with every text,
// tool result and tool input redacted, except the input of a call that
// waits for approval (bound to it by the approval); the session's own
// state is not changed.
func TestRedactState(t *testing.T) {
	const val = "VAULT-state-canary-77aa"
	gh := "gh" + "p_" + "Zq4W9xR2mT7vL1nB8kC3pY6dF0sH5jG2aE9u"
	red := secret.NewRedactor()
	if err := red.AddValue("db_password", secret.NewValue([]byte(val))); err != nil {
		t.Fatal(err)
	}
	in := json.RawMessage(`{"command":"curl -H 'token: ` + gh + `' x","note":"a\\\\b"}`)
	waiting := json.RawMessage(`{"command":"echo ` + val + `"}`)
	st := &State{RunID: "run-1", Reason: "failed with " + val, Messages: []provider.Message{
		{Role: provider.RoleUser, Blocks: []provider.Block{{Type: "text", Text: "use " + val}}},
		{Role: provider.RoleAssistant, Blocks: []provider.Block{
			{Type: "text", Text: "ok"},
			{Type: "tool_use", ID: "t1", Name: "Bash", Input: in},
			{Type: "tool_use", ID: "t2", Name: "Bash", Input: waiting},
		}},
		{Role: provider.RoleUser, Blocks: []provider.Block{{Type: "tool_result", ToolUseID: "t1", Content: "got " + gh}}},
	}, Pending: &Pending{Awaiting: map[string]string{"t2": "ap-1"},
		Results: map[string]provider.Block{"t3": {Type: "tool_result", ToolUseID: "t3", Content: val}}}}
	before, _ := json.Marshal(st)

	got := redactState(st, red)
	b, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	out := string(b)
	if after, _ := json.Marshal(st); string(after) != string(before) {
		t.Error("redactState changed the session's state")
	}
	if strings.Contains(out, gh) {
		t.Errorf("the token survived: %s", out)
	}
	// The one value left is the awaiting call's input.
	if n := strings.Count(out, val); n != 1 || !strings.Contains(string(got.Messages[1].Blocks[2].Input), val) {
		t.Errorf("value occurrences = %d, want 1 (the awaiting input): %s", n, out)
	}
	for _, want := range []string{"use [REDACTED:db_password]", "got [REDACTED:github-token]", "failed with [REDACTED:db_password]"} {
		if !strings.Contains(out, want) {
			t.Errorf("state lacks %q: %s", want, out)
		}
	}
	var input map[string]string
	if err := json.Unmarshal(got.Messages[1].Blocks[1].Input, &input); err != nil || input["command"] != "curl -H 'token: [REDACTED:github-token]' x" || input["note"] != `a\\b` {
		t.Errorf("redacted input = %s (%v)", got.Messages[1].Blocks[1].Input, err)
	}
	if got.Pending.Results["t3"].Content != "[REDACTED:db_password]" {
		t.Errorf("pending result = %q", got.Pending.Results["t3"].Content)
	}
	if &got.Messages[1].Blocks[0] == &st.Messages[1].Blocks[0] {
		t.Error("a changed message shares its blocks with the session's")
	}
}
