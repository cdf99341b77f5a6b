package capability

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Kind is the kind of a capability request.
type Kind uint8

const (
	KindInvalid Kind = iota
	FSRead
	FSWrite
	NetRequest
	SecretUse
	ProcessSpawn
	ExternalWrite
)

var kindNames = [...]string{
	KindInvalid:   "invalid",
	FSRead:        "fs.read",
	FSWrite:       "fs.write",
	NetRequest:    "net.request",
	SecretUse:     "secret.use",
	ProcessSpawn:  "process.spawn",
	ExternalWrite: "external.write",
}

// String returns the kind as written in manifests and on the command line.
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "invalid"
}

// ParseKind parses "fs.read", "net.request", ….
func ParseKind(s string) (Kind, error) {
	for i, n := range kindNames {
		if i != 0 && n == s {
			return Kind(i), nil
		}
	}
	return KindInvalid, fmt.Errorf("capability: unknown kind %q (want one of fs.read, fs.write, net.request, secret.use, process.spawn, external.write)", s)
}

// Mode is what a layer answers for a request. Modes are ordered
// Deny < ApprovalRequired < Allow; combining layers takes the minimum.
// The zero value is Deny.
type Mode uint8

const (
	Deny Mode = iota
	ApprovalRequired
	Allow
)

// String returns "deny", "approval_required" or "allow".
func (m Mode) String() string {
	switch m {
	case ApprovalRequired:
		return "approval_required"
	case Allow:
		return "allow"
	default:
		return "deny"
	}
}

// ParseMode parses the manifest spelling of a mode.
func ParseMode(s string) (Mode, error) {
	switch s {
	case "deny":
		return Deny, nil
	case "approval_required":
		return ApprovalRequired, nil
	case "allow":
		return Allow, nil
	}
	return Deny, fmt.Errorf("capability: unknown mode %q (want deny, approval_required or allow)", s)
}

// MarshalText implements encoding.TextMarshaler.
func (m Mode) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (m *Mode) UnmarshalText(b []byte) error {
	v, err := ParseMode(string(b))
	if err != nil {
		return err
	}
	*m = v
	return nil
}

// Min returns the more restrictive of two modes.
func Min(a, b Mode) Mode {
	if a < b {
		return a
	}
	return b
}

// Request is one capability request, already normalized by the guard that
// makes it: Path is a clean slash-separated path relative to the workspace
// root (no leading "/", no ".."), Origin is scheme://host:port, Path for
// net.request is the decoded, dot-segment-free URL path.
type Request struct {
	Kind Kind

	// Path: fs.read / fs.write, workspace-relative; net.request, URL path
	// (escaped form: a segment that held an encoded "/" keeps it as %2F so
	// that no {name} template can match it as two segments).
	Path string
	// Method and Origin for net.request; Origin alone for secret.use.
	Method string
	Origin string
	// Secret name for secret.use.
	Secret string
	// Argv for process.spawn.
	Argv []string
	// Tool and Target for external.write.
	Tool   string
	Target string
}

// String renders the request the way `norma policy explain --op` takes it.
func (r Request) String() string {
	switch r.Kind {
	case FSRead, FSWrite:
		return r.Kind.String() + " workspace://" + r.Path
	case NetRequest:
		return r.Kind.String() + " " + r.Method + " " + r.Origin + r.Path
	case SecretUse:
		return r.Kind.String() + " " + r.Secret + " " + r.Origin
	case ProcessSpawn:
		return r.Kind.String() + " " + strings.Join(r.Argv, " ")
	case ExternalWrite:
		return r.Kind.String() + " " + r.Tool + " " + r.Target
	}
	return "invalid request"
}

// Reason is a stable, upper-case reason code. Messages may change; codes do not.
type Reason string

