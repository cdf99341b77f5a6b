package approval

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/gowebpki/jcs"
)

// ErrNotFound is returned by a [Backend] for an unknown approval id.
var ErrNotFound = errors.New("approval: not found")

// Scope says how far an approval reaches.
type Scope string

// Scopes.
const (
	ScopeOnce    Scope = "once"
	ScopeRun     Scope = "run"
	ScopeSession Scope = "session"
)

// Valid reports whether s is a known scope.
func (s Scope) Valid() bool { return s == ScopeOnce || s == ScopeRun || s == ScopeSession }

// reusable reports whether a later identical action may reuse the approval.
func (s Scope) reusable() bool { return s == ScopeRun || s == ScopeSession }

// State is where an approval is in its life.
type State string

// States. Pending is the only state a decision can leave.
const (
	StatePending  State = "pending"
	StateGranted  State = "granted"
	StateDenied   State = "denied"
	StateExpired  State = "expired"
	StateConsumed State = "consumed"
)

// maxWhy bounds the reason of a decision, in bytes.
const maxWhy = 512

// Request is what an [Authorizer] is asked for and a human is asked to
// approve: one exact action, named by ActionHash. Preview is the full,
// redacted rendering of the action (see [BoundPreview]): the command text,
// the plugin tool's arguments, the diff of a file change; it is derived
// from the input the hash covers, it is never a secret, and a granted
// approval is reused only for a request with the same preview. Credential
// is a secret's name, never its value. ToolUseID is the tool call that asked
// when the gate asks; it is empty for a brokered request.
type Request struct {
	ID    string `json:"id"`
	RunID string `json:"runId"`
	// Workspace is the directory the action runs in, for the person who
	// decides; the action hash binds its identity ([WorkspaceID]).
	Workspace      string    `json:"workspace,omitempty"`
	Principals     []string  `json:"principals,omitempty"`
	ToolUseID      string    `json:"toolUseId,omitempty"`
	Plugin         string    `json:"plugin,omitempty"`
	PluginVersion  string    `json:"pluginVersion,omitempty"`
	ManifestDigest string    `json:"manifestDigest,omitempty"`
	Tool           string    `json:"tool"`
	Effect         string    `json:"effect,omitempty"`
	Target         string    `json:"target,omitempty"`
	Preview        string    `json:"preview,omitempty"`
	Credential     string    `json:"credential,omitempty"`
	ActionHash     string    `json:"actionHash"`
	Created        time.Time `json:"created"`
	Expires        time.Time `json:"expires"`
	Scope          Scope     `json:"scope"`
}

// Record is a stored request with its decision.
type Record struct {
	Request
	State State `json:"state"`
	// DecidedBy, Decided and Why record who granted or denied, when and why.
	DecidedBy string    `json:"decidedBy,omitempty"`
	Decided   time.Time `json:"decided,omitzero"`
	Why       string    `json:"why,omitempty"`
	// Uses counts executions that consumed this approval.
	Uses int `json:"uses"`
}

// Use is one execution that consumed an approval.
type Use struct {
	ApprovalID     string    `json:"approvalId"`
	N              int       `json:"n"`
	IdempotencyKey string    `json:"idempotencyKey"`
	RunID          string    `json:"runId"`
	ActionHash     string    `json:"actionHash"`
	Consumed       time.Time `json:"consumed"`
	// Finished is zero until [Service.Finish]; a use that is consumed but
	// not finished after a crash is returned by [Service.Unfinished].
	Finished time.Time `json:"finished,omitzero"`
}

// Ticket lets exactly one execution proceed. Pass IdempotencyKey to the
// tool's Env and, for HTTP, as the Idempotency-Key header.
type Ticket struct {
	ApprovalID     string `json:"approvalId"`
	IdempotencyKey string `json:"idempotencyKey"`
	ActionHash     string `json:"actionHash"`
	Use            int    `json:"use"`
}

func (u Use) ticket() Ticket {
	return Ticket{ApprovalID: u.ApprovalID, IdempotencyKey: u.IdempotencyKey, ActionHash: u.ActionHash, Use: u.N}
}

// IdempotencyKey derives the key of the n-th use of approval id for the
// action with hash actionHash. It is a pure function, so a retry of the
// same use repeats the same key.
func IdempotencyKey(approvalID, actionHash string, n int) string {
	h := sha256.New()
	h.Write([]byte("norma-idempotency-v1\x00"))
	h.Write([]byte(approvalID))
	h.Write([]byte{0})
	h.Write([]byte(actionHash))
	h.Write([]byte{0})
	h.Write([]byte(strconv.Itoa(n)))
	return "nik_" + hex.EncodeToString(h.Sum(nil))[:40]
}

// Action is the canonical description of one tool call, as the gate
// defines it. Input is the tool's JSON input after any hook rewrite.
// Workspace is the [WorkspaceID] of the directory the call runs in (empty
// for a session without one), so that an approval given in one workspace
// never matches the same call of the same run in another.
type Action struct {
	Plugin         string          `json:"plugin"`
	Version        string          `json:"version"`
	ManifestDigest string          `json:"manifestDigest"`
	Tool           string          `json:"tool"`
	Input          json.RawMessage `json:"input"`
	RunID          string          `json:"runId"`
	Workspace      string          `json:"workspace"`
}

// HashAction returns "sha256:" + hex(sha256(RFC 8785 JSON of a)), with the
// input canonicalized too, so key order and whitespace do not matter and
// any changed argument does. It fails on an empty tool or run id and on
// input that is not valid JSON.
func HashAction(a Action) (string, error) {
	if a.Tool == "" || a.RunID == "" {
		return "", errors.New("approval: action needs a tool and a run id")
	}
	if len(a.Input) == 0 {
		return "", errors.New("approval: action input is empty (use {} for none)")
	}
	in, err := jcs.Transform(a.Input)
	if err != nil {
		return "", fmt.Errorf("approval: action input: %w", err)
	}
	a.Input = in
	raw, err := json.Marshal(a)
	if err != nil {
		return "", fmt.Errorf("approval: encode action: %w", err)
	}
	c, err := jcs.Transform(raw)
	if err != nil {
		return "", fmt.Errorf("approval: canonicalize action: %w", err)
	}
	sum := sha256.Sum256(c)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}
