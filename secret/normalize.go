package secret

import (
	"bytes"
	"encoding/base32"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"sync"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Byte classes of the survey.
const (
	cB64 uint8 = 1 << iota
	cB32
	cHex
	cWord
	cDelim
	cSpecial // starts an escape or is not ASCII
)

var classes = func() (t [256]uint8) {
	for c := range 256 {
		b := byte(c)
		if isB64(b) {
			t[c] |= cB64
		}
		if isB32Upper(b) {
			t[c] |= cB32
		}
		if isHexDigit(b) {
			t[c] |= cHex
		}
		if isWord(b) {
			t[c] |= cWord
		}
		if isDelim(b) {
			t[c] |= cDelim
		}
		if b >= 0x80 || b == '%' || b == '+' || b == '\\' || b == '&' {
			t[c] |= cSpecial
		}
	}
	return t
}()

// survey is what one pass over a view tells about which normalizers can
// derive anything from it. A run of base32 or hex digits is a run of
// base64 characters too, so b64 stands for the three.
type survey struct {
	nonASCII, percent, escape, b64 bool
}

func surveyOf(b []byte) survey {
	var s survey
	// The escapes by IndexByte (vectorized), the rest by words of eight.
	s.percent = bytes.IndexByte(b, '%') >= 0 || bytes.IndexByte(b, '+') >= 0
	if i := bytes.IndexByte(b, '\\'); i >= 0 {
		s.escape = true
	} else if i := bytes.Index(b, []byte("&#")); i >= 0 {
		s.escape = true
	}
	i := 0
	for ; i+8 <= len(b); i += 8 {
		if binary.LittleEndian.Uint64(b[i:])&0x8080808080808080 != 0 {
			s.nonASCII = true
			break
		}
	}
	for ; i < len(b) && !s.nonASCII; i++ {
		s.nonASCII = b[i] >= 0x80
	}
	// A run of minEncodedRun base64 bytes, found by looking back from
	// every minEncodedRun-th byte: a byte that is not one ends every run
	// through it, so the next run can end minEncodedRun bytes after it
	// at the earliest.
	for j := minEncodedRun - 1; j < len(b); {
		k := j
		for k >= 0 && j-k < minEncodedRun && classes[b[k]]&cB64 != 0 {
			k--
		}
		if j-k == minEncodedRun {
			s.b64 = true
			break
		}
		j = k + minEncodedRun
	}
	return s
}

// normalizer derives a view of a text with one layer of hiding undone;
// derive returns nil when there is nothing to undo. A tokensOnly view is
// only matched against known values and token formats (its text is glued
// together, where identifiers and names would be guesses).
type normalizer struct {
	name       string
	derive     func([]byte) []byte
	tokensOnly bool
	can        func(survey) bool // whether derive may find anything
}

// normalizers are the layers the detector undoes, each on every view,
// up to maxDepth layers deep.
var normalizers = []normalizer{
	{name: "unicode", derive: unicodeView, can: func(s survey) bool { return s.nonASCII }},
	{name: "url", derive: urlView, can: func(s survey) bool { return s.percent }},
	{name: "escape", derive: escapeView, can: func(s survey) bool { return s.escape }},
	{name: "base64", derive: base64View, can: func(s survey) bool { return s.b64 }},
	{name: "base32", derive: base32View, can: func(s survey) bool { return s.b64 }},
	{name: "hex", derive: hexView, can: func(s survey) bool { return s.b64 }},
	{name: "split", derive: splitView, tokensOnly: true, can: func(survey) bool { return true }},
}

// Normalize returns the views of b that the detector scans besides b
// itself, one layer deep, by normalizer name; for tests, fuzzing and
// explaining a finding.
func Normalize(b []byte) map[string][]byte {
	out := map[string][]byte{}
	for _, n := range normalizers {
		if v := n.derive(b); v != nil {
			out[n.name] = v
		}
	}
	return out
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// urlView undoes one layer of percent-encoding, '+' read as a space as
// in a query or form (an invalid escape stays as written); nil when b
// holds neither.
func urlView(b []byte) []byte {
	found := false
	for i, c := range b {
		if c == '+' || c == '%' && i+2 < len(b) && isHexDigit(b[i+1]) && isHexDigit(b[i+2]) {
			found = true
			break
		}
	}
	if !found {
		return nil
	}
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case c == '%' && i+2 < len(b) && isHexDigit(b[i+1]) && isHexDigit(b[i+2]):
			h, _ := unhex(b[i+1])
			l, _ := unhex(b[i+2])
			out = append(out, h<<4|l)
			i += 2
		case c == '+':
			out = append(out, ' ')
		default:
			out = append(out, c)
		}
	}
	return out
}

