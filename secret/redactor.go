package secret

import (
	"bytes"
	"encoding/base32"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"io"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"
)

// Redactor rewrites output so that no live secret value (nor a placeholder
// standing in for one), and no token of a known format, survives. It knows
// each value in its raw, reversed, ROT13, URL-query-escaped, hex (either
// case), base32 and base64 forms
// (standard and URL alphabets, with and without padding, and the stable
// part of the value's encoding at each of the three byte offsets inside a
// longer encoded text: "user:VALUE" or "VALUE\n" piped to base64 is caught,
// at the cost of up to two bytes of the value at either end). The token
// formats are listed with [KindGitHubToken] and its siblings.
//
// Matches are leftmost-longest and never overlap, and become
// "[REDACTED:NAME]" (NAME is the secret's name or the token kind). The text
// is scanned once, left to right: at each position whose first two bytes
// can start a pattern, the literals with the same first four bytes and
// the token format of that first byte are tried.
//
// A Redactor is safe for concurrent use; values and placeholders may be
// added while streams are running (a stream uses the current set on every
// chunk). The zero Redactor is ready to use and knows the token formats
// only.
//
// What it does not catch: a value transformed otherwise (compressed,
// encrypted, split by other text or separators (sed 's/./&-/g', od -c),
// case-changed, JSON- or shell-escaped
// when it holds a quote or a backslash), a token format not listed. It
// implements audit.Redactor.
type Redactor struct {
	mu     sync.Mutex // serializes Add*
	snap   atomic.Pointer[snapshot]
	egress atomic.Pointer[EgressRules] // SetEgress
}

// lit is a literal pattern: a value form or a placeholder.
type lit struct {
	b     []byte
	name  string
	value bool // a value form (masked by MaskReader), not a placeholder
}

// matcher is an immutable, compiled pattern set.
type matcher struct {
	lits   []lit            // longest first
	byKey  map[uint32][]int // first four bytes → indexes into lits, longest first
	first  [1 << 10]uint64  // bitmap of the first two bytes of every pattern
	start  [4]uint64        // bitmap of the first byte of every pattern
	tokens bool             // also match the token formats
	maxLit int
}

// snapshot is what a Redactor knows at one time: every pattern for
// redaction, the value forms alone for masking, and the value forms (with
// their delimiter-free forms) and token formats for detection.
type snapshot struct {
	all    matcher
	values matcher
	detect matcher
}

// Which pattern set of a snapshot a use needs.
const (
	allSet = iota
	valueSet
	detectSet
)

// defaultSnap is the pattern set of a Redactor that was told nothing.
var defaultSnap = sync.OnceValue(func() *snapshot {
	s := &snapshot{}
	s.all.compile(nil, true)
	s.values.compile(nil, false)
	s.detect.compile(nil, true)
	return s
})

func (m *matcher) compile(lits []lit, tokens bool) {
	m.lits = slices.Clone(lits)
	slices.SortStableFunc(m.lits, func(a, b lit) int { return len(b.b) - len(a.b) })
	m.byKey = make(map[uint32][]int, len(m.lits))
	m.tokens = tokens
	for i, l := range m.lits {
		k := binary.BigEndian.Uint32(l.b)
		m.byKey[k] = append(m.byKey[k], i)
		m.mark(l.b[0], l.b[1])
		m.maxLit = max(m.maxLit, len(l.b))
	}
	if tokens {
		for _, t := range tokenStarts {
			m.mark(t[0], t[1])
		}
	}
}

func (m *matcher) mark(a, b byte) {
	k := uint16(a)<<8 | uint16(b)
	m.first[k>>6] |= 1 << (k & 63)
	m.start[a>>6] |= 1 << (a & 63)
}

// NewRedactor returns a Redactor that knows the token formats only.
func NewRedactor() *Redactor { return &Redactor{} }

// AddValue registers a live secret value. It refuses (SECRET_INVALID) a
// value shorter than MinValueLen, which could not be redacted without
// mangling unrelated text.
func (r *Redactor) AddValue(name string, v Value) error {
	if err := CheckValue(name, v); err != nil {
		return err
	}
	r.add(valueForms(name, v.Reveal()))
	return nil
}

