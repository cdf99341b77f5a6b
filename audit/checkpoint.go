package audit

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/mod/sumdb/note"

	"github.com/norma-run/norma/capability"
)

// A checkpoint is a signed statement "the log named Origin had Size events
// and its chain hash at event Size was Hash". It is a signed note
// (golang.org/x/mod/sumdb/note, the format of Go's checksum database)
// whose text is the checkpoint body of transparency logs
// (c2sp.org/tlog-checkpoint):
//
//	<origin>
//	<size, decimal>
//	<hash, standard base64>
//
//	— <key name> <base64 signature>
//
// The log is a hash chain, not a Merkle tree, so the third line is the
// chain hash hash_Size (see the package documentation; 32 zero bytes for
// Size 0), not a Merkle root. A checkpoint proves nothing about events
// after Size; it proves that events 1..Size existed and were exactly what
// they are now, to anyone who holds the verifier key and not the signing
// key.

// Checkpoint is the body of a checkpoint.
type Checkpoint struct {
	Origin string
	Size   int64
	Hash   [HashSize]byte
}

// MaxSignedCheckpoint bounds a signed checkpoint read from a file or the
// store; ours are about 200 bytes.
const MaxSignedCheckpoint = 16 << 10

// Text returns the note text of c: origin, size and hash lines, each
// ending in a newline, no extension lines.
func (c Checkpoint) Text() string {
	return c.Origin + "\n" + strconv.FormatInt(c.Size, 10) + "\n" + base64.StdEncoding.EncodeToString(c.Hash[:]) + "\n"
}

// ParseCheckpoint parses a checkpoint body. The size must be a canonical
// non-negative decimal and the hash canonical base64 of 32 bytes.
// Extension lines after the hash are allowed (they are signed too) and
// ignored, as c2sp.org/tlog-checkpoint says.
func ParseCheckpoint(text string) (Checkpoint, error) {
	var c Checkpoint
	if !strings.HasSuffix(text, "\n") {
		return c, errors.New("checkpoint does not end in a newline")
	}
	if !utf8.ValidString(text) {
		return c, errors.New("checkpoint is not UTF-8")
	}
	lines := strings.Split(text[:len(text)-1], "\n")
	if len(lines) < 3 {
		return c, fmt.Errorf("checkpoint has %d lines, want origin, size and hash", len(lines))
	}
	for i, l := range lines {
		if l == "" {
			return c, fmt.Errorf("checkpoint line %d is empty", i+1)
		}
	}
	c.Origin = lines[0]
	n, err := strconv.ParseInt(lines[1], 10, 64)
	if err != nil || n < 0 || strconv.FormatInt(n, 10) != lines[1] {
		return c, errors.New("checkpoint size is not a canonical non-negative decimal")
	}
	c.Size = n
	// The decoder skips \r and \n even in Strict mode, so a hash line
	// with a \r inside would decode to the same hash: accept only the
	// encoding Text writes, so that one checkpoint has one text.
	h, err := base64.StdEncoding.Strict().DecodeString(lines[2])
	if err != nil || len(h) != HashSize || base64.StdEncoding.EncodeToString(h) != lines[2] {
		return c, fmt.Errorf("checkpoint hash is not canonical base64 of %d bytes", HashSize)
	}
	copy(c.Hash[:], h)
	return c, nil
}

// SignCheckpoint returns c as a note signed by s.
func SignCheckpoint(c Checkpoint, s note.Signer) ([]byte, error) {
	return note.Sign(&note.Note{Text: c.Text()}, s)
}

// OpenCheckpoint checks that msg is a checkpoint of the log origin signed
// by v, and returns its body. Its errors are *capability.Error with
// [capability.ReasonAuditCheckpointInvalid].
func OpenCheckpoint(msg []byte, v note.Verifier, origin string) (Checkpoint, error) {
	if len(msg) > MaxSignedCheckpoint {
		return Checkpoint{}, invalid(fmt.Sprintf("%d bytes, more than %d", len(msg), MaxSignedCheckpoint), nil)
	}
	n, err := note.Open(msg, note.VerifierList(v))
	if err != nil {
		var unknown *note.UnverifiedNoteError
		var bad *note.InvalidSignatureError
		switch {
		case errors.As(err, &unknown):
			return Checkpoint{}, invalid("not signed by this state directory's audit key "+v.Name(), err)
		case errors.As(err, &bad):
			return Checkpoint{}, invalid("bad signature by "+v.Name(), err)
		}
		return Checkpoint{}, invalid("not a signed note", err)
	}
	c, err := ParseCheckpoint(n.Text)
	if err != nil {
		return c, invalid(err.Error(), err)
	}
	if c.Origin != origin {
		return c, invalid(fmt.Sprintf("checkpoint of log %q, want %q", c.Origin, origin), nil)
	}
	return c, nil
}

