package secret

import (
	"crypto/sha256"
	_ "embed"
	"math"
	"math/big"
	"strings"
	"sync"
)

// identifiers runs the checked-identifier detectors on b.
func (d *detection) identifiers(b []byte, via string) {
	prevAlnum := false
	for i := 0; i < len(b) && !d.full(); i++ {
		c := b[i]
		if prevAlnum || classes[c]&cWord == 0 {
			prevAlnum = classes[c]&cWord != 0 && c != '_'
			continue
		}
		prevAlnum = c != '_'
		var prev byte
		if i > 0 {
			prev = b[i-1]
		}
		switch {
		case '2' <= c && c <= '6' && !isAlnum(prev):
			if n := cardAt(b[i:]); n > 0 {
				d.add(Finding{Detector: DetectorCardNumber, Class: ClassSensitive, Via: via}, digitsOf(b[i:i+n]))
				i += n - 1
				prevAlnum = true
				continue
			}
			if c == '5' {
				d.wifAt(b[i:], prev, via)
			}
		case 'A' <= c && c <= 'Z' && !isAlnum(prev):
			if n := ibanAt(b[i:]); n > 0 {
				d.add(Finding{Detector: DetectorIBAN, Class: ClassSensitive, Via: via}, digitsOrLetters(b[i:i+n]))
				i += n - 1
				prevAlnum = true
				continue
			}
			if c == 'K' || c == 'L' {
				d.wifAt(b[i:], prev, via)
			}
		case 'a' <= c && c <= 'z' && !isAlnum(prev):
			if n := d.seedAt(b[i:], via); n > 0 {
				i += n - 1
				prevAlnum = true
				continue
			}
		}
		if isHexDigit(c) && !isAlnum(prev) {
			d.hexKeyAt(b, i, via)
		}
	}
}

func digitsOf(b []byte) []byte {
	out := make([]byte, 0, len(b))
	for _, c := range b {
		if '0' <= c && c <= '9' {
			out = append(out, c)
		}
	}
	return out
}

func digitsOrLetters(b []byte) []byte {
	out := make([]byte, 0, len(b))
	for _, c := range b {
		if isAlnum(c) {
			out = append(out, c)
		}
	}
	return out
}

// cardAt returns the length of a payment card number at the start of b:
// 13 to 19 digits, in groups separated by single spaces, hyphens, dots
// or pluses (one kind), not continuing into a letter or digit, with an issuer prefix
// (Visa 4, Mastercard 51–55 and 2221–2720, Amex 34 and 37, Discover 6011,
// 644–649 and 65, JCB 3528–3589, Diners 36, 38, 300–305, UnionPay 62)
// and a valid Luhn check digit; 0 otherwise.
func cardAt(b []byte) int {
	var digits [19]byte
	n, end := 0, 0
	var sep byte
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case '0' <= c && c <= '9':
			if n == len(digits) {
				return 0
			}
			digits[n] = c - '0'
			n++
			end = i + 1
		case (c == ' ' || c == '-' || c == '+' || c == '.') && n > 0 && i+1 < len(b) && '0' <= b[i+1] && b[i+1] <= '9' && b[i-1] != c:
			if sep != 0 && sep != c {
				i = len(b)
				continue
			}
			sep = c
		default:
			i = len(b)
		}
	}
	if n < 13 || end < len(b) && (isAlnum(b[end]) || b[end] == '_') {
		return 0
	}
	if !issuer(digits[:n]) || !luhn(digits[:n]) {
		return 0
	}
	return end
}

func num(d []byte, k int) int {
	v := 0
	for _, x := range d[:k] {
		v = v*10 + int(x)
	}
	return v
}

func issuer(d []byte) bool {
	n := len(d)
	p2, p3, p4 := num(d, 2), num(d, 3), num(d, 4)
	switch {
	case d[0] == 4:
		return n == 13 || n == 16 || n == 19
	case 51 <= p2 && p2 <= 55, 2221 <= p4 && p4 <= 2720:
		return n == 16
	case p2 == 34 || p2 == 37:
		return n == 15
	case p4 == 6011, 644 <= p3 && p3 <= 649, p2 == 65, p2 == 62:
		return n >= 16
	case 3528 <= p4 && p4 <= 3589:
		return n >= 16
	case p2 == 36 || p2 == 38 || 300 <= p3 && p3 <= 305:
		return n >= 14
	}
	return false
}

func luhn(d []byte) bool {
	sum := 0
	for i := range d {
		x := int(d[len(d)-1-i])
		if i%2 == 1 {
			x *= 2
			if x > 9 {
				x -= 9
			}
		}
		sum += x
	}
	return sum%10 == 0
}