// escapeView undoes backslash escapes (\uXXXX, \xXX, \n and friends: JSON,
// JavaScript, shell $'…') and HTML character references (&#NN; &#xNN;
// and the few named ones that hide delimiters).
func escapeView(b []byte) []byte {
	found := false
	for i := 0; i+1 < len(b); i++ {
		if b[i] == '\\' || b[i] == '&' && b[i+1] == '#' {
			found = true
			break
		}
	}
	if !found {
		return nil
	}
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case c == '\\' && i+1 < len(b):
			switch e := b[i+1]; e {
			case 'u':
				if r, ok := hexRune(b[i+2:], 4); ok {
					out = utf8.AppendRune(out, r)
					i += 5
					continue
				}
			case 'x':
				if r, ok := hexRune(b[i+2:], 2); ok {
					out = append(out, byte(r))
					i += 3
					continue
				}
			case 'n':
				out = append(out, '\n')
				i++
				continue
			case 't':
				out = append(out, '\t')
				i++
				continue
			case 'r':
				out = append(out, '\r')
				i++
				continue
			case '\\', '/', '"', '\'':
				out = append(out, e)
				i++
				continue
			}
		case c == '&' && i+2 < len(b) && b[i+1] == '#':
			j, base := i+2, 10
			if b[j] == 'x' || b[j] == 'X' {
				j, base = j+1, 16
			}
			var r rune
			k := j
			for ; k < len(b) && k-j < 7; k++ {
				v, ok := unhex(b[k])
				if !ok || base == 10 && v > 9 {
					break
				}
				r = r*rune(base) + rune(v)
			}
			if k > j && k < len(b) && b[k] == ';' && utf8.ValidRune(r) {
				out = utf8.AppendRune(out, r)
				i = k
				continue
			}
		}
		out = append(out, c)
	}
	return out
}

func hexRune(b []byte, n int) (rune, bool) {
	if len(b) < n {
		return 0, false
	}
	var r rune
	for _, c := range b[:n] {
		v, ok := unhex(c)
		if !ok {
			return 0, false
		}
		r = r<<4 | rune(v)
	}
	return r, true
}

// invisible reports the characters that render as nothing: zero-width
// spaces and joiners, the word joiner and invisible operators, the BOM,
// the soft hyphen, the Mongolian vowel separator, bidi controls,
// variation selectors and tag characters.
func invisible(r rune) bool {
	switch {
	case r == 0xAD, r == 0x180E, r == 0xFEFF, r == 0x34F:
		return true
	case 0x200B <= r && r <= 0x200F, 0x202A <= r && r <= 0x202E, 0x2060 <= r && r <= 0x2069:
		return true
	case 0xFE00 <= r && r <= 0xFE0F, 0xE0000 <= r && r <= 0xE007F, 0xE0100 <= r && r <= 0xE01EF:
		return true
	}
	return false
}

// lookAlike maps the Cyrillic and Greek letters that look like Latin
// ones (and survive NFKC) to them.
var lookAlike = sync.OnceValue(func() map[rune]byte {
	return map[rune]byte{
		'а': 'a', 'е': 'e', 'о': 'o', 'р': 'p', 'с': 'c', 'у': 'y', 'х': 'x', 'і': 'i', 'ј': 'j', 'ѕ': 's', 'ԁ': 'd', 'ɡ': 'g', 'һ': 'h', 'ԛ': 'q', 'ԝ': 'w',
		'А': 'A', 'В': 'B', 'Е': 'E', 'К': 'K', 'М': 'M', 'Н': 'H', 'О': 'O', 'Р': 'P', 'С': 'C', 'Т': 'T', 'Х': 'X', 'І': 'I', 'Ј': 'J', 'Ѕ': 'S', 'У': 'Y',
		'Α': 'A', 'Β': 'B', 'Ε': 'E', 'Ζ': 'Z', 'Η': 'H', 'Ι': 'I', 'Κ': 'K', 'Μ': 'M', 'Ν': 'N', 'Ο': 'O', 'Ρ': 'P', 'Τ': 'T', 'Υ': 'Y', 'Χ': 'X',
		'ο': 'o', 'ν': 'v', 'ι': 'i', 'κ': 'k', 'α': 'a', 'ρ': 'p',
	}
})

