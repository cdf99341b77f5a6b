// Package agentfiles is the one catalogue of the files that the agents
// and tools Norma sits behind load as code or as instructions: Claude
// Code's settings, subagents, skills, commands and hooks, Codex's and
// Gemini CLI's configuration, Cursor's and VS Code's, git's config and
// hooks, direnv's .envrc, Norma's own files, and the instruction files
// (CLAUDE.md, AGENTS.md, GEMINI.md) that steer every later session.
//
// A write of such a file is an escalation, not an edit: the next session,
// the next tool call or the user's next `git status` runs what it names on
// the host, outside Norma's sandbox. Every door asks this package — the
// gate for every file write it decides (the file tools, a shell
// redirection, a plugin's write), the sandbox for what a confined process
// may create, the agent hooks for the definitions a subagent or a skill
// comes from — so that there is one answer to "is this an agent's file".
//
// Names are matched as the agent opens them, whatever the spelling:
// [Lookup] folds case (a case-insensitive disk opens .CLAUDE/settings.json
// as .claude/settings.json) and callers ask it about both the name as
// given and the name with symbolic links resolved; either matching
// protects.
package agentfiles
