// Package codeenv is the one list of environment variables that change
// which code a program runs. The sandbox runner (sandbox/sandboxpolicy)
// refuses the shell's in every process environment; settings files
// (package settings) refuse all of them outside managed settings.
//
// This package should be considered internal; its API is not stable.
package codeenv

import "strings"

// Class says how setting a variable changes which code runs.
type Class int

const (
	// None: the variable is data.
	None Class = iota
	// Shell: a shell reads it as code or options (BASH_ENV, PROMPT_COMMAND,
	// PS1, IFS, BASH_FUNC_*, …) or the dynamic loader loads what it names
	// (LD_*). Refused in every environment of a sandboxed process.
	Shell
	// Search: it names the program, library, module or configuration a
	// program loads, or options that run code (PATH, HOME, GIT_*,
	// NODE_OPTIONS, PYTHONPATH, …). Only configuration the user or an
	// administrator controls (the runtime's defaults, managed settings)
	// may set it.
	Search
)

var shell = map[string]bool{
	"BASH_ENV": true, "ENV": true, "SHELLOPTS": true, "BASHOPTS": true, "PROMPT_COMMAND": true,
	"PS0": true, "PS1": true, "PS2": true, "PS3": true, "PS4": true, "IFS": true, "CDPATH": true,
	"GLOBIGNORE": true, "INPUTRC": true, "HISTFILE": true, "HISTCONTROL": true, "PROMPT_DIRTRIM": true,
	"BASH_XTRACEFD": true, "BASH_COMPAT": true, "BASH_LOADABLES_PATH": true, "POSIXLY_CORRECT": true,
	"EXECIGNORE": true, "FIGNORE": true, "HOSTFILE": true, "MAIL": true, "MAILPATH": true, "MAILCHECK": true,
}

var search = map[string]bool{
	"PATH": true, "HOME": true, "XDG_CONFIG_HOME": true,
	"NODE_OPTIONS": true, "NODE_PATH": true,
	"PYTHONSTARTUP": true, "PYTHONPATH": true, "PYTHONHOME": true,
	"PERL5OPT": true, "PERL5LIB": true, "PERLLIB": true,
	"RUBYOPT": true, "RUBYLIB": true,
	"JAVA_TOOL_OPTIONS": true, "_JAVA_OPTIONS": true, "JDK_JAVA_OPTIONS": true,
}

// Of returns the class of the environment variable name (case-sensitive,
// as environments are).
func Of(name string) Class {
	switch {
	case shell[name], strings.HasPrefix(name, "LD_"), strings.HasPrefix(name, "DYLD_"), strings.HasPrefix(name, "BASH_FUNC_"):
		return Shell
	case search[name], strings.HasPrefix(name, "GIT_"):
		return Search
	}
	return None
}
