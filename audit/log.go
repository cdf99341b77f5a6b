package audit

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/norma-run/norma/capability"
)

// ErrClosed is returned by [Log.Record] after [Log.Close].
var ErrClosed = errors.New("audit: log closed")

// Sink receives audit events. Record returns only after the event is
// durable, or an error; callers that guard an action with an event must not
// proceed on error.
type Sink interface {
	Record(ctx context.Context, e Event) error
}

// Observer is told of each event once it is durable. It must be safe for
// concurrent use and must not block.
type Observer interface {
	Observe(Event)
}

// Options configures a [Log]. A nil *Options means all defaults.
type Options struct {
	// Redactor is applied to every string field before encoding. Nil
	// means strings are only bounded to MaxFieldLen.
	Redactor Redactor
	// Metrics, when set, observes every event after it is durable
	// (package audit/metrics counts them for Prometheus).
	Metrics Observer
	// MaxBatch caps the events in one transaction; zero means 1024.
	MaxBatch int
	// Now is the clock for events without a time; nil means time.Now.
	Now func() time.Time
	// Checkpointer, when set, signs a checkpoint of the chain head when
	// the Log is closed: the end of every run and of every command that
	// appended events.
	Checkpointer *Checkpointer
}

// Record is one event read back from the log.
type Record struct {
	Seq   int64  `json:"seq"`
	Hash  string `json:"hash"`
	Event Event  `json:"event"`
}

// VerifyResult is the outcome of [Log.Verify].
type VerifyResult struct {
	// Events is the number of events checked.
	Events int64 `json:"events"`
	// FirstBroken is the sequence number of the first event whose link
	// does not verify, or 0 when the whole chain verifies.
	FirstBroken int64 `json:"firstBroken"`
	// Reason is the stable code of the failure, "" when the log verified.
	Reason capability.Reason `json:"reason,omitempty"`
	// Problem says what is wrong (with FirstBroken, when set).
	Problem string `json:"problem,omitempty"`
	// Head is the hex hash of the last event that verified.
	Head string `json:"head"`
	// Checkpoints is the number of signed checkpoints that verified
	// ([VerifyWith]), CheckpointSize the most events one of them covers.
	Checkpoints    int   `json:"checkpoints"`
	CheckpointSize int64 `json:"checkpointSize"`
	// Unchecked are the stored checkpoints of other state directories
	// sharing the store, whose keys the verifier does not trust, by
	// origin ([VerifyOptions]).
	Unchecked []Unchecked `json:"unchecked,omitempty"`
}

// OK reports whether the log verified.
func (v VerifyResult) OK() bool { return v.FirstBroken == 0 && v.Reason == "" }

// Log is the hash-chained audit log over a [Backend]. It is safe for
// concurrent use; see the package documentation for group commit.
type Log struct {
	b        Backend
	redactor Redactor
	metrics  Observer
	maxBatch int
	now      func() time.Time
	cp       *Checkpointer
	closeErr error

	arriving atomic.Int64
	events   atomic.Int64
	batches  atomic.Int64

	reqs    chan *pending
	closing chan struct{}
	done    chan struct{}
	once    sync.Once
}

type pending struct {
	ctx context.Context // the caller's, for its values; never canceled
	row Row
	err chan error
}

// Open returns a Log appending to b. Close it to stop its committer.
func Open(b Backend, opts *Options) (*Log, error) {
	if b == nil {
		return nil, errors.New("audit: nil backend")
	}
	if opts == nil {
		opts = &Options{}
	}
	if opts.MaxBatch < 0 {
		return nil, fmt.Errorf("audit: MaxBatch %d < 0", opts.MaxBatch)
	}
	l := &Log{
		b:        b,
		redactor: opts.Redactor,
		metrics:  opts.Metrics,
		maxBatch: opts.MaxBatch,
		now:      opts.Now,
		cp:       opts.Checkpointer,
		reqs:     make(chan *pending),
		closing:  make(chan struct{}),
		done:     make(chan struct{}),
	}
	if l.maxBatch == 0 {
		l.maxBatch = 1024
	}
	if l.now == nil {
		l.now = time.Now
	}
	go l.commitLoop()
	return l, nil
}

// NewMemory returns a hash-chained Log kept in memory, for tests.
func NewMemory() *Log {
	l, _ := Open(NewMemoryBackend(), nil)
	return l
}

// Close stops the committer after the batch in flight and, with a
// Checkpointer, signs a checkpoint of the head. Events recorded after
// Close fail with [ErrClosed]. Close does not close the backend.
func (l *Log) Close() error {
	l.once.Do(func() {
		close(l.closing)
		<-l.done
		if l.cp != nil {
			_, _, l.closeErr = l.cp.Checkpoint(context.Background(), l.b)
		}
	})
	return l.closeErr
}