// valueForms returns the literals that stand for raw.
func valueForms(name string, raw []byte) []lit {
	forms := [][]byte{raw, []byte(url.QueryEscape(string(raw))), []byte(hex.EncodeToString(raw))}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		forms = append(forms, []byte(enc.EncodeToString(raw)))
		// Inside a longer encoded text the value starts at some offset:
		// from the next multiple of three on, whole groups of three
		// bytes of the value encode to the same characters.
		for skip := range 3 {
			part := raw[skip:]
			part = part[:len(part)-len(part)%3]
			if len(part) >= 6 {
				forms = append(forms, []byte(enc.EncodeToString(part)))
			}
		}
	}
	// Encodings a model undoes at a glance: upper-case hex (xxd -u),
	// base32 (at each of the five byte offsets inside a longer text, as
	// for base64), the value reversed (rev) and ROT13 (tr a-zA-Z n-za-mN-ZA-M).
	forms = append(forms, []byte(strings.ToUpper(hex.EncodeToString(raw))), reversed(raw))
	if r := rot13(raw); !bytes.Equal(r, raw) {
		forms = append(forms, r)
	}
	for _, enc := range []*base32.Encoding{base32.StdEncoding, base32.StdEncoding.WithPadding(base32.NoPadding)} {
		forms = append(forms, []byte(enc.EncodeToString(raw)))
		for skip := range 5 {
			part := raw[skip:]
			part = part[:len(part)-len(part)%5]
			if len(part) >= 10 {
				forms = append(forms, []byte(enc.EncodeToString(part)))
			}
		}
	}
	ps := make([]lit, 0, len(forms))
	for _, f := range forms {
		ps = append(ps, lit{b: f, name: name, value: true})
	}
	return ps
}

func reversed(b []byte) []byte {
	r := make([]byte, len(b))
	for i, c := range b {
		r[len(b)-1-i] = c
	}
	return r
}

func rot13(b []byte) []byte {
	r := make([]byte, len(b))
	for i, c := range b {
		switch {
		case c >= 'a' && c <= 'z':
			c = 'a' + (c-'a'+13)%26
		case c >= 'A' && c <= 'Z':
			c = 'A' + (c-'A'+13)%26
		}
		r[i] = c
	}
	return r
}

// AddPlaceholder registers a placeholder (and its token alone).
func (r *Redactor) AddPlaceholder(p Placeholder) {
	if !p.Valid() {
		return
	}
	r.add([]lit{{b: []byte(p.String()), name: p.name}, {b: []byte(p.token), name: p.name}})
}

func (r *Redactor) add(ps []lit) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var all []lit
	if old := r.snap.Load(); old != nil {
		all = old.all.lits
	}
	all = slices.Clone(all)
	for _, p := range ps {
		if !slices.ContainsFunc(all, func(q lit) bool { return bytes.Equal(q.b, p.b) }) {
			all = append(all, p)
		}
	}
	var values, detect []lit
	for _, p := range all {
		if p.value {
			values = append(values, p)
			detect = append(detect, p)
			// The split normalizer removes delimiters; a value that holds
			// some is looked for without them there too.
			if sp := stripDelims(p.b); len(sp) >= MinValueLen && !slices.ContainsFunc(all, func(q lit) bool { return bytes.Equal(q.b, sp) }) {
				detect = append(detect, lit{b: sp, name: p.name, value: true})
			}
		}
	}
	n := &snapshot{}
	n.all.compile(all, true)
	n.values.compile(values, false)
	n.detect.compile(detect, true)
	r.snap.Store(n)
}

func (r *Redactor) matcher(set int) *matcher {
	s := defaultSnap()
	if r != nil {
		if p := r.snap.Load(); p != nil {
			s = p
		}
	}
	switch set {
	case valueSet:
		return &s.values
	case detectSet:
		return &s.detect
	}
	return &s.all
}

// Counts counts the matches of a redaction by name: a secret's name or a
// token kind. Never a value.
type Counts map[string]int

// Redact returns s with every known value and placeholder, and every
// token of a known format, replaced.
func (r *Redactor) Redact(s string) string {
	out, _ := r.RedactCount(s)
	return out
}

// RedactCount is [Redactor.Redact] that also says what it replaced; the
// counts are nil when nothing was.
func (r *Redactor) RedactCount(s string) (string, Counts) {
	m := r.matcher(allSet)
	b := unsafe.Slice(unsafe.StringData(s), len(s)) // read only
	at, _, _, _ := m.next(b, 0, -1, true)
	if at < 0 {
		return s, nil
	}
	c := Counts{}
	out, _ := m.process(make([]byte, 0, len(s)+64), b, -1, true, false, c)
	return string(out), c
}

