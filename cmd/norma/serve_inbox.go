package main

import (
	"github.com/spf13/cobra"

	"github.com/norma-run/norma/door/team/inbox"
)

// The approval inbox's pages are served by the team server under
// /inbox/: people sign in with their team token (a session cookie), see
// the pending requests with their previews and answer them through the
// same approval service as the API.
func init() { teamMounts = append(teamMounts, mountInbox) }

func mountInbox(cmd *cobra.Command, t *teamServer) error {
	logf := serveLogger(cmd.ErrOrStderr())
	in, err := inbox.New(inbox.Options{
		Approvals: t.Srv.Approvals(),
		Audit:     t.Store,
		Tokens:    t.Srv.Tokens(),
		Changed:   t.Srv.Changed,
		Log:       func(line string) { logf("inbox: %s", line) },
	})
	if err != nil {
		return exitWith(exitInternal, err)
	}
	t.Srv.Handle(inbox.Prefix+"/", in)
	return nil
}
