package tool_test

import (
	"testing"

	"github.com/norma-run/norma/tool"
)

// TestIdempotencyKey: the approval's key wins; without one the key is
// derived from the run and the tool_use id (the same for a retry of the
// same call, another for another call), and its value is the one the gate
// has always sent (a remote that recorded it must see it again).
func TestIdempotencyKey(t *testing.T) {
	const derived = "nik_2b08b16d8c46df2cb5092a0ca86460b73c7a972e" // norma-call-v1 of run-1, toolu_1
	tests := []struct {
		name string
		env  tool.Env
		want string
	}{
		{"derived", tool.Env{RunID: "run-1", ToolUseID: "toolu_1"}, derived},
		{"derived, principals do not count", tool.Env{RunID: "run-1", ToolUseID: "toolu_1", Principals: []string{"user:a", "agent:b"}}, derived},
		{"approval's", tool.Env{RunID: "run-1", ToolUseID: "toolu_1", ApprovalKey: "nik_approved"}, "nik_approved"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.env.IdempotencyKey(); got != tt.want {
				t.Errorf("IdempotencyKey() = %q, want %q", got, tt.want)
			}
		})
	}
	other := []tool.Env{{RunID: "run-1", ToolUseID: "toolu_2"}, {RunID: "run-2", ToolUseID: "toolu_1"}, {RunID: "run-1\x00toolu", ToolUseID: "1"}}
	for _, e := range other {
		if got := e.IdempotencyKey(); got == derived {
			t.Errorf("call %q/%q has the key of run-1/toolu_1", e.RunID, e.ToolUseID)
		}
	}
}
