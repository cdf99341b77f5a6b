package secret

import (
	"bytes"
	"encoding/base64"
	"io"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
)

// Redactor rewrites output so that no live secret value (nor a placeholder
// standing in for one) survives. It knows each value in its raw,
// URL-query-escaped and base64 (standard and URL alphabet) forms; matches
// are leftmost-longest and never overlap, and become "[REDACTED:NAME]".
//
// A Redactor is safe for concurrent use; values and placeholders may be
// added while streams are running (a stream uses the current set on every
// chunk). The zero Redactor is ready to use and knows nothing.
//
// What it does not catch: a value transformed otherwise (compressed,
// encrypted, split, base64 at an offset that is not a multiple of 3 in a
// longer encoded text). It implements audit.Redactor.
type Redactor struct {
	mu   sync.Mutex // serializes Add*
	snap atomic.Pointer[snapshot]
}

type pattern struct {
	b      []byte
	marker []byte
	value  bool // a value form (masked by MaskReader), not a placeholder
}

// snapshot is an immutable pattern set.
type snapshot struct {
	all    []pattern
	values []pattern
	maxAll int
	maxVal int
}

// NewRedactor returns an empty Redactor.
func NewRedactor() *Redactor { return &Redactor{} }

// AddValue registers a live secret value. It refuses (SECRET_INVALID) a
// value shorter than MinValueLen, which could not be redacted without
// mangling unrelated text.
func (r *Redactor) AddValue(name string, v Value) error {
	if err := CheckValue(name, v); err != nil {
		return err
	}
	raw := v.Reveal()
	forms := [][]byte{raw}
	if q := url.QueryEscape(string(raw)); q != string(raw) {
		forms = append(forms, []byte(q))
	}
	forms = append(forms,
		[]byte(base64.StdEncoding.EncodeToString(raw)),
		[]byte(base64.RawURLEncoding.EncodeToString(raw)))
	marker := []byte("[REDACTED:" + name + "]")
	ps := make([]pattern, 0, len(forms))
	for _, f := range forms {
		ps = append(ps, pattern{b: f, marker: marker, value: true})
	}
	r.add(ps)
	return nil
}

// AddPlaceholder registers a placeholder (and its token alone).
func (r *Redactor) AddPlaceholder(p Placeholder) {
	if !p.Valid() {
		return
	}
	marker := []byte("[REDACTED:" + p.name + "]")
	r.add([]pattern{{b: []byte(p.String()), marker: marker}, {b: []byte(p.token), marker: marker}})
}

func (r *Redactor) add(ps []pattern) {
	r.mu.Lock()
	defer r.mu.Unlock()
	old := r.snap.Load()
	n := &snapshot{}
	if old != nil {
		n.all = slices.Clone(old.all)
	}
	for _, p := range ps {
		if !slices.ContainsFunc(n.all, func(q pattern) bool { return bytes.Equal(q.b, p.b) }) {
			n.all = append(n.all, p)
		}
	}
	for _, p := range n.all {
		n.maxAll = max(n.maxAll, len(p.b))
		if p.value {
			n.values = append(n.values, p)
			n.maxVal = max(n.maxVal, len(p.b))
		}
	}
	r.snap.Store(n)
}

func (r *Redactor) patterns(values bool) ([]pattern, int) {
	if r == nil {
		return nil, 0
	}
	s := r.snap.Load()
	if s == nil {
		return nil, 0
	}
	if values {
		return s.values, s.maxVal
	}
	return s.all, s.maxAll
}

// Redact returns s with every known value and placeholder replaced.
func (r *Redactor) Redact(s string) string {
	ps, _ := r.patterns(false)
	if len(ps) == 0 {
		return s
	}
	if _, p := find(ps, []byte(s)); p == nil {
		return s
	}
	out, _ := process(nil, []byte(s), ps, 0, true, false)
	return string(out)
}

// RedactBytes returns b with every known value and placeholder replaced.
// It returns b itself when nothing matched.
func (r *Redactor) RedactBytes(b []byte) []byte {
	ps, _ := r.patterns(false)
	if len(ps) == 0 {
		return b
	}
	if _, p := find(ps, b); p == nil {
		return b
	}
	out, _ := process(nil, b, ps, 0, true, false)
	return out
}

