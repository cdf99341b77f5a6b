package agenthook

import (
	"encoding/json"
	"path/filepath"
)

// hookInput is the hook input of Claude Code and of Codex, which took
// Claude Code's format: the same fields under the same names. Fields Norma
// does not use (transcript_path, prompt_id, effort, turn_id, model, ...)
// are tolerated and ignored.
type hookInput struct {
	SessionID      string          `json:"session_id"`
	Cwd            string          `json:"cwd"`
	PermissionMode string          `json:"permission_mode"`
	HookEventName  string          `json:"hook_event_name"`
	ToolName       string          `json:"tool_name"`
	ToolInput      json.RawMessage `json:"tool_input"`
	ToolUseID      string          `json:"tool_use_id"`
	ToolResponse   json.RawMessage `json:"tool_response"`
}

// parseHook decodes one hook input of agent a and checks what every event
// needs: a hook_event_name that kinds maps, a session_id and an absolute
// cwd. label names the agent in the error for an unknown event.
func parseHook(in []byte, a Agent, kinds map[string]Kind, label string) (hookInput, Event, error) {
	var hi hookInput
	if err := decodeInput(in, &hi); err != nil {
		return hi, Event{}, err
	}
	kind, ok := kinds[hi.HookEventName]
	switch {
	case hi.HookEventName == "":
		return hi, Event{}, invalid("the hook input has no hook_event_name")
	case !ok:
		return hi, Event{}, invalid("Norma does not answer the %s%q hook event", label, hi.HookEventName)
	case hi.SessionID == "":
		return hi, Event{}, invalid("the hook input has no session_id")
	case hi.Cwd == "" || !filepath.IsAbs(hi.Cwd):
		return hi, Event{}, invalid("the hook input has no absolute cwd")
	}
	return hi, Event{Agent: a, Kind: kind, Name: hi.HookEventName, Session: hi.SessionID, ToolUseID: hi.ToolUseID,
		Cwd: filepath.Clean(hi.Cwd), PermissionMode: hi.PermissionMode}, nil
}

// checkTool checks the fields of a tool event: tool_name, an object
// tool_input, and with needUseID a tool_use_id.
func (hi hookInput) checkTool(needUseID bool) error {
	switch {
	case hi.ToolName == "":
		return invalid("the %s hook input has no tool_name", hi.HookEventName)
	case !isObject(hi.ToolInput):
		return invalid("the %s hook input has no tool_input object", hi.HookEventName)
	case needUseID && hi.ToolUseID == "":
		return invalid("the %s hook input has no tool_use_id", hi.HookEventName)
	}
	return nil
}
