package shell

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/internal/shellcmd"
	"github.com/norma-run/norma/tool"
)

const bashSchema = `{
  "type": "object",
  "additionalProperties": false,
  "required": ["command"],
  "properties": {
    "command": {"type": "string", "minLength": 1, "maxLength": 100000, "description": "The shell command line (Bash syntax)."},
    "timeout_ms": {"type": "integer", "minimum": 1, "maximum": 86400000, "description": "Foreground timeout in milliseconds (capped by the session's maximum). For a background task, a lifetime limit."},
    "run_in_background": {"type": "boolean", "description": "Start the command as a task and return its id at once."},
    "description": {"type": "string", "maxLength": 200, "description": "A few words saying what the command does."}
  }
}`

const bashPrompt = `Runs a shell command inside the OS sandbox, in the workspace directory.
- Only the files the policy lets this run read or write are visible; denied files (such as .env) are hidden even when a command names them. Nothing outside the workspace exists inside the sandbox except system directories and a private /tmp.
- There is no network unless the session provides a broker (then HTTP(S)_PROXY point at it and every request is checked).
- The environment is an explicit allow-list; nothing from the host is inherited.
- Every simple command in the line is matched against the permission rules before it runs.
- The foreground timeout defaults to %s and is at most %s; on timeout the whole process tree is killed.
- Output (stdout and stderr together) is bounded: the head and tail are kept.
- Set run_in_background to start a task; read it with TaskOutput, wait for it with Monitor, stop it with TaskStop.`

type bashInput struct {
	Command         string `json:"command"`
	TimeoutMS       int64  `json:"timeout_ms"`
	RunInBackground bool   `json:"run_in_background"`
	Description     string `json:"description"`
}

func commandAccess(in tool.Input) ([]tool.Access, error) {
	c, ok := in.String("command")
	if !ok || c == "" {
		return nil, errors.New("shell: no command")
	}
	return []tool.Access{{Kind: capability.ProcessSpawn, Command: c}}, nil
}

func allow(context.Context, tool.Input) tool.Permission {
	return tool.Permission{Behavior: tool.Allow}
}

// readOnlyCommand reports whether every effect of the command is a read
// (shellcmd.Effects.ReadOnly: ls, cat, grep, git status, ...; no file
// written, no redirection to one, nothing unknown). Which files it reads
// is still the policy's to decide: a denied file stays denied.
func readOnlyCommand(in tool.Input) bool {
	c, ok := in.String("command")
	if !ok || c == "" {
		return false
	}
	e := shellcmd.Parse(c)
	return e.ReadOnly()
}

// readOnlyAllowed is Bash's own judgment: a read-only command needs no
// approval (as in Claude Code); any other asks unless a rule allows it.
func readOnlyAllowed(_ context.Context, in tool.Input) tool.Permission {
	if readOnlyCommand(in) {
		return tool.Permission{Behavior: tool.Allow}
	}
	return tool.Permission{Behavior: tool.Ask, Reason: "the command may change something"}
}

func always(tool.Input) bool { return true }

func (m *Manager) bashSpecs() []tool.Spec {
	callTimeout := m.cfg.MaxTimeout + 30*time.Second
	return []tool.Spec{
		{
			Name:             "Bash",
			Description:      "Run a shell command in the sandboxed workspace (foreground, or as a background task).",
			Prompt:           fmt.Sprintf(bashPrompt, m.cfg.DefaultTimeout, m.cfg.MaxTimeout),
			Schema:           json.RawMessage(bashSchema),
			ReadOnly:         readOnlyCommand,
			CheckPermissions: readOnlyAllowed,
			Accesses:         commandAccess,
			Preview:          previewString("command"),
			Timeout:          callTimeout,
			Call:             m.callBash,
		},
		{
			Name:             "TaskList",
			Description:      "List this session's background tasks: id, command, state, exit code, start time.",
			Prompt:           "Lists the background tasks of this session (started with Bash run_in_background). Tasks of other sessions are never shown.",
			Schema:           json.RawMessage(`{"type":"object","additionalProperties":false,"properties":{}}`),
			ReadOnly:         always,
			ConcurrencySafe:  always,
			CheckPermissions: allow,
			Accesses:         noAccess,
			Call:             m.callTaskList,
		},
		{
			Name:        "TaskOutput",
			Description: "Read a background task's output since the last read (bounded); optionally wait for new output or exit.",
			Prompt: fmt.Sprintf(`Returns the output a task produced since the previous TaskOutput call, at most %d bytes (call again for more). `+
				`With block=true it waits up to timeout_ms (default 30000) for new output or for the task to exit. Output older than the last %d bytes is dropped and reported.`, MaxRead, RingSize),
			Schema:           json.RawMessage(`{"type":"object","additionalProperties":false,"required":["task_id"],"properties":{"task_id":{"type":"string","pattern":"^t[0-9]{1,9}$"},"block":{"type":"boolean"},"timeout_ms":{"type":"integer","minimum":0,"maximum":600000}}}`),
			ReadOnly:         always,
			ConcurrencySafe:  always,
			CheckPermissions: allow,
			Accesses:         noAccess,
			Timeout:          callTimeout,
			Call:             m.callTaskOutput,
		},
		{
			Name:             "TaskStop",
			Description:      "Stop a background task of this session (kills its whole process tree).",
			Prompt:           "Kills the task's whole process tree and reports how it ended.",
			Schema:           json.RawMessage(`{"type":"object","additionalProperties":false,"required":["task_id"],"properties":{"task_id":{"type":"string","pattern":"^t[0-9]{1,9}$"}}}`),
			CheckPermissions: allow,
			Accesses:         noAccess,
			Call:             m.callTaskStop,
		},
		{
			Name:        "Monitor",
			Description: "Wait until a regular expression appears in a task's output, or the task exits, or the timeout passes.",
			Prompt: `Waits until pattern (RE2 syntax, matched against the task's retained output, line by line; use (?s) to span lines) appears in the output of a background task, ` +
				`the task exits, or timeout_ms (default 60000, at most 600000) passes. Reports which happened and the matching line.`,
			Schema:           json.RawMessage(`{"type":"object","additionalProperties":false,"required":["task_id","pattern"],"properties":{"task_id":{"type":"string","pattern":"^t[0-9]{1,9}$"},"pattern":{"type":"string","minLength":1,"maxLength":1000},"timeout_ms":{"type":"integer","minimum":0,"maximum":600000}}}`),
			ReadOnly:         always,
			ConcurrencySafe:  always,
			CheckPermissions: allow,
			Accesses:         noAccess,
			Timeout:          callTimeout,
			Call:             m.callMonitor,
		},
	}
}