// find returns the leftmost match in b, the longest at that position.
func find(ps []pattern, b []byte) (int, *pattern) {
	best, bp := -1, (*pattern)(nil)
	for i := range ps {
		p := &ps[i]
		lim := b
		if best >= 0 {
			// Only a match starting at or before best can win.
			lim = b[:min(len(b), best+len(p.b))]
		}
		j := bytes.Index(lim, p.b)
		if j < 0 {
			continue
		}
		if best < 0 || j < best || j == best && len(p.b) > len(bp.b) {
			best, bp = j, p
		}
	}
	return best, bp
}

// process appends to dst the redacted form of the decided prefix of buf
// and returns the number of bytes of buf consumed. Unless final, it holds
// back what a longer pattern could still match once more data arrives.
// mask replaces a match with as many '*' as it has bytes.
func process(dst, buf []byte, ps []pattern, maxLen int, final, mask bool) ([]byte, int) {
	i := 0
	for {
		j, p := find(ps, buf[i:])
		if p == nil {
			break
		}
		at := i + j
		if !final && at+maxLen > len(buf) {
			break // a longer or earlier match may still complete
		}
		dst = append(dst, buf[i:at]...)
		if mask {
			dst = append(dst, bytes.Repeat([]byte{'*'}, len(p.b))...)
		} else {
			dst = append(dst, p.marker...)
		}
		i = at + len(p.b)
	}
	if final {
		return append(dst, buf[i:]...), len(buf)
	}
	hold := max(i, len(buf)-(maxLen-1))
	if maxLen == 0 {
		hold = len(buf)
	}
	return append(dst, buf[i:hold]...), hold
}

// stream is the shared engine of Writer and MaskReader.
type stream struct {
	r    *Redactor
	mask bool
	buf  []byte
}

func (s *stream) step(dst, in []byte, final bool) []byte {
	s.buf = append(s.buf, in...)
	ps, maxLen := s.r.patterns(s.mask)
	if len(ps) == 0 {
		dst = append(dst, s.buf...)
		s.buf = s.buf[:0]
		return dst
	}
	dst, n := process(dst, s.buf, ps, maxLen, final, s.mask)
	s.buf = append(s.buf[:0], s.buf[n:]...)
	return dst
}

// Writer returns a WriteCloser that redacts everything written to it
// before passing it to w. It holds back at most the length of the longest
// pattern minus one byte, so a value split across writes is still caught;
// Close writes what is held back (it does not close w). Not safe for
// concurrent use.
func (r *Redactor) Writer(w io.Writer) io.WriteCloser {
	return &redactWriter{s: stream{r: r}, w: w}
}

type redactWriter struct {
	s      stream
	w      io.Writer
	out    []byte
	closed bool
}

func (rw *redactWriter) Write(p []byte) (int, error) {
	if rw.closed {
		return 0, io.ErrClosedPipe
	}
	rw.out = rw.s.step(rw.out[:0], p, false)
	if len(rw.out) > 0 {
		if _, err := rw.w.Write(rw.out); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

func (rw *redactWriter) Close() error {
	if rw.closed {
		return nil
	}
	rw.closed = true
	rw.out = rw.s.step(rw.out[:0], nil, true)
	if len(rw.out) > 0 {
		_, err := rw.w.Write(rw.out)
		return err
	}
	return nil
}

// MaskReader returns a reader that replaces every known secret value (not
// placeholders) in what it reads from src by as many '*' as the value form
// has bytes, so lengths (Content-Length, ranges) are kept. The broker puts
// it on every response body it relays. Not safe for concurrent use.
func (r *Redactor) MaskReader(src io.Reader) io.Reader {
	return &maskReader{s: stream{r: r, mask: true}, src: src}
}

type maskReader struct {
	s   stream
	src io.Reader
	out []byte
	off int
	err error
}

func (m *maskReader) Read(p []byte) (int, error) {
	for m.off == len(m.out) {
		if m.err != nil {
			return 0, m.err
		}
		if ps, _ := m.s.r.patterns(true); len(ps) == 0 && len(m.s.buf) == 0 {
			return m.src.Read(p) // nothing to mask: no copy
		}
		// Read into p, then process: step copies the input before p is
		// overwritten with output below.
		n, err := m.src.Read(p)
		m.out, m.off = m.s.step(m.out[:0], p[:n], err != nil), 0
		if err != nil {
			m.err = err
		}
	}
	n := copy(p, m.out[m.off:])
	m.off += n
	return n, nil
}
