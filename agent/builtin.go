package agent

import (
	"crypto/x509"
	"fmt"
	"net/http"
	"net/netip"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/guard/netguard"
	"github.com/norma-run/norma/manifest"
	"github.com/norma-run/norma/policy"
	"github.com/norma-run/norma/tool/builtin"
)

// BuiltinPolicy compiles the built-in tools' manifest (builtin.Manifest: the
// whole workspace readable and writable except .env files and the workspace
// policy, processes only with the OS sandbox, no network, no external
// writes) under the workspace and run ceilings (either may be nil). sandbox
// says whether the OS sandbox is available; without it the policy's host
// layer denies process spawning. A host that configures network rules or a
// search backend compiles builtin.Build's manifest instead and passes it with
// [WithBuiltinPolicy].
func BuiltinPolicy(workspace, run *manifest.Layer, sandbox bool) (*policy.Set, error) {
	m, err := builtin.Manifest()
	if err != nil {
		return nil, fmt.Errorf("agent: built-in manifest: %w", err)
	}
	s, err := policy.Compile(policy.Inputs{Manifest: m, Workspace: workspace, Run: run, Host: policy.Host{Sandbox: sandbox}})
	if err != nil {
		return nil, fmt.Errorf("agent: built-in policy: %w", err)
	}
	return s, nil
}

// builtinHTTP is the built-in tools' HTTP client (tool.Env.HTTP): every
// request and every redirect hop is decided by the same policy value that
// the gate decided the call with, and every address is checked at dial
// time, private ones admitted only as that policy's allow_private says.
func builtinHTTP(d capability.Decider, r netguard.Resolver, roots *x509.CertPool) *http.Client {
	dialer := &netguard.Dialer{Resolver: r}
	if p, ok := d.(interface{ AllowPrivate() []netip.Prefix }); ok {
		dialer.AllowPrivate = p.AllowPrivate()
	}
	return netguard.NewClient(&netguard.Transport{Policy: d, Dialer: dialer, RootCAs: roots})
}

var _ capability.Decider = (*policy.Set)(nil)