func noAccess(tool.Input) ([]tool.Access, error) { return nil, nil }

// previewString is the approval preview of a call that runs the text of
// one input field in a shell (Bash's command, PtySend's text): that text,
// every statement and line of it, exactly as the shell gets it. The other
// fields (timeout, background, enter) do not change what runs; the action
// hash covers them too.
func previewString(field string) func(context.Context, tool.Env, tool.Input) (string, error) {
	return func(_ context.Context, _ tool.Env, in tool.Input) (string, error) {
		s, ok := in.String(field)
		if !ok || s == "" {
			return "", tool.ErrNoPreview
		}
		return s, nil
	}
}

func (m *Manager) timeout(ms int64, def time.Duration) time.Duration {
	if ms <= 0 {
		return def
	}
	d := time.Duration(ms) * time.Millisecond
	return min(d, m.cfg.MaxTimeout)
}

func (m *Manager) callBash(ctx context.Context, env tool.Env, in tool.Input) (tool.Result, error) {
	var bi bashInput
	if err := in.Decode(&bi); err != nil || bi.Command == "" {
		return tool.Result{}, fail(capability.ReasonInvalidRequest, "shell: bad input")
	}
	m.mu.Lock()
	err := m.checkOpen()
	m.mu.Unlock()
	if err != nil {
		return tool.Result{}, err
	}
	exec, err := runner(env)
	if err != nil {
		return tool.Result{}, err
	}
	if bi.RunInBackground {
		t, err := m.startTask(ctx, exec, bi)
		if err != nil {
			return tool.Result{}, err
		}
		return tool.Result{Content: fmt.Sprintf("started task %s (session %s): %s\nRead its output with TaskOutput, wait with Monitor, stop it with TaskStop.", t.id, m.cfg.SessionID, summary(bi.Command))}, nil
	}
	timeout := m.timeout(bi.TimeoutMS, m.cfg.DefaultTimeout)
	out := newHeadTail(outputHead, outputTail)
	res, err := exec.Run(ctx, tool.Command{Argv: m.shellArgv(bi.Command), Stdout: out, Stderr: out, Timeout: timeout})
	if err != nil {
		return tool.Result{}, startFail(err)
	}
	var b strings.Builder
	b.WriteString(out.String())
	if b.Len() > 0 && !strings.HasSuffix(b.String(), "\n") {
		b.WriteByte('\n')
	}
	isErr := false
	switch {
	case res.TimedOut:
		isErr = true
		fmt.Fprintf(&b, "[timed out after %s; the process tree was killed]", timeout)
	case ctx.Err() != nil:
		isErr = true
		b.WriteString("[canceled; the process tree was killed]")
	case res.MemoryExceeded:
		isErr = true
		b.WriteString("[memory limit exceeded; the kernel killed a process of the command]")
	case res.Signal != 0:
		fmt.Fprintf(&b, "[killed by signal %d]", res.Signal)
	default:
		fmt.Fprintf(&b, "[exit code %d]", res.ExitCode)
	}
	return tool.Result{Content: b.String(), IsError: isErr}, nil
}

// summary shortens a command line for task listings and the model's
// "started task" line; it is never an approval preview (previewString is).
func summary(c string) string {
	c = strings.Join(strings.Fields(c), " ")
	if len(c) > 120 {
		c = strings.ToValidUTF8(c[:117], "") + "..."
	}
	return c
}