// unicodeView drops invisible characters, applies NFKC (fullwidth and
// mathematical letters, ligatures) and maps look-alike letters, when b
// holds anything beyond ASCII; nil when that changes nothing or the view
// would be more than twice as long.
func unicodeView(b []byte) []byte {
	i := 0
	for i < len(b) && b[i] < utf8.RuneSelf {
		i++
	}
	if i == len(b) {
		return nil
	}
	out := make([]byte, 0, len(b))
	out = append(out, b[:i]...)
	var it norm.Iter
	it.Init(norm.NFKC, b[i:])
	for !it.Done() {
		seg := it.Next()
		for len(seg) > 0 {
			r, n := utf8.DecodeRune(seg)
			seg = seg[n:]
			switch {
			case invisible(r):
			case r < utf8.RuneSelf:
				out = append(out, byte(r))
			default:
				if c, ok := lookAlike()[r]; ok {
					out = append(out, c)
				} else {
					out = utf8.AppendRune(out, r)
				}
			}
		}
		if len(out) > 2*len(b) {
			return nil
		}
	}
	if string(out) == string(b) {
		return nil
	}
	return out
}

// minEncodedRun is the shortest run of an encoding's alphabet that is
// decoded: 12 bytes of base64, 10 of base32, 8 of hex.
const minEncodedRun = 16

func isB32Upper(c byte) bool { return 'A' <= c && c <= 'Z' || '2' <= c && c <= '7' }

func isB64(c byte) bool { return isAlnum(c) || c == '+' || c == '/' || c == '-' || c == '_' }

// runs calls f on every maximal run of bytes that ok accepts, at least
// minEncodedRun long, with padding '=' included at its end.
func runs(b []byte, class uint8, f func(run []byte)) {
	for i := 0; i < len(b); {
		if classes[b[i]]&class == 0 {
			i++
			continue
		}
		j := i
		for j < len(b) && classes[b[j]]&class != 0 {
			j++
		}
		k := j
		for k < len(b) && k-j < 2 && b[k] == '=' {
			k++
		}
		if j-i >= minEncodedRun {
			f(b[i:j])
		}
		i = k
		if k == j {
			i = j
		}
	}
}

// decodedView joins the decodings of the runs with newlines; nil when
// none decoded.
func decodedView(b []byte, class uint8, dec func(dst, run []byte) []byte) []byte {
	var out []byte
	runs(b, class, func(run []byte) {
		n := len(out)
		if n > 0 {
			out = append(out, '\n')
		}
		if o := dec(out, run); o != nil {
			out = o
		} else {
			out = out[:n]
		}
	})
	return out
}

// base64View decodes the runs of the base64 alphabets (standard or URL,
// padded or not); a run that is neither is decoded up to its last whole
// group.
func base64View(b []byte) []byte {
	return decodedView(b, cB64, func(dst, run []byte) []byte {
		enc := base64.RawStdEncoding
		for _, c := range run {
			if c == '-' || c == '_' {
				enc = base64.RawURLEncoding
				break
			}
		}
		if len(run)%4 == 1 {
			run = run[:len(run)-1] // not a length an encoding has
		}
		return appendDecoded(dst, run, enc.DecodedLen(len(run)), enc.Decode)
	})
}

// base32View decodes the runs of the upper-case base32 alphabet.
func base32View(b []byte) []byte {
	enc := base32.StdEncoding.WithPadding(base32.NoPadding)
	return decodedView(b, cB32, func(dst, run []byte) []byte {
		for len(run)%8 == 1 || len(run)%8 == 3 || len(run)%8 == 6 {
			run = run[:len(run)-1] // not a length an encoding has
		}
		return appendDecoded(dst, run, enc.DecodedLen(len(run)), enc.Decode)
	})
}

// hexView decodes the runs of hex digits.
func hexView(b []byte) []byte {
	return decodedView(b, cHex, func(dst, run []byte) []byte {
		run = run[:len(run)&^1]
		return appendDecoded(dst, run, hex.DecodedLen(len(run)), hex.Decode)
	})
}

// appendDecoded appends to dst what decode makes of run (at most n
// bytes); nil when run does not decode.
func appendDecoded(dst, run []byte, n int, decode func(dst, src []byte) (int, error)) []byte {
	k := len(dst)
	dst = append(dst, make([]byte, n)...)
	m, err := decode(dst[k:], run)
	if err != nil {
		return nil
	}
	return dst[:k+m]
}

// isDelim reports the bytes a value is split with: spaces, punctuation
// that separates groups, and quotes and '+' of string concatenation.
func isDelim(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', '-', '.', ',', ':', ';', '|', '/', '\\', '\'', '"', '+', '*', '`':
		return true
	}
	return false
}

