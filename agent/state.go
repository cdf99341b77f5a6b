package agent

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"
	"unicode/utf8"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/internal/atomicfile"
	"github.com/norma-run/norma/internal/ident"
	"github.com/norma-run/norma/provider"
	"github.com/norma-run/norma/tool"
)

// StateVersion is the version of the state file format this package writes
// and reads; any other version is STATE_CORRUPT.
const StateVersion = 1

// MaxStateSize bounds a state file that is read back.
const MaxStateSize = 64 << 20

// ValidRunID reports whether id can name a run: 1 to 64 letters, digits,
// '-' or '_', starting with a letter or digit. A run id names a directory
// under <state dir>/runs, so it can never hold a separator, a dot segment
// or anything a shell or a file system would read specially.
func ValidRunID(id string) bool { return ident.Valid(id, 64, ident.AlNum, ident.AlNumOr("_-")) }

// NewRunID returns a fresh random run id ("run-" and 16 hex digits).
func NewRunID() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on Linux
	return "run-" + hex.EncodeToString(b[:])
}

// Status is where a run is.
type Status string

// Statuses of a run, as stored in its state file and reported in an
// [Outcome].
const (
	// StatusRunning: the session is (or was, before a crash) running.
	StatusRunning Status = "running"
	// StatusCompleted: the model ended its turn without tool calls.
	StatusCompleted Status = "completed"
	// StatusLimit: a limit stopped the session; Outcome.Reason says which.
	StatusLimit Status = "limit"
	// StatusAwaitingApproval: a call waits for an out-of-band approval;
	// resume the run after deciding it.
	StatusAwaitingApproval Status = "awaiting_approval"
	// StatusHalted: a hook stopped the session.
	StatusHalted Status = "halted"
	// StatusCanceled: the context was canceled.
	StatusCanceled Status = "canceled"
	// StatusFailed: the provider or the state store failed.
	StatusFailed Status = "failed"
)

// ApprovalRef records an approval a call of the run asked for: the
// approval id in the approval store and what became of it in this run.
type ApprovalRef struct {
	ToolUseID  string `json:"toolUseId"`
	Tool       string `json:"tool"`
	ApprovalID string `json:"approvalId,omitempty"`
	// State is "granted", "denied" or "pending".
	State string `json:"state"`
}

// Pending is a turn whose tool_use blocks are not all answered yet: the
// results that exist (by tool_use id) and the calls that wait for approval.
// A tool_use of the last assistant message that is in neither map was
// interrupted by a crash; it is answered with TOOL_INTERRUPTED on resume and
// never run again.
type Pending struct {
	Results  map[string]provider.Block `json:"results,omitempty"`
	Awaiting map[string]string         `json:"awaiting,omitempty"` // tool_use id → approval id
}

// State is a run's persisted conversation: everything `norma run --resume`
// needs to continue with the same conversation, unlock set, approvals and
// todo list. It is written atomically after every turn to
// <state dir>/runs/<run id>/state.json (mode 0600).
type State struct {
	Version int       `json:"version"`
	RunID   string    `json:"runId"`
	Created time.Time `json:"created"`
	Updated time.Time `json:"updated"`
	Status  Status    `json:"status"`
	Reason  string    `json:"reason,omitempty"`
	// Provider, Model and BaseURL are what the run last talked to, so that
	// `norma run --resume` continues with them when no flag says
	// otherwise. BaseURL is empty for the provider's default server.
	Provider string `json:"provider,omitempty"`
	Model    string `json:"model,omitempty"`
	BaseURL  string `json:"baseUrl,omitempty"`
	Mode     string `json:"mode,omitempty"`
	// Messages is the conversation (user and assistant messages only;
	// the system prompt is rebuilt, never stored in it).
	Messages []provider.Message `json:"messages"`
	// Turns counts completed model turns of the main session.
	Turns             int            `json:"turns"`
	Usage             provider.Usage `json:"usage"`
	Cost              float64        `json:"cost,omitempty"`
	StopContinuations int            `json:"stopContinuations,omitempty"`
	Elapsed           time.Duration  `json:"elapsedNs"`
	// View is the registry view of the run: unlocked tools and the
	// subagent views with what each may use.
	View      tool.ViewState `json:"view"`
	Pending   *Pending       `json:"pending,omitempty"`
	Approvals []ApprovalRef  `json:"approvals,omitempty"`
	// Todos is the run's todo list as the todo tool stored it (JSON), when
	// the session has a todo source.
	Todos json.RawMessage `json:"todos,omitempty"`
}

