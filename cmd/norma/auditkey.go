package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"golang.org/x/mod/sumdb/note"

	"github.com/norma-run/norma/audit"
	"github.com/norma-run/norma/internal/termtext"
	"github.com/norma-run/norma/plugin"
	"github.com/norma-run/norma/runtime"
)

// openServices opens the store of state directory home (openStore) and
// the runtime's services over it: every command that appends audit events
// or stores approvals takes them from here.
func openServices(cmd *cobra.Command, home string, o runtime.ServicesOptions) (*runtime.Services, error) {
	db, err := openStore(cmd.Context(), cmd, home)
	if err != nil {
		return nil, err
	}
	s, err := runtime.OpenServices(cmd.Context(), home, db, o)
	if err != nil {
		return nil, exitWith(exitInternal, err)
	}
	return s, nil
}

// closeServices closes s, which signs a checkpoint of the audit log's
// head; a refusal (the log does not extend its newest checkpoint) or a
// failure is a warning on stderr: what the command did is already durable.
func closeServices(cmd *cobra.Command, s *runtime.Services) {
	if err := s.Close(); err != nil {
		fmt.Fprintf(cmd.ErrOrStderr(), "norma: %s\n", termtext.EscapeText(err.Error()))
	}
}

// closeAuditLog closes log, which signs a checkpoint of its head; a
// refusal (the log does not extend its newest checkpoint) or a failure is
// a warning on stderr: what the command did is already durable.
func closeAuditLog(cmd *cobra.Command, log *audit.Log) {
	if err := log.Close(); err != nil {
		fmt.Fprintf(cmd.ErrOrStderr(), "norma: %s\n", termtext.EscapeText(err.Error()))
	}
}

// readTrustedKeys reads the public audit keys of `audit verify
// --trust-key` (other state directories' keys/audit-checkpoint.pub).
func readTrustedKeys(files []string) ([]note.Verifier, error) {
	var out []note.Verifier
	for _, p := range files {
		pub, err := plugin.LoadPublicKey(p)
		if err != nil {
			return nil, fmt.Errorf("--trust-key: %w", err)
		}
		v, err := audit.NewNoteVerifier(audit.KeyOrigin(pub), pub)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// printUnchecked says which stored checkpoints were not checked: those of
// other state directories sharing the store, by log name.
func printUnchecked(w io.Writer, u []audit.Unchecked) {
	for _, x := range u {
		fmt.Fprintf(w, "not checked: %d checkpoints of log %s (up to %d events), signed by a key this state directory does not trust (--trust-key)\n",
			x.Checkpoints, termtext.Escape(x.Origin), x.Largest)
	}
}

// readExported reads the checkpoint files of `audit verify --checkpoint`.
func readExported(files []string) ([]audit.ExternalCheckpoint, error) {
	var out []audit.ExternalCheckpoint
	for _, p := range files {
		b, err := runtime.ReadCheckpointFile(p)
		if err != nil {
			return nil, err
		}
		out = append(out, audit.ExternalCheckpoint{Source: "checkpoint in " + p, Note: b})
	}
	return out, nil
}
