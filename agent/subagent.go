package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/hook"
	"github.com/norma-run/norma/tool"
)

// TaskTool is the name of the subagent tool registered by [WithSubagents].
const TaskTool = "Task"

// SubagentPrefix starts the principal of every subagent in a chain.
const SubagentPrefix = "subagent:"

const taskSchema = `{"type":"object","additionalProperties":false,"required":["prompt"],"properties":{` +
	`"description":{"type":"string","maxLength":200},` +
	`"prompt":{"type":"string","minLength":1,"maxLength":100000},` +
	`"tools":{"type":"array","maxItems":200,"uniqueItems":true,"items":{"type":"string","minLength":1,"maxLength":128}}}}`

// taskSpec is the Task tool. It is read-only as far as the gate is
// concerned (it changes nothing itself: every call of the subagent goes
// through the gate again, under the subagent's principal chain) and
// exclusive, so subagents of one turn run one after the other.
func (s *Session) taskSpec() tool.Spec {
	return tool.Spec{
		Name:        TaskTool,
		Description: "Run a subagent on a self-contained task and return its final answer.",
		Prompt: "Starts a subagent with its own conversation for a self-contained task; it sees only the prompt you give it. " +
			"`tools` narrows what it may use (default: everything you can use); it can never use a tool you cannot. " +
			"Its tool calls are checked and audited like yours, under its own principal. The result is its final message.",
		Schema:           json.RawMessage(taskSchema),
		ReadOnly:         func(tool.Input) bool { return true },
		CheckPermissions: func(context.Context, tool.Input) tool.Permission { return tool.Permission{Behavior: tool.Allow} },
		Accesses:         func(tool.Input) ([]tool.Access, error) { return nil, nil },
		Timeout:          30 * time.Minute,
		Call:             s.runTask,
	}
}

func taskErr(code capability.Reason, detail string) error {
	return errorf(code, detail, nil)
}

// runTask runs a subagent. Its view is derived from the caller's view (the
// chain in env.Principals, which the gate set from the call), narrowed to
// the tools the call names; asking for a tool the caller cannot use is
// SUBAGENT_WIDENED. Its limits are the session's: usage and cost count
// against the parent's budget.
func (s *Session) runTask(ctx context.Context, env tool.Env, in tool.Input) (tool.Result, error) {
	var a struct {
		Description string   `json:"description"`
		Prompt      string   `json:"prompt"`
		Tools       []string `json:"tools"`
	}
	if err := in.Decode(&a); err != nil {
		return tool.Result{}, taskErr(capability.ReasonInvalidRequest, "the input does not decode")
	}
	chain := env.Principals
	if env.RunID != s.cfg.runID || len(chain) < 2 {
		return tool.Result{}, taskErr(capability.ReasonInvalidRequest, "the call does not belong to this session")
	}
	depth := 0
	for _, p := range chain {
		if strings.HasPrefix(p, SubagentPrefix) {
			depth++
		}
	}
	if depth >= s.cfg.maxDepth {
		return tool.Result{}, taskErr(capability.ReasonSubagentDepth, fmt.Sprintf("subagents may nest %d deep", s.cfg.maxDepth))
	}
	parent, err := s.reg.View(env.RunID, chain)
	if err != nil {
		return tool.Result{}, taskErr(capability.ReasonInvalidRequest, "the caller has no view in this run")
	}
	var tools []string
	if a.Tools != nil {
		tools = []string{}
		var wider []string
		for _, n := range a.Tools {
			if _, ok := parent.Lookup(n); !ok {
				wider = append(wider, n)
				continue
			}
			tools = append(tools, n)
		}
		if len(wider) > 0 {
			return tool.Result{}, taskErr(capability.ReasonSubagentWidened,
				fmt.Sprintf("the caller cannot use %d of the requested tools; a subagent is never wider than its parent", len(wider)))
		}
	}
	principal := SubagentPrefix + principalPart(env.ToolUseID)
	child, err := parent.Subagent(principal, tools)
	if err != nil {
		return tool.Result{}, taskErr(capability.ReasonInvalidRequest, "a subagent for this call already exists")
	}
	c := &convo{chain: child.Principals(), prov: s.cfg.subProv}
	if s.cfg.hooks != nil {
		s.cfg.hooks.Dispatch(ctx, hook.Input{SessionID: s.cfg.runID, HookEventName: hook.SubagentStart, RunID: s.cfg.runID,
			AgentID: principal, PermissionMode: s.g.Mode().String(), Prompt: a.Prompt})
	}
	s.emit(Event{Kind: EventSubagentStarted, Principals: c.chain})
	out, err := s.loop(ctx, c, a.Prompt, nil)
	if err != nil && out.Status == "" {
		out.Status, out.Reason = StatusFailed, string(capability.ReasonOf(err))
	}
	out.RunID, out.Turns, out.Calls, out.Text = s.cfg.runID, c.turns, c.calls, c.text
	if s.cfg.hooks != nil {
		s.cfg.hooks.Dispatch(context.WithoutCancel(ctx), hook.Input{SessionID: s.cfg.runID, HookEventName: hook.SubagentStop,
			RunID: s.cfg.runID, AgentID: principal, PermissionMode: s.g.Mode().String()})
	}
	s.emit(Event{Kind: EventSubagentFinished, Principals: c.chain, Outcome: &out})
	if out.Status != StatusCompleted {
		msg := fmt.Sprintf("the subagent ended with %s", out.Status)
		if out.Reason != "" {
			msg += " (" + out.Reason + ")"
		}
		if out.Text != "" {
			msg += "; its last message:\n" + out.Text
		}
		return tool.Result{Content: msg, IsError: true}, nil
	}
	return tool.Result{Content: out.Text}, nil
}

// principalPart keeps the characters of a tool_use id that are safe in a
// principal name and bounds its length.
func principalPart(id string) string {
	var b strings.Builder
	for _, r := range id {
		if b.Len() >= 64 {
			break
		}
		if r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
			b.WriteRune(r)
		}
	}
	if b.Len() == 0 {
		return "anon"
	}
	return b.String()
}