// Reason codes. Add new ones at the end of their group; never rename one.
const (
	ReasonAllowed                  Reason = "ALLOWED"
	ReasonApprovalRequired         Reason = "APPROVAL_REQUIRED"
	ReasonInvalidRequest           Reason = "INVALID_REQUEST"
	ReasonPolicyError              Reason = "POLICY_ERROR"
	ReasonFilesystemReadDenied     Reason = "FILESYSTEM_READ_DENIED"
	ReasonFilesystemWriteDenied    Reason = "FILESYSTEM_WRITE_DENIED"
	ReasonFilesystemDenyRule       Reason = "FILESYSTEM_DENY_RULE"
	ReasonPathEscape               Reason = "PATH_ESCAPE"
	ReasonNetworkDestinationDenied Reason = "NETWORK_DESTINATION_DENIED"
	ReasonNetworkMethodDenied      Reason = "NETWORK_METHOD_DENIED"
	ReasonNetworkPathDenied        Reason = "NETWORK_PATH_DENIED"
	ReasonNetworkPrivateAddress    Reason = "NETWORK_PRIVATE_ADDRESS"
	ReasonNetworkInvalidURL        Reason = "NETWORK_INVALID_URL"
	ReasonNetworkRedirectDenied    Reason = "NETWORK_REDIRECT_DENIED"
	ReasonSecretUndeclared         Reason = "SECRET_UNDECLARED"
	ReasonSecretOriginMismatch     Reason = "SECRET_ORIGIN_MISMATCH"
	ReasonProcessSpawnDenied       Reason = "PROCESS_SPAWN_DENIED"
	ReasonExternalWriteDenied      Reason = "EXTERNAL_WRITE_DENIED"
	ReasonToolUndeclared           Reason = "TOOL_UNDECLARED"
	ReasonToolUnknown              Reason = "TOOL_UNKNOWN"
	ReasonSchemaInvalid            Reason = "SCHEMA_INVALID"
	ReasonRuleDenied               Reason = "RULE_DENIED"
	ReasonModeDenied               Reason = "MODE_DENIED"
	ReasonHookBlocked              Reason = "HOOK_BLOCKED"
	ReasonHookFailed               Reason = "HOOK_FAILED"
	ReasonSandboxUnavailable       Reason = "SANDBOX_UNAVAILABLE"
	ReasonApprovalDenied           Reason = "APPROVAL_DENIED"
	ReasonApprovalStoreUnavailable Reason = "APPROVAL_STORE_UNAVAILABLE"
	ReasonApprovalExpired          Reason = "APPROVAL_EXPIRED"
	ReasonApprovalOtherRun         Reason = "APPROVAL_OTHER_RUN"
	ReasonApprovalMismatch         Reason = "APPROVAL_MISMATCH"
	ReasonApprovalConsumed         Reason = "APPROVAL_CONSUMED"
	ReasonTimeout                  Reason = "TIMEOUT"
	ReasonCanceled                 Reason = "CANCELED"
	ReasonPanic                    Reason = "TOOL_PANIC"
)

// Layer names where a decision was made: a policy layer, in evaluation
// order (plugin — or builtin, the built-in tools' own manifest — grant,
// workspace, run, sandbox), a stage of the gate
// (gate, rules, mode, tool, hook, approval), or a guard that refused a
// request as it was made (guard, broker, secret, shell, host, agent).
type Layer string

// Layers.
const (
	LayerPlugin    Layer = "plugin"
	LayerBuiltin   Layer = "builtin"
	LayerGrant     Layer = "grant"
	LayerWorkspace Layer = "workspace"
	LayerRun       Layer = "run"
	LayerSandbox   Layer = "sandbox"

	LayerGate     Layer = "gate"
	LayerRules    Layer = "rules"
	LayerMode     Layer = "mode"
	LayerTool     Layer = "tool"
	LayerHook     Layer = "hook"
	LayerApproval Layer = "approval"

	LayerGuard  Layer = "guard"
	LayerBroker Layer = "broker"
	LayerSecret Layer = "secret"
	LayerShell  Layer = "shell"
	LayerHost   Layer = "host"
	LayerAgent  Layer = "agent"
)

// LayerResult is one entry of a decision trace.
type LayerResult struct {
	Layer  Layer  `json:"layer"`
	Mode   Mode   `json:"decision"`
	Reason Reason `json:"reason"`
	Rule   string `json:"rule,omitempty"`
}

// Decision is the outcome of a capability check. The zero value denies.
type Decision struct {
	Mode             Mode          `json:"decision"`
	Reason           Reason        `json:"reason"`
	Layer            Layer         `json:"layer,omitempty"`
	Rule             string        `json:"rule,omitempty"`
	Request          string        `json:"request"`
	ManifestDigest   string        `json:"manifestDigest,omitempty"`
	PolicyGeneration uint64        `json:"policyGeneration"`
	Trace            []LayerResult `json:"trace,omitempty"`
	// Declared is the rule of the first layer (the plugin's or the
	// built-in tools' manifest) for the request, whatever the decision:
	// the declared entry the request would use, by its stable position
	// (plugin:permissions.network.requests[1], and for a network request
	// its path template, …requests[1].paths[0]), never an argument value.
	// Rule names the deciding layer's rule instead. The audit events of a
	// plugin's requests carry it, and `norma plugin usage` counts it.
	Declared string `json:"-"`
}

// Allowed reports whether the decision lets the request proceed without approval.
func (d Decision) Allowed() bool { return d.Mode == Allow }