func invalid(detail string, cause error) *capability.Error {
	return &capability.Error{
		Decision: capability.Decision{Mode: capability.Deny, Reason: capability.ReasonAuditCheckpointInvalid},
		Detail:   detail, Err: cause,
	}
}

// KeyOrigin returns the origin (and note key name) of the log whose
// checkpoints pub verifies: every state directory has its own key, so the
// key names the log.
func KeyOrigin(pub ed25519.PublicKey) string {
	sum := sha256.Sum256(pub)
	return "github.com/norma-run/norma/audit/" + hex.EncodeToString(sum[:8])
}

// NewNoteVerifier returns the note verifier of the ed25519 key pub under
// name (see [KeyOrigin]).
func NewNoteVerifier(name string, pub ed25519.PublicKey) (note.Verifier, error) {
	vkey, err := note.NewEd25519VerifierKey(name, pub)
	if err != nil {
		return nil, fmt.Errorf("audit: checkpoint key: %w", err)
	}
	return note.NewVerifier(vkey)
}

// NewNoteSigner returns a note signer for the ed25519 key priv under
// name. (note.NewSigner takes its own key encoding; the key store keeps
// PKCS #8 files.)
func NewNoteSigner(name string, priv ed25519.PrivateKey) (note.Signer, error) {
	v, err := NewNoteVerifier(name, priv.Public().(ed25519.PublicKey))
	if err != nil {
		return nil, err
	}
	return &edSigner{name: name, hash: v.KeyHash(), priv: priv}, nil
}

type edSigner struct {
	name string
	hash uint32
	priv ed25519.PrivateKey
}

func (s *edSigner) Name() string                    { return s.name }
func (s *edSigner) KeyHash() uint32                 { return s.hash }
func (s *edSigner) Sign(msg []byte) ([]byte, error) { return ed25519.Sign(s.priv, msg), nil }

// StoredCheckpoint is a signed checkpoint as a [Backend] keeps it.
type StoredCheckpoint struct {
	// Origin is the log name it was stored under (the signer's, see
	// [KeyOrigin]); verification reads the name from the signed note
	// itself, never from here.
	Origin string
	Size   int64 // the size it was stored under
	TimeNS int64
	Note   []byte
}

// Checkpointer writes signed checkpoints of the chain head.
type Checkpointer struct {
	Origin string
	Signer note.Signer
	// Verifier checks the newest stored checkpoint before a new one is
	// signed on top of it.
	Verifier note.Verifier
	// RequireStored refuses to sign when no checkpoint is stored: set it
	// when the key is older than this process, since a checkpoint was then
	// stored when the key was made, and none left means they were deleted.
	RequireStored bool
	// Publish, when set, receives every checkpoint that is stored, while
	// the backend's write lock is held (so copies kept outside the
	// database are written in order). An error aborts the store.
	Publish func(signed []byte) error
	// Now is the clock of the stored time; nil means time.Now.
	Now func() time.Time
}

