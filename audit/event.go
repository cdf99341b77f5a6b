package audit

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Event types. They are API: never rename one.
const (
	TypeCapabilityDecision = "capability_decision"
	TypeApprovalRequested  = "approval_requested"
	TypeApprovalGranted    = "approval_granted"
	TypeApprovalDenied     = "approval_denied"
	TypeApprovalExpired    = "approval_expired"
	TypeApprovalConsumed   = "approval_consumed"
	TypeToolCallStarted    = "tool_call_started"
	TypeToolCallFinished   = "tool_call_finished"
	TypePluginInstalled    = "plugin_installed"
	TypePluginUpdated      = "plugin_updated"
	TypePluginHeld         = "plugin_held"
	TypePluginRemoved      = "plugin_removed"
	TypeConsentGranted     = "consent_granted"
	TypeConsentRevoked     = "consent_revoked"
	TypeSandboxDowngraded  = "sandbox_downgraded"
	// TypeOutputRedacted says that secrets were masked in a call's output:
	// Detail holds "redacted" (the number of matches) and "redacted.NAME"
	// per secret name or token kind, never a value.
	TypeOutputRedacted = "output_redacted"
	// TypePluginNotice is a plugin's logging message or progress
	// notification (Detail: kind, level, text, bounded and redacted).
	TypePluginNotice = "plugin_notice"
	// TypeElicitation is a server's request for input from the person and
	// its outcome (Detail: action, fields; never the values).
	TypeElicitation = "elicitation"
	// TypeSampling is a server's request for a model completion and its
	// outcome (Detail: tokens; never a message body).
	TypeSampling = "sampling"
	// TypeAgentToolResult is a tool call another agent ran (Claude Code's
	// PostToolUse, ...), reported to Norma's agent hook: Detail names the
	// agent, session and tool_use id; OutputDigest and IsError describe
	// the result, never its content.
	TypeAgentToolResult = "agent_tool_result"
	// TypeAgentSession is another agent's session starting or ending
	// (Detail: agent, event, session, cwd).
	TypeAgentSession = "agent_session"
	// TypeRunStarted is a `norma run` starting or resuming a session.
	// Detail: DetailRunKind (RunInteractive or RunBackground) and
	// "resumed" ("true" when it resumes a run).
	TypeRunStarted = "run_started"
)

// The kind of a run, in the DetailRunKind entry of a run_started event:
// interactive when a person at the terminal answers its approvals,
// background otherwise (no terminal, --json, --yes without a terminal,
// CI, a queued run).
const (
	DetailRunKind  = "kind"
	RunInteractive = "interactive"
	RunBackground  = "background"
)

var knownTypes = map[string]bool{
	TypeCapabilityDecision: true, TypeApprovalRequested: true, TypeApprovalGranted: true,
	TypeApprovalDenied: true, TypeApprovalExpired: true, TypeApprovalConsumed: true,
	TypeToolCallStarted: true, TypeToolCallFinished: true, TypePluginInstalled: true,
	TypePluginUpdated: true, TypePluginHeld: true, TypePluginRemoved: true,
	TypeConsentGranted: true, TypeConsentRevoked: true, TypeSandboxDowngraded: true,
	TypeOutputRedacted: true, TypePluginNotice: true, TypeElicitation: true, TypeSampling: true,
	TypeAgentToolResult: true, TypeAgentSession: true, TypeRunStarted: true,
}

// KnownType reports whether t is one of the Type constants.
func KnownType(t string) bool { return knownTypes[t] }

// MaxFieldLen bounds every string field of an event (in bytes, after
// redaction). Longer values are cut at a rune boundary and marked, so that a
// file body or a message pasted into a field never lands in the log whole.
const MaxFieldLen = 1024

// MaxDetail bounds the number of Detail entries.
const MaxDetail = 32

// Event is one audit event. Only Type is required; Time defaults to the
// log's clock. Put a hash of a target that could hold personal data in
// TargetHash ([HashTarget]), never the target itself.
type Event struct {
	Type             string            `json:"type"`
	Time             time.Time         `json:"-"`
	RunID            string            `json:"runId,omitempty"`
	Principal        string            `json:"principal,omitempty"`
	Plugin           string            `json:"plugin,omitempty"`
	PluginVersion    string            `json:"pluginVersion,omitempty"`
	Tool             string            `json:"tool,omitempty"`
	CapabilityKind   string            `json:"capabilityKind,omitempty"`
	Decision         string            `json:"decision,omitempty"`
	Reason           string            `json:"reason,omitempty"`
	Layer            string            `json:"layer,omitempty"`
	Rule             string            `json:"rule,omitempty"`
	ManifestDigest   string            `json:"manifestDigest,omitempty"`
	PolicyGeneration uint64            `json:"policyGeneration,omitempty"`
	ApprovalID       string            `json:"approvalId,omitempty"`
	TargetHash       string            `json:"targetHash,omitempty"`
	OutputDigest     string            `json:"outputDigest,omitempty"`
	DurationMS       int64             `json:"durationMs,omitempty"`
	IsError          bool              `json:"isError,omitempty"`
	Detail           map[string]string `json:"detail,omitempty"`
}