// ibanLengths are the IBAN lengths of the countries of the SWIFT
// registry.
var ibanLengths = sync.OnceValue(func() map[string]int {
	return map[string]int{
		"AD": 24, "AE": 23, "AL": 28, "AT": 20, "AZ": 28, "BA": 20, "BE": 16, "BG": 22, "BH": 22, "BR": 29, "BY": 28,
		"CH": 21, "CR": 22, "CY": 28, "CZ": 24, "DE": 22, "DK": 18, "DO": 28, "EE": 20, "EG": 29, "ES": 24, "FI": 18,
		"FO": 18, "FR": 27, "GB": 22, "GE": 22, "GI": 23, "GL": 18, "GR": 27, "GT": 28, "HR": 21, "HU": 28, "IE": 22,
		"IL": 23, "IQ": 23, "IS": 26, "IT": 27, "JO": 30, "KW": 30, "KZ": 20, "LB": 28, "LC": 32, "LI": 21, "LT": 20,
		"LU": 20, "LV": 21, "MC": 27, "MD": 24, "ME": 22, "MK": 19, "MR": 27, "MT": 31, "MU": 30, "NL": 18, "NO": 15,
		"PK": 24, "PL": 28, "PS": 29, "PT": 25, "QA": 29, "RO": 24, "RS": 22, "SA": 24, "SC": 31, "SE": 24, "SI": 19,
		"SK": 24, "SM": 27, "ST": 25, "SV": 28, "TL": 23, "TN": 24, "TR": 26, "UA": 29, "VA": 22, "VG": 24, "XK": 20,
	}
})

// ibanAt returns the length of an IBAN at the start of b: a country's
// code, two check digits and the country's length of letters and digits
// (groups of four may be separated by single spaces, pluses or hyphens), not continuing into
// a letter or digit, whose mod-97 check is 1; 0 otherwise.
func ibanAt(b []byte) int {
	if len(b) < 15 || !('A' <= b[1] && b[1] <= 'Z') || !('0' <= b[2] && b[2] <= '9') || !('0' <= b[3] && b[3] <= '9') {
		return 0
	}
	want, ok := ibanLengths()[string(b[:2])]
	if !ok {
		return 0
	}
	var chars [34]byte
	n, end := 0, 0
	for i := 0; i < len(b) && n < want; i++ {
		c := b[i]
		switch {
		case isAlnum(c):
			if 'a' <= c && c <= 'z' {
				c -= 'a' - 'A'
			}
			chars[n] = c
			n++
			end = i + 1
		case (c == ' ' || c == '+' || c == '-') && n%4 == 0 && i+1 < len(b) && isAlnum(b[i+1]):
		default:
			return 0
		}
	}
	if n != want || end < len(b) && isWord(b[end]) {
		return 0
	}
	// Move the first four to the end; letters count as 10..35.
	rem := 0
	for k := range n {
		c := chars[(k+4)%n]
		if c >= 'A' {
			rem = (rem*100 + int(c-'A'+10)) % 97
		} else {
			rem = (rem*10 + int(c-'0')) % 97
		}
	}
	if rem != 1 {
		return 0
	}
	return end
}

//go:embed bip39_english.txt
var bip39English string

// bip39Words maps each word of the BIP-39 English list to its index.
var bip39Words = sync.OnceValue(func() map[string]uint16 {
	words := strings.Fields(bip39English)
	m := make(map[string]uint16, len(words))
	for i, w := range words {
		m[w] = uint16(i)
	}
	return m
})

// seedAt looks for a BIP-39 seed phrase from the start of b: words of
// the list separated by short runs of spaces, punctuation or digits (a
// numbered list, a JSON array). A window of 12, 15, 18, 21 or 24 words
// whose checksum holds is a finding. It returns the length of the run of
// list words it read (0 when b does not start one of at least 12).
func (d *detection) seedAt(b []byte, via string) int {
	// First the shape alone, with no lookup: at least 12 words of 3 to 8
	// lower-case letters in a row. Prose breaks that quickly (short and
	// long words, capitals); the run is skipped whole when it falls short.
	words, i, end := 0, 0, 0
	for i < len(b) {
		j := i
		for j < len(b) && 'a' <= b[j] && b[j] <= 'z' {
			j++
		}
		if j-i < 3 || j-i > 8 || j < len(b) && (classes[b[j]]&cWord != 0 && !('0' <= b[j] && b[j] <= '9')) {
			break
		}
		words, end = words+1, j
		k := j
		for k < len(b) && k-j <= 6 && !('a' <= b[k] && b[k] <= 'z') && !('A' <= b[k] && b[k] <= 'Z') && b[k] != '_' {
			k++
		}
		if k-j > 6 || k == j {
			break
		}
		i = k
	}
	if words < 12 {
		return end
	}
	return d.seedRun(b[:end], via)
}