// RedactBytes returns b with every known value, placeholder and token
// replaced. It returns b itself when nothing matched.
func (r *Redactor) RedactBytes(b []byte) []byte {
	m := r.matcher(allSet)
	if at, _, _, _ := m.next(b, 0, -1, true); at < 0 {
		return b
	}
	out, _ := m.process(nil, b, -1, true, false, nil)
	return out
}

// maxHold bounds what a stream holds back while a match is undecided (a
// long run of token characters, a private key without its END line yet):
// beyond it the match is decided on what arrived.
const maxHold = 64 << 10

// next finds the first match in b at or after from: its start, end and
// name. prev is the byte before b (-1 at the start of the text). Unless
// final, a position where a match may still complete with more input
// ends the search: hold is that position and at is -1. Both are -1 when
// nothing matched.
func (m *matcher) next(b []byte, from, prev int, final bool) (at, end int, name string, hold int) {
	// The hot loop: one bitmap test per byte pair.
	first := &m.first
	for i := from; i+1 < len(b); i++ {
		k := uint16(b[i])<<8 | uint16(b[i+1])
		if first[k>>6]&(1<<(k&63)) == 0 {
			continue
		}
		p := prev
		if i > 0 {
			p = int(b[i-1])
		}
		n, kind, wait := m.at(b[i:], p, final || len(b)-i > maxHold)
		switch {
		case wait:
			return -1, 0, "", i
		case n > 0:
			return i, i + n, kind, -1
		}
	}
	// The last byte may start a pattern that the next write completes.
	if i := len(b) - 1; !final && i >= from {
		if c := b[i]; m.start[c>>6]&(1<<(c&63)) != 0 {
			p := prev
			if i > 0 {
				p = int(b[i-1])
			}
			if _, _, wait := m.at(b[i:], p, false); wait {
				return -1, 0, "", i
			}
		}
	}
	return -1, 0, "", -1
}

// at returns the longest match at the start of s, or wait when more input
// could still make a (longer) one.
func (m *matcher) at(s []byte, prev int, final bool) (n int, name string, wait bool) {
	if len(s) >= 4 {
		for _, j := range m.byKey[binary.BigEndian.Uint32(s)] {
			l := &m.lits[j]
			if bytes.HasPrefix(s, l.b) {
				n, name = len(l.b), l.name
				break // longest first
			}
			if !final && len(s) < len(l.b) && bytes.HasPrefix(l.b, s) {
				wait = true
			}
		}
	} else if !final {
		for i := range m.lits {
			if bytes.HasPrefix(m.lits[i].b, s) {
				wait = true
				break
			}
		}
	}
	if m.tokens {
		tn, kind, more := matchToken(s, prev, final)
		wait = wait || more
		if tn > n {
			n, name = tn, kind
		}
	}
	if wait && !final {
		return 0, "", true
	}
	return n, name, false
}

// process appends to dst the redacted form of the decided prefix of buf
// and returns the number of bytes of buf consumed. Unless final, it holds
// back from the first position where a match is still undecided. mask
// replaces a match with as many '*' as it has bytes. prev is the byte
// before buf (-1 at the start of the text).
func (m *matcher) process(dst, buf []byte, prev int, final, mask bool, c Counts) ([]byte, int) {
	i := 0
	for {
		at, end, name, hold := m.next(buf, i, prev, final)
		if at < 0 {
			if hold < 0 {
				hold = len(buf)
			}
			return append(dst, buf[i:hold]...), hold
		}
		dst = append(dst, buf[i:at]...)
		if mask {
			dst = append(dst, bytes.Repeat([]byte{'*'}, end-at)...)
		} else {
			dst = append(dst, "[REDACTED:"...)
			dst = append(dst, name...)
			dst = append(dst, ']')
		}
		if c != nil {
			c[name]++
		}
		i = end
	}
}

// stream is the shared engine of Writer and MaskReader.
type stream struct {
	r     *Redactor
	mask  bool
	buf   []byte
	prev  int  // the last byte consumed, -1 before the first
	inPEM bool // inside a private key block longer than maxHold
	count func(name string)
}