// Bounds of the split normalizer: chunks of 1 to maxChunk word bytes
// separated by runs of 1 to maxDelims delimiters, at least minChunks
// chunks in a row.
const (
	maxChunk  = 8
	minChunks = 4
	maxDelims = 16
)

// splitView joins the chunks of every stretch of short word chunks
// separated by delimiters that looks cut by a program (splitLike) ("g-h-p-_-…", "AKIA IOSF ODNN 7EXA MPLE",
// "'ghp_' + 'abcd' + …"); nil when there is none. The stretch's dominant
// delimiter is the one inserted: a run of one delimiter is dropped, a run
// of that delimiter alone keeps the value's own, one in two between the
// cuts ("x-o-x-b---1" is "xoxb-1"), and a mixed run keeps its other bytes ("s-:-/-/-h" is
// "s://h").
func splitView(b []byte) []byte {
	var out []byte
	var parts []int // start and end of each chunk and delimiter run of a stretch
	for i := 0; i < len(b); {
		if classes[b[i]]&cWord == 0 {
			i++
			continue
		}
		// A stretch: chunk (delims chunk)*.
		start, chunks, j := i, 0, i
		parts = parts[:0]
		for {
			k := j
			for k < len(b) && classes[b[k]]&cWord != 0 {
				k++
			}
			if k-j == 0 || k-j > maxChunk {
				break
			}
			chunks++
			parts = append(parts, j, k)
			d := k
			for d < len(b) && d-k < maxDelims && classes[b[d]]&cDelim != 0 {
				d++
			}
			if d == k || d == len(b) || classes[b[d]]&cWord == 0 {
				j = k
				break
			}
			j = d
		}
		if chunks >= minChunks && splitLike(b, parts) {
			if out != nil {
				out = append(out, '\n')
			}
			dom := dominant(b, parts)
			for x := 0; x < len(parts); x += 2 {
				out = append(out, b[parts[x]:parts[x+1]]...)
				if x+2 < len(parts) {
					out = appendDelims(out, b[parts[x+1]:parts[x+2]], dom)
				}
			}
		}
		if j <= start {
			j = start + 1
		}
		for j < len(b) && classes[b[j]]&cWord != 0 {
			j++
		}
		i = j
	}
	return out
}

// splitLike reports whether a stretch looks cut by a program rather than
// written: at least half its chunks are one byte long ("g-h-p-_"), or
// every chunk but the last has the same length ("AKIA IOSF ODNN 7EXA").
// Prose, whose words vary, is left alone.
func splitLike(b []byte, parts []int) bool {
	n := len(parts) / 2
	ones, same := 0, true
	first := parts[1] - parts[0]
	for x := 0; x < len(parts); x += 2 {
		l := parts[x+1] - parts[x]
		if l == 1 {
			ones++
		}
		if x+2 < len(parts) && l != first {
			same = false
		}
	}
	return 2*ones >= n || same && first >= 2
}

// dominant returns the delimiter a stretch was cut with: the one that
// forms the most runs of one byte, else the one most frequent (the
// quotes and colon of `"note": "` around a value cut with '-' are not
// it).
func dominant(b []byte, parts []int) byte {
	var single, all [256]uint16
	for x := 1; x+1 < len(parts); x += 2 {
		run := b[parts[x]:parts[x+1]]
		if len(run) == 1 {
			single[run[0]]++
		}
		for _, c := range run {
			all[c]++
		}
	}
	best, bc := byte(0), uint16(0)
	for _, t := range [2]*[256]uint16{&single, &all} {
		for c, n := range t {
			if n > bc {
				best, bc = byte(c), n
			}
		}
		if bc > 0 {
			return best
		}
	}
	return b[parts[1]]
}

// appendDelims appends what splitView keeps of a delimiter run.
func appendDelims(out, run []byte, dom byte) []byte {
	if len(run) == 1 {
		return out
	}
	same := true
	for _, c := range run {
		if c != dom {
			same = false
			break
		}
	}
	if same { // one cut between each pair of the value's own: 2k+1 for k
		return append(out, run[:(len(run)-1)/2]...)
	}
	for _, c := range run {
		if c != dom {
			out = append(out, c)
		}
	}
	return out
}

// Invisible reports whether r renders as nothing (zero-width spaces and
// joiners, bidi controls, tag characters, soft hyphens, variation
// selectors): the characters the normalizer drops, which can carry
// hidden text past a reader.
func Invisible(r rune) bool { return invisible(r) }
