package agent

import (
	"context"
	"fmt"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/gate"
	"github.com/norma-run/norma/manifest"
	"github.com/norma-run/norma/policy"
)

// BuiltinManifest is the manifest the built-in tools (those registered
// with [WithTools], and the Task tool) are decided under, before the
// workspace and run ceilings of [WithPolicy] narrow it further:
//
//   - files: read and write anywhere in the workspace, except .env files,
//     .git and .norma (the workspace's own policy) at any depth;
//   - network: nothing (a built-in network tool needs a run or workspace
//     policy plus a manifest of its own, via [WithBuiltinPolicy]);
//   - processes: approval required, and only with the OS sandbox;
//   - external writes: approval required.
const BuiltinManifest = `schema_version: 2
id: norma.builtin
version: 1.0.0
description: Norma's built-in tools
entrypoint: builtin
tools:
  - name: builtin
    effects: {data: read, external_state: none}
    approval: never
permissions:
  filesystem:
    read: [workspace://**]
    write: [workspace://**]
    deny: [workspace://**/.env*, workspace://**/.git/**, workspace://**/.norma/**]
  process:
    spawn: approval_required
  external_writes:
    default: approval_required
`

// BuiltinPolicy compiles [BuiltinManifest] under the workspace and run
// ceilings (either may be nil). sandbox says whether the OS sandbox is
// available; without it the policy's host layer denies process spawning.
func BuiltinPolicy(workspace, run *manifest.Layer, sandbox bool) (*policy.Set, error) {
	m, err := manifest.Parse("builtin.yaml", []byte(BuiltinManifest))
	if err != nil {
		return nil, fmt.Errorf("agent: built-in manifest: %w", err)
	}
	s, err := policy.Compile(policy.Inputs{Manifest: m, Workspace: workspace, Run: run, Host: policy.Host{Sandbox: sandbox}})
	if err != nil {
		return nil, fmt.Errorf("agent: built-in policy: %w", err)
	}
	return s, nil
}

// deciderChecker lets a gate.Decider serve as the file guard's checker, so
// that what the gate decides before a call and what the guard enforces
// during it come from the same policy.
type deciderChecker struct{ d gate.Decider }

func (c deciderChecker) Check(ctx context.Context, r capability.Request) capability.Decision {
	return c.d.Decide(ctx, r)
}

var (
	_ gate.Decider       = (*policy.Set)(nil)
	_ capability.Checker = deciderChecker{}
)