// Checkpoint signs the current head of b and returns the signed
// checkpoint. It stores it when it covers events that no stored
// checkpoint covers, or when none is stored yet; stored says whether it
// did.
//
// It signs only a head that extends what is already signed: the newest
// stored checkpoint must verify, the log must still hold its events with
// its chain hash, and the links after it must verify (the whole chain
// when no checkpoint is stored yet). Otherwise it refuses with the reason
// [VerifyWith] would give, so a truncated or rewritten log is never
// signed over.
func (c *Checkpointer) Checkpoint(ctx context.Context, b Backend) (signed []byte, stored bool, err error) {
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	err = b.AddAuditCheckpoint(ctx, c.Origin, func(h Head, latest *StoredCheckpoint) (*StoredCheckpoint, error) {
		if err := c.extends(ctx, b, h, latest); err != nil {
			return nil, err
		}
		s, err := SignCheckpoint(Checkpoint{Origin: c.Origin, Size: h.Seq, Hash: h.Hash}, c.Signer)
		if err != nil {
			return nil, err
		}
		signed = s
		if latest != nil && h.Seq <= latest.Size {
			return nil, nil
		}
		if c.Publish != nil {
			if err := c.Publish(s); err != nil {
				return nil, err
			}
		}
		stored = true
		return &StoredCheckpoint{Origin: c.Origin, Size: h.Seq, TimeNS: now().UnixNano(), Note: s}, nil
	})
	if err != nil {
		return nil, false, fmt.Errorf("audit: checkpoint: %w", err)
	}
	return signed, stored, nil
}

// extends checks that head h extends the newest stored checkpoint.
func (c *Checkpointer) extends(ctx context.Context, b Backend, h Head, latest *StoredCheckpoint) error {
	var from int64 // events 1..from are vouched for by latest
	if latest != nil {
		cp, err := OpenCheckpoint(latest.Note, c.Verifier, c.Origin)
		if err != nil {
			return err
		}
		switch {
		case cp.Size != latest.Size:
			return invalid(fmt.Sprintf("stored as covering %d events but signed for %d", latest.Size, cp.Size), nil)
		case h.Seq < cp.Size:
			return refusal(capability.ReasonAuditEventsMissing,
				fmt.Sprintf("events %d..%d are missing: the newest checkpoint covers %d events, the log has %d", h.Seq+1, cp.Size, cp.Size, h.Seq))
		}
		got, err := hashAt(ctx, b, cp.Size)
		if err != nil {
			return err
		}
		if got != cp.Hash {
			return refusal(capability.ReasonAuditCheckpointMismatch,
				fmt.Sprintf("the chain hash at event %d differs from the newest checkpoint's", cp.Size))
		}
		from = cp.Size
	}
	if h.Seq > from {
		if r := verifyRange(ctx, b, from+1, h.Seq); r.err != nil {
			return r.err
		} else if r.broken != 0 {
			return refusal(capability.ReasonAuditChainBroken, fmt.Sprintf("event %d: %s", r.broken, r.problem))
		}
	}
	if latest == nil && c.RequireStored {
		return refusal(capability.ReasonAuditCheckpointMissing, "the audit key exists but no checkpoint is stored: checkpoints were deleted")
	}
	return nil
}

func refusal(r capability.Reason, detail string) error {
	return &capability.Error{
		Decision: capability.Decision{Mode: capability.Deny, Reason: r},
		Detail:   detail + "; run `norma audit verify`",
	}
}

// VerifyOptions says which checkpoints [VerifyWith] checks besides the
// chain.
//
// Several state directories may share one store (a SQLite file, a
// PostgreSQL database); each signs checkpoints of the one chain with its
// own key, under its own origin. A verifier checks the checkpoints of the
// keys it trusts: its own (Origin, Verifier) and Trusted. A checkpoint
// that claims a trusted origin must be signed by that origin's key, or it
// is invalid. One of another origin, signed by a key the verifier does
// not hold, cannot be checked: it is counted in [VerifyResult.Unchecked]
// by origin, never trusted (a key found in the database proves nothing,
// whoever can write the database can write the key too).
type VerifyOptions struct {
	// Origin and Verifier are this state directory's key; a nil Verifier
	// checks the chain only.
	Origin   string
	Verifier note.Verifier
	// Trusted are other keys whose checkpoints are checked too (their
	// names are their origins, see [KeyOrigin]).
	Trusted []note.Verifier
	// External are signed checkpoints kept outside the database: an
	// exported file, the state directory's copy of the newest one.
	External []ExternalCheckpoint
	// RequireCheckpoint fails the log when the backend stores no
	// checkpoint of Origin (the key exists, so one was written).
	RequireCheckpoint bool
}

// Unchecked counts the stored checkpoints of one origin that a verifier
// could not check: it does not hold that origin's key.
type Unchecked struct {
	Origin      string `json:"origin"`
	Checkpoints int    `json:"checkpoints"`
	// Largest is the most events one of them claims to cover.
	Largest int64 `json:"largest"`
}

