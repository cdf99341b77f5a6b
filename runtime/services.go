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
// once did.
type Services struct {
	Home      string
	Store     store.Store
	Redactor  *secret.Redactor
	Audit     *audit.Log
	Approvals *approval.Service
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
}

// OpenServices builds the services of state directory home over db, which
// it owns from then on: Close closes it, and so does a failure here.
func OpenServices(ctx context.Context, home string, db store.Store, o ServicesOptions) (*Services, error) {
	red, err := newRedactor(ctx, home, o.Vault)
	if err != nil {
		db.Close()
		return nil, err
	}
	log, err := openAuditLog(ctx, home, db, red)
	if err != nil {
		db.Close()
		return nil, err
	}
	svc, err := approval.NewService(db, &approval.Options{Sink: log, Approver: o.Approver, Redactor: red})
	if err != nil {
		log.Close()
		db.Close()
		return nil, err
	}
	return &Services{Home: home, Store: db, Redactor: red, Audit: log, Approvals: svc}, nil
}

// Close signs a checkpoint of the audit log's head and closes the store.
// A refused checkpoint (the log does not extend its newest one) is
// returned; what the process did is durable either way.
func (s *Services) Close() error {
	return errors.Join(s.Audit.Close(), s.Store.Close())
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