func (s *stream) step(dst, in []byte, final bool) []byte {
	s.buf = append(s.buf, in...)
	set := allSet
	if s.mask {
		set = valueSet
	}
	m := s.r.matcher(set)
	if s.inPEM {
		if s.swallowPEM(final); s.inPEM {
			return dst
		}
	}
	var c Counts
	if s.count != nil {
		c = Counts{}
	}
	dst, n := m.process(dst, s.buf, s.prev, final, s.mask, c)
	if n > 0 {
		s.prev = int(s.buf[n-1])
		// A private key block cut at maxHold: drop the rest up to its END.
		if !final && !s.mask && n == len(s.buf) && isOpenPEM(s.buf[:n]) {
			s.inPEM = true
		}
	}
	s.buf = append(s.buf[:0], s.buf[n:]...)
	for name, k := range c {
		for range k {
			s.count(name)
		}
	}
	return dst
}

// isOpenPEM reports whether b ends inside a private key block: a BEGIN
// line of one with no END line after it.
func isOpenPEM(b []byte) bool {
	i := bytes.LastIndex(b, []byte("-----BEGIN "))
	if i < 0 {
		return false
	}
	n, kind, _ := matchPEM(b[i:], true)
	return kind == KindPrivateKey && n == len(b)-i && pemEnd(b[i+11:]) < 0
}

// swallowPEM drops buffered bytes through the END line of the open
// private key block (all but a possible start of that line when none).
func (s *stream) swallowPEM(final bool) {
	if end := pemEnd(s.buf); end >= 0 {
		s.prev = '-'
		s.buf = append(s.buf[:0], s.buf[end:]...)
		s.inPEM = false
		return
	}
	keep := 0
	if !final {
		keep = min(len(s.buf), 2*maxPEMLabel)
	}
	s.buf = append(s.buf[:0], s.buf[len(s.buf)-keep:]...)
}

// Writer returns a WriteCloser that redacts everything written to it
// before passing it to w. It holds back only what a pattern that has
// started could still complete, so a value split across writes is still
// caught; Close writes what is held back (it does not close w). Not safe
// for concurrent use.
func (r *Redactor) Writer(w io.Writer) io.WriteCloser { return r.CountingWriter(w, nil) }

// CountingWriter is [Redactor.Writer] that calls count (when not nil) with
// the name of every match it replaces.
func (r *Redactor) CountingWriter(w io.Writer, count func(name string)) io.WriteCloser {
	return &redactWriter{s: stream{r: r, prev: -1, count: count}, w: w}
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
// placeholders, not token formats) in what it reads from src by as many
// '*' as the value form has bytes, so lengths (Content-Length, ranges) are
// kept. The broker puts it on every response body it relays. Not safe for
// concurrent use.
func (r *Redactor) MaskReader(src io.Reader) io.Reader {
	return &maskReader{s: stream{r: r, mask: true, prev: -1}, src: src}
}

type maskReader struct {
	s    stream
	src  io.Reader
	out  []byte
	off  int
	err  error
	bufs *maskBuffers // s.buf's and out's backing arrays, while in use
}

// maskBuffers are a maskReader's two buffers. They are as large as the
// reads of the body (32 KiB for io.Copy), so a reader that reached the end
// of its source gives them back for the next body (the broker masks every
// response it relays).
type maskBuffers struct{ buf, out []byte }

var maskPool = sync.Pool{New: func() any { return new(maskBuffers) }}

// maxPooled bounds the buffers kept for reuse.
const maxPooled = 256 << 10

func (m *maskReader) release() {
	if m.bufs == nil {
		return
	}
	b := m.bufs
	m.bufs = nil
	b.buf, b.out = m.s.buf[:0], m.out[:0]
	m.s.buf, m.out, m.off = nil, nil, 0
	if cap(b.buf) <= maxPooled && cap(b.out) <= maxPooled {
		maskPool.Put(b)
	}
}

func (m *maskReader) Read(p []byte) (int, error) {
	for m.off == len(m.out) {
		if m.err != nil {
			m.release() // nothing is held or pending: the buffers are free
			return 0, m.err
		}
		if len(m.s.r.matcher(valueSet).lits) == 0 && len(m.s.buf) == 0 {
			return m.src.Read(p) // nothing to mask: no copy
		}
		if m.bufs == nil {
			m.bufs = maskPool.Get().(*maskBuffers)
			m.s.buf, m.out = m.bufs.buf[:0], m.bufs.out[:0]
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
