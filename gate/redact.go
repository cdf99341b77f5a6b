package gate

import (
	"context"
	"io"
	"os"
	"strconv"
	"sync"

	"github.com/norma-run/norma/audit"
	"github.com/norma-run/norma/secret"
	"github.com/norma-run/norma/tool"
)

// Redaction happens here, once, for built-in tools and plugins alike: the
// result of every call is redacted at step 7 before it is capped, spilled,
// handed to hooks or returned (so the model, the run state, the spill
// files and the audit preview never see what was masked), and the output
// streams of every process a call runs or starts are redacted as they
// arrive, so that a secret split across two reads of a task's or a
// terminal's output (TaskOutput, PtyRead) or across the cut of a capped
// output is still caught.

// redaction counts what was masked in one call's output and writes the
// audit event that says so: one at step 7 for everything masked until
// then, one more per stream that masks something after the call ended (a
// task, a terminal).
type redaction struct {
	g         *Gate
	toolUseID string
	mu        sync.Mutex
	counts    secret.Counts
	streams   int // streams made for the call
	done      bool
	ev        *audit.Event // the event of the call, once done with streams
}

func (rd *redaction) add(name string) {
	rd.mu.Lock()
	defer rd.mu.Unlock()
	if rd.counts == nil {
		rd.counts = secret.Counts{}
	}
	rd.counts[name]++
}

// report writes the call's output_redacted event (step 7) when something
// was masked.
func (x *exec) reportRedaction(ctx context.Context, c secret.Counts) {
	rd := x.red
	if rd == nil {
		// The call could run no process: step 7's counts are all there is.
		if len(c) > 0 {
			x.g.recordRedaction(ctx, x.event(audit.TypeOutputRedacted), x.c.ID, c)
		}
		return
	}
	rd.mu.Lock()
	if len(c) == 0 && len(rd.counts) == 0 && rd.streams == 0 {
		rd.done = true // the common case: nothing to say, now or later
		rd.mu.Unlock()
		return
	}
	for k, n := range c {
		if rd.counts == nil {
			rd.counts = secret.Counts{}
		}
		rd.counts[k] += n
	}
	counts := rd.counts
	rd.counts, rd.done = nil, true
	ev := x.event(audit.TypeOutputRedacted)
	rd.ev = &ev
	rd.mu.Unlock()
	x.g.recordRedaction(ctx, ev, x.c.ID, counts)
}

// streamClosed is called when a stream of the call ends: what it masked
// after step 7 gets an event of its own.
func (rd *redaction) streamClosed(counts secret.Counts) {
	rd.mu.Lock()
	if !rd.done {
		for k, n := range counts {
			if rd.counts == nil {
				rd.counts = secret.Counts{}
			}
			rd.counts[k] += n
		}
		rd.mu.Unlock()
		return
	}
	ev := rd.ev
	rd.mu.Unlock()
	if ev == nil {
		return // a stream made after the call ended: a handler that outlived its deadline
	}
	rd.g.recordRedaction(context.Background(), *ev, rd.toolUseID, counts)
}

// recordRedaction writes an output_redacted event: the call's identity and
// the number of matches per secret name or token kind, never a value.
func (g *Gate) recordRedaction(ctx context.Context, ev audit.Event, toolUseID string, c secret.Counts) {
	if len(c) == 0 {
		return
	}
	ev.Detail = map[string]string{"toolUseId": toolUseID}
	total := 0
	for k, n := range c {
		ev.Detail["redacted."+k] = strconv.Itoa(n)
		total += n
	}
	ev.Detail["redacted"] = strconv.Itoa(total)
	if err := g.sink.Record(context.WithoutCancel(ctx), ev); err != nil {
		g.log.Error("gate: audit refused output_redacted", "tool", ev.Tool, "err", err)
	}
}

// Stream returns a writer that redacts what the call's process writes to w
// before w sees it; its Close flushes what it held back and counts what
// it masked.
func (rd *redaction) Stream(w io.Writer) io.WriteCloser {
	rd.mu.Lock()
	rd.streams++
	rd.mu.Unlock()
	s := &redactStream{rd: rd, counts: secret.Counts{}}
	s.w = rd.g.red.CountingWriter(w, func(name string) { s.counts[name]++ })
	return s
}

// redactStream serializes writes (stdout and stderr may share one) and
// reports at Close.
type redactStream struct {
	rd     *redaction
	mu     sync.Mutex
	w      io.WriteCloser
	counts secret.Counts
	closed bool
}

func (s *redactStream) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

func (s *redactStream) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	err := s.w.Close()
	s.rd.streamClosed(s.counts)
	return err
}

// wrapOutput puts a redacting stream in front of cmd's output writers (one
// for both when they are the same). A terminal or another file is left
// alone: the process writes to it directly, and the tool that reads the
// other side redacts through Env.Redact. closeAll flushes the streams.
func (rd *redaction) wrapOutput(cmd tool.Command) (tool.Command, func()) {
	var streams []io.WriteCloser
	wrap := func(w io.Writer) io.Writer {
		if w == nil {
			return nil
		}
		if _, ok := w.(*os.File); ok {
			return w
		}
		s := rd.Stream(w)
		streams = append(streams, s)
		return s
	}
	same := cmd.Stdout != nil && cmd.Stdout == cmd.Stderr
	cmd.Stdout = wrap(cmd.Stdout)
	if same {
		cmd.Stderr = cmd.Stdout
	} else {
		cmd.Stderr = wrap(cmd.Stderr)
	}
	return cmd, func() {
		for _, s := range streams {
			s.Close()
		}
	}
}

// collected redacts output a runner collected for the tool (no writer).
func (rd *redaction) collected(b []byte) []byte {
	if len(b) == 0 {
		return b
	}
	out, c := rd.g.red.RedactCount(string(b))
	if len(c) == 0 {
		return b
	}
	for k, n := range c {
		for range n {
			rd.add(k)
		}
	}
	return []byte(out)
}

// redactedProcess flushes the output streams of a started process when it
// has exited, before Wait returns.
type redactedProcess struct {
	tool.Process
	flush func()
}

func (p *redactedProcess) Wait() (tool.CommandResult, error) {
	res, err := p.Process.Wait()
	p.flush()
	return res, err
}