// ExternalCheckpoint is a signed checkpoint and where it came from (for
// messages).
type ExternalCheckpoint struct {
	Source string
	Note   []byte
}

// VerifyWith is [VerifyBackend] that also checks checkpoints: every one
// must be signed by opts.Verifier for opts.Origin, the log must hold at
// least its Size events, and the chain hash at Size must be its Hash.
// The result names the first failure in this order: missing events (the
// range), a rewritten chain, an invalid checkpoint, no stored checkpoint.
//
// The checkpoints are read before the chain: a checkpoint is stored only
// after the events it covers, so one that a process stores while Verify
// runs is not mistaken for a truncation (opts.External must likewise be
// read before the call).
func VerifyWith(ctx context.Context, b Backend, opts *VerifyOptions) (VerifyResult, error) {
	if opts == nil || opts.Verifier == nil {
		return VerifyBackend(ctx, b)
	}
	stored, err := b.AuditCheckpoints(ctx)
	if err != nil {
		return VerifyResult{}, fmt.Errorf("audit: verify: %w", err)
	}
	res, err := VerifyBackend(ctx, b)
	if err != nil || !res.OK() {
		return res, err
	}
	f := checkpointFindings{seen: map[string]bool{}, keys: map[string]note.Verifier{opts.Origin: opts.Verifier}, own: opts.Origin}
	for _, v := range opts.Trusted {
		if _, dup := f.keys[v.Name()]; !dup {
			f.keys[v.Name()] = v
		}
	}
	for _, s := range stored {
		if err := f.check(ctx, b, &res, opts, "stored checkpoint", s.Note, s.Size); err != nil {
			return res, err
		}
	}
	for _, x := range opts.External {
		if err := f.check(ctx, b, &res, opts, x.Source, x.Note, -1); err != nil {
			return res, err
		}
	}
	switch {
	case f.missing != nil:
		m := f.missing
		res.FirstBroken, res.Reason = res.Events+1, capability.ReasonAuditEventsMissing
		res.Problem = fmt.Sprintf("events %d..%d are missing: the %s covers %d events, the log has %d",
			res.Events+1, m.Size, m.source, m.Size, res.Events)
	case f.mismatch != nil:
		m := f.mismatch
		res.FirstBroken, res.Reason = m.Size, capability.ReasonAuditCheckpointMismatch
		res.Problem = fmt.Sprintf("the chain hash at event %d differs from the %s: an event in %d..%d was rewritten",
			m.Size, m.source, f.matchedBelow(m.Size)+1, m.Size)
	case f.invalid != nil:
		res.Reason = capability.ReasonAuditCheckpointInvalid
		res.Problem = f.invalidSource + ": " + f.invalid.Detail
	case opts.RequireCheckpoint && f.ownStored == 0:
		res.Reason = capability.ReasonAuditCheckpointMissing
		res.Problem = "the audit key exists but no checkpoint of it is stored: checkpoints were deleted"
	}
	if res.OK() {
		res.Checkpoints = f.good
		res.CheckpointSize = f.largest
		res.Unchecked = f.uncheckedList()
	}
	return res, nil
}

type sourced struct {
	Checkpoint
	source string
}

type checkpointFindings struct {
	keys          map[string]note.Verifier // trusted, by origin
	own           string
	ownStored     int // stored checkpoints of own that verified
	unchecked     map[string]*Unchecked
	seen          map[string]bool // signed checkpoints already checked
	good          int
	largest       int64
	matched       []int64 // sizes that verified
	missing       *sourced
	mismatch      *sourced
	invalid       *capability.Error
	invalidSource string
}

