//go:build norma_front

package main

import (
	"strings"

	"github.com/spf13/cobra"
)

// The front build (go build -tags norma_front) links the commands that run
// often (hooks, policy explain, sandbox exec, audit, approvals, settings)
// and stands in for these, which it executes norma-full for.

func newRunCmd() *cobra.Command    { return standIn(runCmdName) }
func newPluginCmd() *cobra.Command { return standIn(pluginCmdName) }
func newDemoCmd() *cobra.Command   { return standIn(demoCmdName) }
func newMCPCmd() *cobra.Command    { return standIn(mcpCmdName) }
func newServeCmd() *cobra.Command  { return standIn(serveCmdName) }

// completesInFull: shell completion is answered by the full build, which
// knows every command's flags.
func completesInFull(args []string) bool {
	return len(args) > 0 && strings.HasPrefix(args[0], "__complete")
}
