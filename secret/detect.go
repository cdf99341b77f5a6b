package secret

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
	"unsafe"
)

// Class is what a [Finding] found: a credential or sensitive data.
type Class uint8

const (
	// ClassSecret: a credential — a known secret value (the vault's, a
	// provider key, a credential withheld from the host environment), a
	// token of a known format, a private key, or a high-entropy string
	// after a credential's name. At an exit it is SECRET_EGRESS.
	ClassSecret Class = iota + 1
	// ClassSensitive: a checked identifier — a payment card number
	// (Luhn), an IBAN (check digits), a BIP-39 seed phrase (checksum).
	// At an exit it is SENSITIVE_DATA_EGRESS.
	ClassSensitive
)

// String returns "secret" or "sensitive".
func (c Class) String() string {
	switch c {
	case ClassSecret:
		return "secret"
	case ClassSensitive:
		return "sensitive"
	}
	return "unknown"
}

// Detector names of the detections that are not token kinds.
const (
	// DetectorKnownValue: a value the Redactor was told ([Finding.Secret]
	// names it).
	DetectorKnownValue = "known-value"
	// DetectorKeyedEntropy: a high-entropy string after a credential's
	// name ([CredentialKey]): "api_key=…", "X-Auth: …", "\"secret\": \"…\"".
	DetectorKeyedEntropy = "high-entropy-credential"
	DetectorCardNumber   = "card-number"
	DetectorIBAN         = "iban"
	DetectorSeedPhrase   = "bip39-seed-phrase"
	DetectorWIF          = "wif-private-key"
	DetectorHexKey       = "hex-private-key"
)

// Finding is one detection. It names the detector, never the value.
type Finding struct {
	// Detector is a token kind ([KindGitHubToken], …) or one of the
	// Detector constants.
	Detector string
	Class    Class
	// Secret is the name of the known value (DetectorKnownValue only).
	Secret string
	// Via names the normalizations that revealed it, outermost first
	// ("url+base64"); empty when it was found as written.
	Via string
	sum [sha256.Size]byte
}

// String describes f for a message: detector, secret name, normalization.
func (f Finding) String() string {
	s := f.Detector
	if f.Secret != "" {
		s += " " + f.Secret
	}
	if f.Via != "" {
		s += " (via " + f.Via + ")"
	}
	return s
}

// ValueSum reports whether the SHA-256 of what f matched (after
// normalization; for a card or an IBAN its digits and letters alone) is
// the hex sum; settings name a value an
// origin may receive that way, never by the value itself.
func (f Finding) ValueSum(sum string) bool {
	return len(sum) == 2*sha256.Size && hex.EncodeToString(f.sum[:]) == strings.ToLower(sum)
}

// maxFindings bounds what one Detect reports; maxDepth bounds the layers
// of encoding it undoes.
const (
	maxFindings = 16
	maxDepth    = 4
)

// Detect reports the credentials and sensitive data in b: every known
// value (in every form the Redactor masks), token of a known format,
// checked identifier (payment cards by Luhn and issuer prefix, IBANs by
// their check digits and country length, BIP-39 seed phrases by their
// checksum, WIF private keys by their checksum, 64-digit hex keys after a
// key's name) and high-entropy string after a credential's name, found
// as written or after the normalizer undoes what hides them: layers of
// URL encoding, JSON/shell backslash escapes and HTML character
// references, base64 (both alphabets), base32 and hex, delimiters
// splitting a value into short chunks, invisible characters (zero-width,
// bidi controls, tags, soft hyphens), compatibility forms (NFKC) and the
// common Cyrillic and Greek look-alike letters.
//
// Placeholders are not findings (the broker decides them). The findings
// are at most 16, in the order found; nil when nothing matched. Detect
// takes time and memory linear in len(b): each layer of decoding yields
// views no longer than its input (twice for NFKC), at most four layers
// deep, and the views scanned together are bounded by 8×len(b)+64 KiB.
//
// What it does not catch: what the Redactor does not (see [Redactor]),
// a value encrypted or compressed, a value cut into chunks sent in
// different requests, a card number or IBAN spelled out in words, and a
// credential of an unlisted format whose value looks like prose.
func (r *Redactor) Detect(b []byte) []Finding {
	d := detection{m: r.matcher(detectSet), budget: 8*len(b) + 64<<10}
	d.scan(b, "", 0)
	return d.found
}