// seedRun looks up the words of a run of seed-phrase shape.
func (d *detection) seedRun(b []byte, via string) int {
	var idx []uint16
	var at []int // start of each word
	i, end := 0, 0
	for i < len(b) {
		j := i
		for j < len(b) && 'a' <= b[j] && b[j] <= 'z' {
			j++
		}
		if j == i || j-i > 8 || j < len(b) && isAlnum(b[j]) && !('0' <= b[j] && b[j] <= '9') {
			break
		}
		w, ok := bip39Words()[string(b[i:j])]
		if !ok {
			break
		}
		idx, at = append(idx, w), append(at, i)
		end = j
		k := j
		for k < len(b) && k-j <= 6 && !('a' <= b[k] && b[k] <= 'z') && !('A' <= b[k] && b[k] <= 'Z') && b[k] != '_' {
			k++
		}
		if k-j > 6 || k == j {
			break
		}
		i = k
	}
	if len(idx) < 12 {
		return 0
	}
	for s := 0; s+12 <= len(idx); s++ {
		for _, n := range [...]int{24, 21, 18, 15, 12} {
			if s+n <= len(idx) && bip39Valid(idx[s:s+n]) {
				var phrase []byte
				for _, w := range idx[s : s+n] {
					phrase = append(phrase, byte(w>>8), byte(w))
				}
				d.add(Finding{Detector: DetectorSeedPhrase, Class: ClassSensitive, Via: via}, phrase)
				return end
			}
		}
	}
	return end
}

// bip39Valid reports whether the words' checksum holds: of their 11·n
// bits, the last n/3 are the first bits of the SHA-256 of the others.
func bip39Valid(idx []uint16) bool {
	n := len(idx)
	cs := n / 3
	entBits := n*11 - cs
	var bits [33]byte // 24 words: 264 bits
	for k, w := range idx {
		for j := range 11 {
			if w&(1<<(10-j)) != 0 {
				p := k*11 + j
				bits[p/8] |= 0x80 >> (p % 8)
			}
		}
	}
	sum := sha256.Sum256(bits[:entBits/8])
	for j := range cs {
		p := entBits + j
		got := bits[p/8]&(0x80>>(p%8)) != 0
		want := sum[j/8]&(0x80>>(j%8)) != 0
		if got != want {
			return false
		}
	}
	return true
}

const base58Alphabet = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"

var base58Index = func() (t [256]int8) {
	for i := range t {
		t[i] = -1
	}
	for i := range len(base58Alphabet) {
		t[base58Alphabet[i]] = int8(i)
	}
	return t
}()

// wifAt finds a WIF private key at the start of b: 51 base58 characters
// from '5' (uncompressed) or 52 from 'K' or 'L' (compressed) whose
// decoding is version 0x80, the key (and 0x01 when compressed) and a
// valid double SHA-256 checksum.
func (d *detection) wifAt(b []byte, prev byte, via string) {
	if len(b) == 0 || base58Index[prev] >= 0 && prev != 0 {
		return
	}
	n := 0
	for n < len(b) && n <= 52 && base58Index[b[n]] >= 0 {
		n++
	}
	if !(b[0] == '5' && n == 51 || (b[0] == 'K' || b[0] == 'L') && n == 52) {
		return
	}
	v := new(big.Int)
	k := big.NewInt(58)
	for _, c := range b[:n] {
		v.Mul(v, k)
		v.Add(v, big.NewInt(int64(base58Index[c])))
	}
	raw := v.Bytes()
	if len(raw) != 37 && len(raw) != 38 || raw[0] != 0x80 {
		return
	}
	body, check := raw[:len(raw)-4], raw[len(raw)-4:]
	s1 := sha256.Sum256(body)
	s2 := sha256.Sum256(s1[:])
	if string(s2[:4]) != string(check) {
		return
	}
	d.add(Finding{Detector: DetectorWIF, Class: ClassSecret, Via: via}, b[:n])
}

// keyNear reports whether the text before at names a private key (the
// 40 bytes before it hold "priv", "secret", "seed", "signing" or "key",
// in any case).
func keyNear(b []byte, at int) bool {
	from := max(0, at-40)
	var buf [40]byte
	w := buf[:0]
	for _, c := range b[from:at] {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		w = append(w, c)
	}
	s := string(w)
	for _, k := range [...]string{"priv", "secret", "seed", "signing", "key"} {
		if strings.Contains(s, k) {
			return true
		}
	}
	return false
}

// hexKeyAt finds a 64-digit hex private key at b[at:] ("0x" allowed
// before it): exactly 64 hex digits, not continuing into a word, after a
// key's name (keyNear). A bare SHA-256 digest (git objects, checksums) is
// not one.
func (d *detection) hexKeyAt(b []byte, at int, via string) {
	s := at
	if b[s] == '0' && s+1 < len(b) && (b[s+1] == 'x' || b[s+1] == 'X') {
		s += 2
	}
	e := s
	for e < len(b) && e-s <= 64 && isHexDigit(b[e]) {
		e++
	}
	if e-s != 64 || e < len(b) && isWord(b[e]) || !keyNear(b, at) {
		return
	}
	if entropy(b[s:e]) < 3.0 {
		return
	}
	d.add(Finding{Detector: DetectorHexKey, Class: ClassSecret, Via: via}, b[s:e])
}

// entropy is the Shannon entropy of b in bits per byte.
func entropy(b []byte) float64 {
	var count [256]int
	for _, c := range b {
		count[c]++
	}
	h := 0.0
	n := float64(len(b))
	for _, k := range count {
		if k > 0 {
			p := float64(k) / n
			h -= p * math.Log2(p)
		}
	}
	return h
}
