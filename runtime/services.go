package runtime

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/norma-run/norma/approval"
	"github.com/norma-run/norma/audit"
	"github.com/norma-run/norma/secret"
	"github.com/norma-run/norma/store"
)

// Services are the durable services of one state directory, built once per
// process for every door (norma run, explain, the agents' hooks, serve,
// mcp proxy, the approvals command, the team server, the demo and
// embedders): the store, the redactor, the hash-chained audit log that
// signs a checkpoint when it is closed, and the approval service, whose
// previews pass the same redactor. OpenServices is their one construction
// (internal/deptest: no door builds one itself), so no door can store
// approval previews its own way, unredacted, as norma run and mcp proxy
// once did. With ServicesOptions.Run they also hold that run's lock.
type Services struct {
	Home      string
	Store     store.Store
	Redactor  *secret.Redactor
	Audit     *audit.Log
	Approvals *approval.Service

	unlock func() error // releases the run's lock; nil without ServicesOptions.Run
}

// ServicesOptions are what a door chooses of its Services; the zero value
// is the default.
type ServicesOptions struct {
	// Vault, when set, is the state directory's vault, opened only when it
	// exists (never created here): the redactor learns every value in it,
	// so that tool output, audit events and approval previews never hold
	// one. A vault that exists but cannot be read fails OpenServices: its
	// values could not be masked. Nil: the redactor knows the token
	// formats only (a hook's events carry names, hashes and codes, never a
	// call's content). The door adds provider keys with Redactor.AddValue.
	Vault func(context.Context) (secret.Vault, error)
	// Approver answers new approval requests. Nil: nobody can be asked
	// now (see approval.Options).
	Approver approval.Approver
	// Run, when set, is the run this process serves: OpenServices takes
	// its lock (store.Store.LockRun) before anything else, so a second
	// process on the same run, in this state directory or another on the
	// same PostgreSQL store, fails with RUN_LOCKED having opened nothing;
	// Close releases it. Doors that serve a run (norma run, mcp proxy, the
	// demo) set it; the one way a run is held.
	Run string
}

// OpenServices builds the services of state directory home over db, which
// it owns from then on: Close closes it, and so does a failure here.
// A lock refused because another process holds the run is returned as
// is (a *capability.Error of reason RUN_LOCKED).
func OpenServices(ctx context.Context, home string, db store.Store, o ServicesOptions) (*Services, error) {
	s := &Services{Home: home, Store: db}
	if o.Run != "" {
		unlock, err := db.LockRun(ctx, o.Run)
		if err != nil {
			db.Close()
			return nil, err
		}
		s.unlock = unlock
	}
	fail := func(err error) (*Services, error) {
		s.release()
		db.Close()
		return nil, err
	}
	var err error
	if s.Redactor, err = newRedactor(ctx, home, o.Vault); err != nil {
		return fail(err)
	}
	if s.Audit, err = openAuditLog(ctx, home, db, s.Redactor); err != nil {
		return fail(err)
	}
	if s.Approvals, err = approval.NewService(db, &approval.Options{Sink: s.Audit, Approver: o.Approver, Redactor: s.Redactor}); err != nil {
		s.Audit.Close()
		return fail(err)
	}
	return s, nil
}

// Close releases the run's lock, then signs a checkpoint of the audit
// log's head and closes the store. A refused checkpoint (the log does not
// extend its newest one) is returned; what the process did is durable
// either way.
func (s *Services) Close() error {
	return errors.Join(s.release(), s.Audit.Close(), s.Store.Close())
}

// release gives the run's lock back, once.
func (s *Services) release() error {
	if s.unlock == nil {
		return nil
	}
	u := s.unlock
	s.unlock = nil
	return u()
}

// newRedactor returns a redactor that knows the token formats and, when
// vault is set and home has one, every value of the vault. Values are
// never printed, not even in the error.
func newRedactor(ctx context.Context, home string, vault func(context.Context) (secret.Vault, error)) (*secret.Redactor, error) {
	red := secret.NewRedactor()
	if vault == nil {
		return red, nil
	}
	if !HasVault(home) {
		return red, nil
	}
	fail := func(err error) error {
		return fmt.Errorf("the vault's values cannot be loaded to mask them in tool output: %w", err)
	}
	v, err := vault(ctx)
	if err != nil {
		return nil, fail(err)
	}
	names, err := v.List(ctx)
	if err != nil {
		return nil, fail(err)
	}
	for _, n := range names {
		val, err := v.Get(ctx, n)
		if err != nil {
			return nil, fail(err)
		}
		if err := red.AddValue(n, val); err != nil {
			return nil, fail(err)
		}
	}
	return red, nil
}

// HasVault reports whether state directory home holds a vault (its key
// file), which is then opened; a vault is never created to be read.
func HasVault(home string) bool {
	_, err := os.Lstat(filepath.Join(home, "secrets", secret.KeyFileName))
	return !errors.Is(err, fs.ErrNotExist)
}