// DetectString is [Redactor.Detect] on a string.
func (r *Redactor) DetectString(s string) []Finding {
	return r.Detect(unsafe.Slice(unsafe.StringData(s), len(s))) // read only
}

// detection is the state of one Detect.
type detection struct {
	m      *matcher
	found  []Finding
	budget int
}

func (d *detection) full() bool { return len(d.found) >= maxFindings }

// add records a finding unless the same detector already found the same
// value.
func (d *detection) add(f Finding, value []byte) {
	f.sum = sha256.Sum256(value)
	for _, g := range d.found {
		if g.Detector == f.Detector && (g.sum == f.sum || f.Secret != "" && g.Secret == f.Secret) {
			return
		}
	}
	if !d.full() {
		d.found = append(d.found, f)
	}
}

// scan runs every detector on view b, then on each view the normalizer
// derives from it.
func (d *detection) scan(b []byte, via string, depth int) {
	if d.full() {
		return
	}
	d.tokens(b, via)
	d.identifiers(b, via)
	d.keyed(b, via)
	if depth >= maxDepth {
		return
	}
	sv := surveyOf(b)
	for _, n := range normalizers {
		if d.full() || d.budget <= 0 {
			return
		}
		if !n.can(sv) {
			continue
		}
		v := n.derive(b)
		if v == nil || len(v) > d.budget {
			continue
		}
		d.budget -= len(v)
		w := n.name
		if via != "" {
			w = via + "+" + n.name
		}
		if n.tokensOnly {
			d.tokens(v, w)
			continue
		}
		d.scan(v, w, depth+1)
	}
}

// tokens finds the known values and token formats in b.
func (d *detection) tokens(b []byte, via string) {
	for i := 0; i < len(b) && !d.full(); {
		at, end, name, _ := d.m.next(b, i, -1, true)
		if at < 0 {
			return
		}
		if !documented(name, b[at:end]) {
			f := Finding{Detector: name, Class: ClassSecret, Via: via}
			if !tokenKinds[name] {
				f.Detector, f.Secret = DetectorKnownValue, name
			}
			d.add(f, b[at:end])
		}
		i = end
	}
}

// tokenKinds are the names of the token formats; any other name of a
// match is a known value's.
var tokenKinds = func() map[string]bool {
	m := map[string]bool{KindGitHubToken: true, KindAWSKeyID: true, KindSlackToken: true, KindPrivateKey: true, KindJWT: true,
		KindTelegramToken: true, KindDiscordToken: true}
	for _, f := range families {
		m[f.kind] = true
	}
	return m
}()

// documentedValues are credentials published as examples (AWS's
// documentation); they are not findings.
var documentedValues = []string{"AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"}

func documented(kind string, v []byte) bool {
	if kind != KindAWSKeyID && kind != DetectorKeyedEntropy {
		return false
	}
	for _, s := range documentedValues {
		if string(v) == s {
			return true
		}
	}
	return false
}

// stripDelims returns v without the delimiters the split normalizer
// removes, or nil when it has none.
func stripDelims(v []byte) []byte {
	if bytes.IndexFunc(v, func(r rune) bool { return r < 0x80 && isDelim(byte(r)) }) < 0 {
		return nil
	}
	out := make([]byte, 0, len(v))
	for _, c := range v {
		if !isDelim(c) {
			out = append(out, c)
		}
	}
	return out
}

// Detectors returns the name of every detector a [Finding] may carry:
// the token kinds and the Detector constants, sorted.
func Detectors() []string {
	out := []string{DetectorKnownValue, DetectorKeyedEntropy, DetectorCardNumber, DetectorIBAN, DetectorSeedPhrase, DetectorWIF, DetectorHexKey}
	for k := range tokenKinds {
		if !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}
