// Package settings reads the settings files people write: permission
// rules in Claude Code's syntax, Claude Code command hooks, the network
// destinations of the built-in web tools, and the shell's environment.
//
// Files, from the lowest precedence to the highest:
//
//	user       $XDG_CONFIG_HOME/norma/settings.yaml
//	workspace  .norma/settings.yaml
//	local      .norma/settings.local.yaml (personal, git-ignored)
//	flag       --settings FILE
//	managed    /etc/norma/managed-settings.yaml (a regular file, not a
//	           symbolic link, owned by root and not writable by group
//	           or others, else refused)
//
// Every file is parsed as strictly as a manifest (size, depth and alias
// limits, no duplicate keys, unknown fields refused with "did you mean"),
// and every problem is reported as FILE:LINE:COL: field: message. A file
// of comments only sets nothing.
//
// Merging: permission rules of every file are one list; a deny rule wins
// over any allow wherever it comes from (the gate asks deny rules first).
// defaultMode is the highest file's that sets one; a command-line --mode
// sits below managed settings only. Hooks of every file run, lowest file
// first. network requests and allow_private are the union of the files':
// they are the workspace's network section (the built-in web tools'
// destinations and the ceiling of every tool's network). Managed settings
// may lock rules and hooks to their own with allowManagedPermissionRulesOnly
// (other files' allow and ask rules are dropped; their deny rules still
// apply, since a deny only narrows) and allowManagedHooksOnly; what they
// exclude is listed in [Settings.Ignored]. The locks do not cover
// defaultMode, network or env. plugins.callTimeout and
// plugins.toolTimeouts (seconds; the latter by tool name
// mcp__SERVER__TOOL) are the highest file's; a managed file's are caps
// instead ([PluginTimeouts.Resolve]). mcp.sampling (allow,
// max_tokens) is the highest file's; a workspace's own files may not set
// it ([Sampling]). agentHooks.confineBash (default true: Claude Code's Bash
// commands run inside Norma's sandbox, see package agenthook) is the
// highest file's; a workspace's own files may not set it either
// ([Settings.ConfineBash]).
//
// A hook command is a program and literal arguments, where
// $CLAUDE_PROJECT_DIR and $NORMA_WORKSPACE stand for the workspace: no
// pipes, redirections or other expansions, so that what runs is one file
// whose content can be trusted. Hooks of workspace, local and --settings
// files run only once their program's content is trusted (`norma hooks
// trust`); user and managed hooks are the user's and the administrator's
// own, and trusted.
//
// Every rule, hook and value keeps the file, line and column it came from
// ([Source]), for `norma settings show`.
package settings
