// Package shell provides the built-in shell tools of a session: Bash, the
// background-task tools (TaskList, TaskOutput, TaskStop, Monitor) and five
// PTY tools (PtyOpen, PtySend, PtyRead, PtyResize, PtyClose). [Tools]
// returns them with the session's [Manager]; the session registers the
// tools with the gate and calls [Manager.Close] when it closes.
//
// # Enforce twice
//
// The gate decides on what a call declares: Bash declares its command line
// (tool.Access{Kind: process.spawn, Command: line}) and the gate parses it
// with mvdan.cc/sh into every simple command and redirection and matches
// permission rules such as Bash(git status:*) against each. PtySend
// declares every non-blank line of its text the same way, so a line is
// checked before it is written to the terminal; PtyOpen declares the spawn
// "bash -i" (or "sh -i").
//
// # The process capability
//
// The shell starts nothing by itself: Bash, background tasks and PtyOpen
// run their processes through the process capability of the call's Env
// (tool.Env.Exec, a tool.Runner), which the gate hands out for that call.
// A policy that denies spawning refuses these calls at the gate already
// (they declare process.spawn), and the gate gives no capability to a call
// whose policy denies spawning; a call whose Env has none refuses with
// CAPABILITY_MISSING and runs nothing. Otherwise the capability is the
// gate's wrapper, so every argv the shell asks for (`/bin/bash -c
// COMMAND`, the PTY's `setsid … bash -i`) is checked again, with every
// command it runs, against the deny rules and the policy before it starts
// (a deny rule on the shell itself, Bash(bash:*), refuses every command).
// What a call may start is decided by the gate's policy value, not by
// this package.
//
// For the built-in tools that capability is sandboxpolicy.Runner (the run's
// runtime builds it from the one compiled built-in policy): whatever the
// gate lets through runs inside the OS sandbox (package sandbox), built per
// command from the run's effective file capabilities with
// sandboxpolicy.Derive, the derivation the plugin host uses too (this
// package imports neither): the directories the policy grants are bound
// read-only or read-write, and every entry under them the policy does not
// allow (a deny glob such as **/.env*) is hidden. The workspace root is
// always proposed as a candidate besides the layers' literal directories
// (docs/** proposes docs); the policy decides. So `cat .env`, `grep -r
// TOKEN .`, `ln -s ../outside x && cat x` and `curl
// http://169.254.169.254/` fail even when a rule allows cat, grep, ln and
// curl. The network is none unless the runtime gives a broker; the
// environment is an explicit allow-list plus PATH, HOME and TMPDIR
// defaults, and names a shell would run as code (BASH_ENV, ENV,
// PROMPT_COMMAND, PS1, BASH_FUNC_*, LD_*, …) are refused. The working
// directory is the workspace when it is granted, else /tmp.
//
// # Foreground commands and tasks
//
// Bash runs `/bin/bash -c COMMAND` (/bin/sh when bash is absent) with a
// timeout (Config.DefaultTimeout, at most Config.MaxTimeout) that kills the
// whole tree; stdout and stderr are collected together, head and tail
// bounded, and the exit code is reported. run_in_background starts a task
// instead: its output goes to a ring buffer of [RingSize] bytes, TaskOutput
// returns what arrived since the last read (bounded by [MaxRead], optionally
// blocking), Monitor waits for a pattern, the exit or a timeout, TaskStop
// kills the tree. Task ids (t1, t2, …) are per Manager, so a session can
// only name its own tasks.
//
// # PTYs
//
// A PTY shell is `bash --norc --noprofile --noediting +H -i` started
// through the same capability (the same sandbox) with the tty side of a
// creack/pty pair as its standard streams, and literal prompts (PS1="$ "). The sandbox's init calls setsid (so nothing inside has the
// caller's terminal, and seccomp refuses TIOCSTI); util-linux `setsid
// --wait --ctty` inside makes the shell the session leader of the new
// terminal, so job control works and ^C reaches the foreground job. Without
// /usr/bin/setsid the shell runs without job control.
//
// What the shell reads must be the text that was checked, so: text may not
// hold control characters (CR, backspace, ^U, ESC, … — the terminal or a
// line editor would rewrite the line; control keys go through the explicit
// control field) or end a line in a backslash (continuation); bash runs
// without readline, startup files or history expansion; and before every
// write the terminal is reset from the master side to non-canonical mode
// with no input translation, no extended processing and no flow control,
// with the signal keys on ^C, ^\ and ^Z, so printable bytes reach the
// shell unchanged even if a program changed the settings. PtyRead returns
// output since the last read, escape sequences removed unless raw is set.
//
// # What it does not protect against
//
// The gate checks what a line says, not the state of the shell that reads
// it: input sent while the shell is inside a multi-line construct (opened
// by an approved line that did not parse), or read by a program instead of
// the shell, is still checked as a command — which is stricter, never
// looser — but an approved unbalanced line changes how the next ones are
// read. A program the rules allow that runs arbitrary code (python, make)
// can do inside the sandbox whatever the sandbox permits, including
// changing the terminal settings between the reset and the write. Deny
// paths created during a command are hidden only from the next command.
//
// Manager.Close kills every PTY and every task (unless AllowDetached, in
// which case running tasks are left to finish, still bounded by their
// timeout and the host process's life) and waits for them. A Manager and
// its tools are safe for concurrent use. Errors returned by the handlers
// are *capability.Error values whose reason codes are in
// capability/reason_shell.go (SHELL_CONFIG_INVALID, SHELL_CLOSED,
// SHELL_LIMIT, TASK_UNKNOWN, PTY_UNKNOWN, PTY_INPUT_REFUSED,
// SHELL_SANDBOX_FAILED), CAPABILITY_MISSING, the gate's refusal of an argv
// (RULE_DENIED, PROCESS_SPAWN_DENIED, …) or the sandbox's codes.
package shell