// runDir returns <stateDir>/runs/<id> after validating id.
func runDir(stateDir, id string) (string, error) {
	if !ValidRunID(id) {
		return "", errorf(capability.ReasonRunIDInvalid, fmt.Sprintf("%q is not a valid run id", boundStr(id, 80)), nil)
	}
	if stateDir == "" || !filepath.IsAbs(stateDir) {
		return "", errorf(capability.ReasonStateUnavailable, "the state directory must be an absolute path", nil)
	}
	return filepath.Join(stateDir, "runs", id), nil
}

// StatePath returns the path of the state file of run id under stateDir.
// It fails with RUN_ID_INVALID for an id that is not [ValidRunID].
func StatePath(stateDir, id string) (string, error) {
	d, err := runDir(stateDir, id)
	if err != nil {
		return "", err
	}
	return filepath.Join(d, "state.json"), nil
}

// LoadState reads the state of run id. A missing file is an error wrapping
// fs.ErrNotExist (code STATE_UNAVAILABLE); a file that does not decode, is
// of another version or names another run is STATE_CORRUPT.
func LoadState(stateDir, id string) (*State, error) {
	p, err := StatePath(stateDir, id)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, errorf(capability.ReasonStateUnavailable, "run "+id, err)
	}
	defer f.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(io.LimitReader(f, MaxStateSize+1)); err != nil {
		return nil, errorf(capability.ReasonStateUnavailable, "run "+id, err)
	}
	if buf.Len() > MaxStateSize {
		return nil, errorf(capability.ReasonStateCorrupt, "run "+id+": state file too large", nil)
	}
	dec := json.NewDecoder(&buf)
	dec.DisallowUnknownFields()
	var s State
	if err := dec.Decode(&s); err != nil {
		return nil, errorf(capability.ReasonStateCorrupt, "run "+id, err)
	}
	switch {
	case s.Version != StateVersion:
		return nil, errorf(capability.ReasonStateCorrupt, fmt.Sprintf("run %s: state version %d, want %d", id, s.Version, StateVersion), nil)
	case s.RunID != id:
		return nil, errorf(capability.ReasonStateCorrupt, "run "+id+": the state file names another run", nil)
	}
	if err := provider.CheckMessages(s.Messages); err != nil {
		return nil, errorf(capability.ReasonStateCorrupt, "run "+id, err)
	}
	return &s, nil
}

// saveState writes s atomically: a temporary file in the run directory,
// fsync, rename over state.json, fsync of the directory.
func saveState(stateDir string, s *State) error {
	d, err := runDir(stateDir, s.RunID)
	if err != nil {
		return err
	}
	data, err := json.MarshalIndent(s, "", " ")
	if err != nil {
		return errorf(capability.ReasonStateUnavailable, "encode state", err)
	}
	if err := os.MkdirAll(d, 0o700); err != nil {
		return errorf(capability.ReasonStateUnavailable, "run directory", err)
	}
	if err := atomicfile.Write(filepath.Join(d, "state.json"), data, 0o600); err != nil {
		return errorf(capability.ReasonStateUnavailable, "write state", err)
	}
	return nil
}

// StateExists reports whether run id has a state file under stateDir.
func StateExists(stateDir, id string) (bool, error) {
	p, err := StatePath(stateDir, id)
	if err != nil {
		return false, err
	}
	_, err = os.Stat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

// boundStr returns s cut to at most n bytes on a UTF-8 boundary, with "…"
// appended when it was cut.
func boundStr(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