// MarshalJSON encodes the event with its time as RFC 3339 (UTC, nanoseconds).
func (e Event) MarshalJSON() ([]byte, error) {
	type plain Event // no methods: avoids recursion
	return json.Marshal(struct {
		Time string `json:"time"`
		plain
	}{e.Time.UTC().Format(time.RFC3339Nano), plain(e)})
}

// UnmarshalJSON decodes what MarshalJSON wrote.
func (e *Event) UnmarshalJSON(b []byte) error {
	type plain Event
	var w struct {
		Time string `json:"time"`
		plain
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	t, err := time.Parse(time.RFC3339Nano, w.Time)
	if err != nil {
		return fmt.Errorf("audit: event time: %w", err)
	}
	*e = Event(w.plain)
	e.Time = t
	return nil
}

// Canonical returns the RFC 8785 canonical JSON encoding of e, the bytes
// that are hashed into the chain.
// Detail keys that are not valid UTF-8 are repaired first (U+FFFD), and
// when two keys become equal the one that sorts last in byte order wins, so
// the encoding never holds a duplicate member.
func (e Event) Canonical() ([]byte, error) {
	e.Detail = validKeys(e.Detail)
	return appendCanonical(make([]byte, 0, 512), &e), nil
}

func validKeys(m map[string]string) map[string]string {
	ok := true
	for k := range m {
		if !utf8.ValidString(k) {
			ok = false
			break
		}
	}
	if ok {
		return m
	}
	out := make(map[string]string, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out[strings.ToValidUTF8(k, "\uFFFD")] = m[k]
	}
	return out
}

// HashTarget returns "sha256:" + hex(sha256(target)), the form in which a
// target that could hold personal data is written to the log.
func HashTarget(target string) string {
	if target == "" {
		return ""
	}
	msg := append(make([]byte, 0, 256), target...) // on the stack unless long
	sum := sha256.Sum256(msg)
	var b [len("sha256:") + 2*sha256.Size]byte // one allocation: the string
	n := copy(b[:], "sha256:")
	hex.Encode(b[n:], sum[:])
	return string(b[:])
}

// Redactor rewrites a string before it is written to the log, replacing
// secret values with a placeholder. Implementations must be safe for
// concurrent use. The secrets package provides the real one.
type Redactor interface {
	Redact(s string) string
}

// RedactorFunc adapts a function to [Redactor].
type RedactorFunc func(string) string

// Redact calls f.
func (f RedactorFunc) Redact(s string) string { return f(s) }

// sanitize redacts and bounds every string field of e.
func sanitize(e Event, r Redactor) Event {
	clean := func(s string) string {
		if s == "" {
			return s
		}
		if r != nil {
			s = r.Redact(s)
		}
		return bound(s)
	}
	e.Type = clean(e.Type)
	e.RunID = clean(e.RunID)
	e.Principal = clean(e.Principal)
	e.Plugin = clean(e.Plugin)
	e.PluginVersion = clean(e.PluginVersion)
	e.Tool = clean(e.Tool)
	e.CapabilityKind = clean(e.CapabilityKind)
	e.Decision = clean(e.Decision)
	e.Reason = clean(e.Reason)
	e.Layer = clean(e.Layer)
	e.Rule = clean(e.Rule)
	e.ManifestDigest = clean(e.ManifestDigest)
	e.ApprovalID = clean(e.ApprovalID)
	e.TargetHash = clean(e.TargetHash)
	e.OutputDigest = clean(e.OutputDigest)
	if len(e.Detail) > 0 {
		e.Detail = sanitizeDetail(e.Detail, clean)
	}
	return e
}

// sanitizeDetail returns m with every key and value cleaned, at most
// MaxDetail of them (the first in key order, then "_truncated"). It is m
// itself when cleaning changes nothing, the common case, so that an event
// costs no copy of its map; m is never modified.
func sanitizeDetail(m map[string]string, clean func(string) string) map[string]string {
	if len(m) <= MaxDetail {
		same := true
		for k, v := range m {
			if clean(k) != k || clean(v) != v {
				same = false
				break
			}
		}
		if same {
			return m
		}
	}
	d := make(map[string]string, min(len(m), MaxDetail))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if len(d) == MaxDetail {
			d["_truncated"] = "true"
			break
		}
		d[clean(k)] = clean(m[k])
	}
	return d
}

const truncMark = "…[truncated]"

func bound(s string) string {
	if len(s) <= MaxFieldLen {
		return s
	}
	cut := MaxFieldLen - len(truncMark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + truncMark
}
