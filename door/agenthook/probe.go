package agenthook

import (
	"encoding/json"
	"fmt"
	"strings"
)

// ProbeCommand is the shell command of a probe: a read of the workspace's
// .env, which Norma's built-in policy refuses in every workspace
// (FILESYSTEM_READ_DENIED), whether the file exists or not.
const ProbeCommand = "cat .env"

// ProbeInput is a synthetic hook input of agent a asking whether the
// shell may run [ProbeCommand] in cwd, in a's own format: Claude Code's
// and Codex's PreToolUse of Bash, Gemini CLI's BeforeTool of
// run_shell_command. session names the probe's session in the audit log.
func ProbeInput(a Agent, session, cwd string) ([]byte, error) {
	in := map[string]any{"session_id": session, "cwd": cwd, "transcript_path": ""}
	switch a {
	case ClaudeCode, Codex:
		in["hook_event_name"], in["permission_mode"] = "PreToolUse", "default"
		in["tool_name"], in["tool_input"] = "Bash", map[string]any{"command": ProbeCommand}
		in["tool_use_id"] = session + "-call"
	case Gemini:
		in["hook_event_name"] = "BeforeTool"
		in["tool_name"], in["tool_input"] = "run_shell_command", map[string]any{"command": ProbeCommand}
	default:
		return nil, fmt.Errorf("agenthook: no probe for %q", a)
	}
	return json.Marshal(in)
}

// ProbeDenied reads out, a hook's answer (stdout) to [ProbeInput], in
// agent a's format: whether it is a deny the agent honours, and the
// reason it gives.
func ProbeDenied(a Agent, out []byte) (reason string, denied bool) {
	var ans struct {
		HookSpecificOutput struct {
			PermissionDecision       string `json:"permissionDecision"`
			PermissionDecisionReason string `json:"permissionDecisionReason"`
		} `json:"hookSpecificOutput"`
		Decision string `json:"decision"`
		Reason   string `json:"reason"`
	}
	if json.Unmarshal([]byte(strings.TrimSpace(string(out))), &ans) != nil {
		return "", false
	}
	switch a {
	case ClaudeCode, Codex:
		h := ans.HookSpecificOutput
		return h.PermissionDecisionReason, h.PermissionDecision == "deny" && h.PermissionDecisionReason != ""
	case Gemini:
		return ans.Reason, ans.Decision == "deny"
	}
	return "", false
}