// check verifies one signed checkpoint against a chain that verified
// (res). storedSize is the size it was stored under, or -1.
func (f *checkpointFindings) check(ctx context.Context, b Backend, res *VerifyResult, opts *VerifyOptions, source string, signed []byte, storedSize int64) error {
	if storedSize < 0 && f.seen[string(signed)] {
		return nil // a copy of one already checked
	}
	f.seen[string(signed)] = true
	c, err := openTrusted(signed, f.keys, opts.Origin)
	if u, ok := errors.AsType[*untrusted](err); ok {
		if storedSize < 0 { // a file the user asked to check: it must verify
			err = invalid(fmt.Sprintf("not signed by this state directory's audit key %s nor a trusted one: a checkpoint of log %q", opts.Verifier.Name(), u.origin), nil)
		} else {
			f.addUnchecked(u.origin, c.Size)
			return nil
		}
	}
	if err == nil && storedSize >= 0 && c.Size != storedSize {
		err = invalid(fmt.Sprintf("stored as covering %d events but signed for %d", storedSize, c.Size), nil)
	}
	if err != nil {
		if f.invalid == nil {
			ce, ok := errors.AsType[*capability.Error](err)
			if !ok {
				ce = invalid(err.Error(), err)
			}
			f.invalid, f.invalidSource = ce, source
		}
		return nil
	}
	s := &sourced{c, source}
	if c.Size > res.Events {
		if f.missing == nil || c.Size > f.missing.Size {
			f.missing = s
		}
		return nil
	}
	h, err := hashAt(ctx, b, c.Size)
	if err != nil {
		return fmt.Errorf("audit: verify: %w", err)
	}
	if h != c.Hash {
		if f.mismatch == nil || c.Size < f.mismatch.Size {
			f.mismatch = s
		}
		return nil
	}
	f.good++
	if storedSize >= 0 && c.Origin == f.own {
		f.ownStored++
	}
	f.largest = max(f.largest, c.Size)
	f.matched = append(f.matched, c.Size)
	return nil
}

func (f *checkpointFindings) addUnchecked(origin string, size int64) {
	if f.unchecked == nil {
		f.unchecked = map[string]*Unchecked{}
	}
	u := f.unchecked[origin]
	if u == nil {
		u = &Unchecked{Origin: origin}
		f.unchecked[origin] = u
	}
	u.Checkpoints++
	u.Largest = max(u.Largest, size)
}

// uncheckedList returns the unchecked counts by origin, sorted.
func (f *checkpointFindings) uncheckedList() []Unchecked {
	var out []Unchecked
	for _, u := range f.unchecked {
		out = append(out, *u)
	}
	slices.SortFunc(out, func(a, b Unchecked) int { return strings.Compare(a.Origin, b.Origin) })
	return out
}

// untrusted: a well-formed checkpoint of a log whose key the verifier
// does not hold.
type untrusted struct{ origin string }

func (u *untrusted) Error() string { return "checkpoint of untrusted log " + u.origin }

// openTrusted opens checkpoint msg with the trusted keys (by origin).
// A checkpoint of a trusted origin must verify with that origin's key
// (else: the errors of [OpenCheckpoint], own naming the state directory's
// own origin). A checkpoint of any other origin is returned (unverified,
// for its claimed size only) with an *untrusted error.
func openTrusted(msg []byte, keys map[string]note.Verifier, own string) (Checkpoint, error) {
	if len(msg) > MaxSignedCheckpoint {
		return OpenCheckpoint(msg, keys[own], own)
	}
	// Who signed is not the question yet: which log it claims to be is.
	_, err := note.Open(msg, note.VerifierList())
	var unverified *note.UnverifiedNoteError
	if !errors.As(err, &unverified) {
		return OpenCheckpoint(msg, keys[own], own) // not a signed note: its refusal
	}
	claimed, err := ParseCheckpoint(unverified.Note.Text)
	if err != nil {
		return OpenCheckpoint(msg, keys[own], own)
	}
	v, ok := keys[claimed.Origin]
	if !ok {
		return claimed, &untrusted{claimed.Origin}
	}
	return OpenCheckpoint(msg, v, claimed.Origin)
}

// matchedBelow returns the largest size below n that a checkpoint
// verified, or 0.
func (f *checkpointFindings) matchedBelow(n int64) int64 {
	var best int64
	for _, s := range f.matched {
		if s < n {
			best = max(best, s)
		}
	}
	return best
}

// hashAt returns the stored chain hash of event seq (zero for 0).
func hashAt(ctx context.Context, b Backend, seq int64) ([HashSize]byte, error) {
	var h [HashSize]byte
	if seq == 0 {
		return h, nil
	}
	found := false
	err := b.ScanAudit(ctx, seq-1, seq, func(r Row) error {
		h, found = r.Hash, true
		return nil
	})
	if err == nil && !found {
		err = fmt.Errorf("event %d is not stored", seq)
	}
	return h, err
}