// Record redacts, encodes and appends e, and returns after the transaction
// holding it is durable. If ctx ends first Record returns ctx.Err(); the
// event may or may not have been written. Unknown event types are refused.
func (l *Log) Record(ctx context.Context, e Event) error {
	// arriving counts writers that will hand an event to the committer
	// soon; the committer waits a little for them (see commitLoop).
	l.arriving.Add(1)
	sent := false
	defer func() {
		if !sent {
			l.arriving.Add(-1)
		}
	}()
	if !KnownType(e.Type) {
		return fmt.Errorf("audit: unknown event type %q", e.Type)
	}
	if e.Time.IsZero() {
		e.Time = l.now()
	}
	e = sanitize(e, l.redactor)
	body, err := e.Canonical()
	if err != nil {
		return err
	}
	detached := ctx
	if ctx.Done() != nil { // a context that cannot be canceled is kept as is
		detached = context.WithoutCancel(ctx)
	}
	p := &pending{
		ctx: detached,
		row: Row{
			TimeNS: e.Time.UnixNano(), Type: e.Type, RunID: e.RunID,
			Plugin: e.Plugin, Tool: e.Tool, Decision: e.Decision, Body: body,
		},
		err: make(chan error, 1),
	}
	select {
	case l.reqs <- p:
		sent = true
	case <-l.closing:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-p.err:
		if err == nil && l.metrics != nil {
			l.metrics.Observe(e)
		}
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// lingerMax bounds how long a batch waits for writers that are still
// encoding their event; a commit (an fsync) costs far more.
const lingerMax = 500 * time.Microsecond

// commitLoop is the single writer. It takes the first waiting event, every
// other event already waiting, then waits up to lingerMax for the writers
// that are still encoding and for as many writers as the previous batch
// had (up to maxBatch), and commits them all in one transaction.
func (l *Log) commitLoop() {
	defer close(l.done)
	batch := make([]*pending, 0, l.maxBatch)
	linger := time.NewTimer(time.Hour)
	linger.Stop()
	last := 0
	receive := func(p *pending) {
		l.arriving.Add(-1)
		batch = append(batch, p)
	}
	for {
		batch = batch[:0]
		select {
		case p := <-l.reqs:
			receive(p)
		case <-l.closing:
			return
		}
	drain:
		for len(batch) < l.maxBatch {
			select {
			case p := <-l.reqs:
				receive(p)
			default:
				break drain
			}
		}
		// Wait for the writers that are encoding, and for as many as the
		// last batch had: those are likely on their way back.
		want := func() int { return min(l.maxBatch, max(last, len(batch)+int(l.arriving.Load()))) }
		if len(batch) < want() {
			linger.Reset(lingerMax)
		wait:
			for len(batch) < want() {
				select {
				case p := <-l.reqs:
					receive(p)
				case <-linger.C:
					break wait
				}
			}
			linger.Stop()
		}
		last = len(batch)
		err := l.commit(batch)
		if err == nil {
			l.batches.Add(1)
			l.events.Add(int64(len(batch)))
		}
		for _, p := range batch {
			p.err <- err
		}
	}
}

func (l *Log) commit(batch []*pending) error {
	// A caller that gives up does not abort the others' transaction.
	ctx := batch[0].ctx
	rows := make([]Row, len(batch))
	err := l.b.AppendAudit(ctx, func(h Head) ([]Row, error) {
		prev := h.Hash
		for i, p := range batch {
			r := p.row
			r.Seq = h.Seq + int64(i) + 1
			r.Hash = Link(prev, r.Body)
			prev = r.Hash
			rows[i] = r
		}
		return rows, nil
	})
	if err != nil {
		return fmt.Errorf("audit: append: %w", err)
	}
	return nil
}

// Stats counts what a Log committed since Open.
type Stats struct {
	Events  int64 // events committed
	Batches int64 // transactions that committed them
}

// Stats returns the group-commit counters; Events/Batches is the mean
// batch size.
func (l *Log) Stats() Stats {
	return Stats{Events: l.events.Load(), Batches: l.batches.Load()}
}

// Link returns sha256(prev || body), one link of the chain.
func Link(prev [HashSize]byte, body []byte) [HashSize]byte {
	h := sha256.New()
	h.Write(prev[:])
	h.Write(body)
	var out [HashSize]byte
	h.Sum(out[:0])
	return out
}

// Verify recomputes the chain from the first event. It returns an error
// only when the backend cannot be read; a broken chain is reported in the
// result.
func (l *Log) Verify(ctx context.Context) (VerifyResult, error) {
	return VerifyBackend(ctx, l.b)
}

// errBroken stops a scan at the first broken link.
var errBroken = errors.New("audit: broken link")

// VerifyBackend is [Log.Verify] without a Log (for read-only tools).
//
// Every link is checked against the stored hash of its predecessor, so the
// chain splits into ranges that are verified in parallel; the result is the
// same as a sequential walk. Events appended while Verify runs are not
// checked.
func VerifyBackend(ctx context.Context, b Backend) (VerifyResult, error) {
	return verify(ctx, b, minParallelVerify)
}

func verify(ctx context.Context, b Backend, minParallel int64) (VerifyResult, error) {
	last, err := b.QueryAudit(ctx, Filter{Newest: true, Limit: 1})
	if err != nil {
		return VerifyResult{}, fmt.Errorf("audit: verify: %w", err)
	}
	var zero [HashSize]byte
	if len(last) == 0 {
		return VerifyResult{Head: hex.EncodeToString(zero[:])}, nil
	}
	n := last[0].Seq
	parts := 1
	if n >= minParallel {
		parts = min(runtime.GOMAXPROCS(0), maxVerifyParts)
	}
	res := make([]rangeResult, parts)
	var wg sync.WaitGroup
	for i := range parts {
		lo, hi := n*int64(i)/int64(parts)+1, n*int64(i+1)/int64(parts)
		wg.Go(func() { res[i] = verifyRange(ctx, b, lo, hi) })
	}
	wg.Wait()
	var out VerifyResult
	head := zero
	for _, r := range res {
		if r.err != nil {
			return out, fmt.Errorf("audit: verify: %w", r.err)
		}
		out.Events += r.events
		if r.events > 0 {
			head = r.head
		}
		if r.broken != 0 {
			out.FirstBroken, out.Problem = r.broken, r.problem
			out.Reason = capability.ReasonAuditChainBroken
			break
		}
	}
	out.Head = hex.EncodeToString(head[:])
	return out, nil
}

const (
	minParallelVerify = 100_000
	maxVerifyParts    = 4
)

type rangeResult struct {
	events  int64
	head    [HashSize]byte
	broken  int64
	problem string
	err     error
}

// verifyRange checks the links of events lo..hi. For lo > 1 it reads event
// lo-1 first, for its stored hash only (its own link is the previous
// range's to check).
func verifyRange(ctx context.Context, b Backend, lo, hi int64) rangeResult {
	var r rangeResult
	var prev [HashSize]byte
	expect := lo
	anchored := lo == 1
	var buf []byte // prev || body, reused: Sum256 does not allocate
	err := b.ScanAudit(ctx, max(lo-2, 0), hi, func(row Row) error {
		if !anchored {
			anchored = true
			if row.Seq == lo-1 {
				prev = row.Hash
				return nil
			}
			r.broken, r.problem = lo-1, fmt.Sprintf("sequence gap: event %d is missing", lo-1)
			return errBroken
		}
		if row.Seq != expect {
			r.broken, r.problem = expect, fmt.Sprintf("sequence gap: want %d, found %d", expect, row.Seq)
			return errBroken
		}
		buf = append(append(buf[:0], prev[:]...), row.Body...)
		if sha256.Sum256(buf) != row.Hash {
			r.broken, r.problem = row.Seq, "hash does not match sha256(previous hash || event)"
			return errBroken
		}
		r.events++
		prev = row.Hash
		r.head = row.Hash
		expect++
		return nil
	})
	if err != nil && !errors.Is(err, errBroken) {
		r.err = err
		return r
	}
	if r.broken == 0 && expect != hi+1 {
		r.broken, r.problem = expect, fmt.Sprintf("sequence gap: event %d is missing", expect)
	}
	return r
}

// Query returns the events that match f, in sequence order. Each event is
// decoded from the hashed body, and rows whose indexed columns disagree
// with their body are dropped, so a query never shows what the chain does
// not vouch for (run Verify to learn whether it does).
func (l *Log) Query(ctx context.Context, f Filter) ([]Record, error) {
	return QueryBackend(ctx, l.b, f)
}

// QueryBackend is [Log.Query] without a Log.
func QueryBackend(ctx context.Context, b Backend, f Filter) ([]Record, error) {
	if f.Limit <= 0 {
		f.Limit = 1000
	}
	rows, err := b.QueryAudit(ctx, f)
	if err != nil {
		return nil, fmt.Errorf("audit: query: %w", err)
	}
	out := make([]Record, 0, len(rows))
	for _, r := range rows {
		var e Event
		dec := json.NewDecoder(bytes.NewReader(r.Body))
		if err := dec.Decode(&e); err != nil {
			return nil, fmt.Errorf("audit: decode event %d: %w", r.Seq, err)
		}
		if !matches(e, f) {
			continue
		}
		out = append(out, Record{Seq: r.Seq, Hash: hex.EncodeToString(r.Hash[:]), Event: e})
	}
	return out, nil
}

func matches(e Event, f Filter) bool {
	return (f.Plugin == "" || e.Plugin == f.Plugin) &&
		(f.Tool == "" || e.Tool == f.Tool) &&
		(f.Decision == "" || e.Decision == f.Decision) &&
		(f.Type == "" || e.Type == f.Type) &&
		(f.RunID == "" || e.RunID == f.RunID) &&
		(f.Since.IsZero() || !e.Time.Before(f.Since))
}

// Tail returns the newest n events (n <= 0 means 20), oldest first.
func (l *Log) Tail(ctx context.Context, n int) ([]Record, error) {
	if n <= 0 {
		n = 20
	}
	return l.Query(ctx, Filter{Limit: n, Newest: true})
}

var _ Sink = (*Log)(nil)
