package agenthook

import (
	"encoding/json"
	"fmt"
	"strings"
)

// ProbeCommand is the shell command of a probe: a write to Claude Code's
// local settings, an agent's code file, which Norma refuses in every
// workspace and every mode (the agent-file floor, the built-in policy's
// write ceiling, or the mode), whether the file or its directory exists
// or not. (A read of .env was refused only
// where .env exists: a word that names no file is no read.) The probe is
// only asked of the hook; nothing runs it.
const ProbeCommand = "echo norma-hook-check >> .claude/settings.local.json"

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