// Error is the error type of every refusal in Norma: a guard, a layer of
// the gate, the sandbox, the plugin installer, the secret store and the
// agent loop all return an *Error, so one vocabulary explains, audits and
// matches them. It follows the vizerror model: what is safe to show is kept
// apart from what is only for the operator's logs.
//
//   - Decision.Reason is the stable reason code; callers, tests, metrics
//     and audit records compare codes, never messages.
//   - Decision.Layer names where the refusal was made (a policy layer, a
//     stage of the gate, or the package that refused: [LayerPlugin],
//     [LayerSandbox], [LayerSecret], [LayerAgent], [LayerHost], …).
//   - Decision.Rule is the policy rule that decided, when one did.
//   - Decision.Request is the request refused, when there is one; the rest
//     of the Decision (mode, trace, generation) is as the layer decided.
//   - Detail is the public message: safe to show to an agent or a user,
//     never a secret or file content. Constructors fold the operation and
//     the path, escaped, into it.
//   - Err is the internal cause (an errno, a parse error, a sentinel such
//     as secret.ErrNotFound), reachable through [errors.Is] and
//     [errors.As] by Unwrap. It may hold anything, so it is never part of
//     the message: [Error.Error] is built from the code, layer, rule and
//     Detail only.
//
// [Error.Is] compares reason codes only (shallowly, as errors.Is
// documents): errors.Is(err, &Error{Decision: Decision{Reason: r}})
// matches every refusal with code r. [ReasonOf] returns the code of the
// first *Error in a chain.
type Error struct {
	Decision Decision
	// Detail is the public message; never a secret or file content.
	Detail string
	// Err is the internal cause, may be nil; never shown by Error.
	Err error
}

// Error returns the public message: the reason code, the layer and rule
// when set, and Detail. It never includes the cause.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(string(e.Decision.Reason))
	if e.Decision.Layer != "" {
		b.WriteString(" (layer ")
		b.WriteString(string(e.Decision.Layer))
		if e.Decision.Rule != "" {
			b.WriteString(", rule ")
			b.WriteString(e.Decision.Rule)
		}
		b.WriteString(")")
	}
	if e.Detail != "" {
		b.WriteString(": ")
		b.WriteString(e.Detail)
	}
	return b.String()
}

// Unwrap returns the internal cause.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is an *Error with the same reason code.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Decision.Reason == e.Decision.Reason
}

// Denied builds an *Error for a request refused before any policy layer ran
// (a malformed path, an escape, a private address).
func Denied(reason Reason, req string, detail string) *Error {
	return &Error{Decision: Decision{Mode: Deny, Reason: reason, Layer: "guard", Request: req}, Detail: detail}
}

// ReasonOf returns the reason code of err when it is (or wraps) an *Error,
// and "" otherwise.
func ReasonOf(err error) Reason {
	if e, ok := errors.AsType[*Error](err); ok {
		return e.Decision.Reason
	}
	return ""
}

// Decider decides capability requests: the one decision interface of
// Norma. The gate, the file guard, the network guard and the egress broker
// each ask one, and *policy.Set implements it. Implementations must be safe
// for concurrent use, must not do I/O, and must deny on any internal error.
type Decider interface {
	Decide(ctx context.Context, req Request) Decision
}

// AllowAll is the Decider that allows every request, for what is
// explicitly unconfined: resolving a path without deciding on it.
type AllowAll struct{}

// Decide allows r.
func (AllowAll) Decide(_ context.Context, r Request) Decision {
	return Decision{Mode: Allow, Reason: ReasonAllowed, Request: r.String()}
}

// OpDetail is the public Detail of a refusal in the form "op path: msg",
// leaving out what is empty: op names the step ("install", "mount"), path
// the file or entry concerned and msg the explanation. A path with spaces,
// quotes or unusual bytes is quoted, so that a hostile name cannot forge
// output.
func OpDetail(op, path, msg string) string {
	var b strings.Builder
	b.WriteString(op)
	if path != "" {
		if b.Len() > 0 {
			b.WriteString(" ")
		}
		b.WriteString(QuoteIfNeeded(path))
	}
	if msg != "" {
		if b.Len() > 0 {
			b.WriteString(": ")
		}
		b.WriteString(msg)
	}
	return b.String()
}

// QuoteIfNeeded keeps an ordinary name readable and quotes (Go syntax) one
// with spaces, quotes, control or non-ASCII bytes.
func QuoteIfNeeded(s string) string {
	for _, r := range s {
		if r <= ' ' || r == '"' || r == 0x7f || r > 0x7e {
			return strconv.Quote(s)
		}
	}
	return s
}
