package secret

import (
	"context"
	"maps"
	"slices"
)

// EnvVault is a read-only [Vault] over environment variables named by the
// operator. It reads them once, in [NewEnvVault], and keeps the values in
// memory; it never exports them. The host must also strip the variables
// from every child environment (plugins start from an empty environment;
// [EnvVault.Variables] lists what to strip when that is not the case).
//
// Set and Delete fail with an error matching [ErrReadOnly]. An EnvVault is
// safe for concurrent use.
type EnvVault struct {
	vals map[string]Value
	vars []string
}

var _ Vault = (*EnvVault)(nil)

// NewEnvVault maps secret names to environment variable names and reads
// each variable through lookup (os.LookupEnv in the command; a map in
// tests). A variable that is unset is simply absent (Get fails with
// ErrNotFound); a set variable whose value fails [CheckValue], or an
// invalid secret name, is an error.
func NewEnvVault(vars map[string]string, lookup func(string) (string, bool)) (*EnvVault, error) {
	v := &EnvVault{vals: make(map[string]Value, len(vars))}
	for _, name := range slices.Sorted(maps.Keys(vars)) {
		if err := CheckName(name); err != nil {
			return nil, err
		}
		env := vars[name]
		v.vars = append(v.vars, env)
		s, ok := lookup(env)
		if !ok {
			continue
		}
		val := NewValue([]byte(s))
		if err := CheckValue(name, val); err != nil {
			return nil, err
		}
		v.vals[name] = val
	}
	return v, nil
}

// Variables returns the environment variable names the vault reads, which
// must never reach a plugin.
func (v *EnvVault) Variables() []string { return slices.Clone(v.vars) }

// Get implements [Vault].
func (v *EnvVault) Get(ctx context.Context, name string) (Value, error) {
	if err := ctx.Err(); err != nil {
		return Value{}, err
	}
	val, ok := v.vals[name]
	if !ok {
		return Value{}, notFound(name)
	}
	return val, nil
}

// Set implements [Vault]; it always fails with ErrReadOnly.
func (v *EnvVault) Set(_ context.Context, name string, _ Value) error {
	return unavailable(name, "environment vault is read-only", ErrReadOnly)
}

// List implements [Vault].
func (v *EnvVault) List(ctx context.Context) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return slices.Sorted(maps.Keys(v.vals)), nil
}

// Delete implements [Vault]; it always fails with ErrReadOnly.
func (v *EnvVault) Delete(_ context.Context, name string) error {
	return unavailable(name, "environment vault is read-only", ErrReadOnly)
}
