package secret

import "bytes"

// Token kinds: the names in the markers ("[REDACTED:github-token]") and in
// the counts of a redaction. They hold a hyphen, so they never equal a
// secret name (^[a-z][a-z0-9_]*$).
//
// Every [Redactor] masks these token formats besides the values it was
// told:
//
//   - GitHub tokens: ghp_, gho_, ghu_, ghs_, ghr_ and 36 or more base62
//     characters; github_pat_ and 22 or more of [A-Za-z0-9_];
//   - AWS access key ids: AKIA or ASIA and exactly 16 of [A-Z0-9];
//   - Slack tokens: xoxa-, xoxb-, xoxp-, xoxr-, xoxs- and 10 or more of
//     [A-Za-z0-9-];
//   - PEM private keys (OpenSSH's too) and PGP private key blocks: a
//     "-----BEGIN … PRIVATE KEY-----" or "-----BEGIN PGP PRIVATE KEY
//     BLOCK-----" line through the next "-----END …-----" (to the end of
//     the text when there is none);
//   - the prefixed cloud, payment, chat and CI formats of families.go
//     ([KindAnthropicKey] and its siblings), Telegram bot tokens and
//     Discord bot tokens;
//   - JWTs: three base64url segments separated by dots, the first one
//     starting "eyJ" (a JSON object) and at least 10 characters long, the
//     second at least 4, the last one possibly empty.
//
// A token must not continue a word: the byte before it is not a letter, a
// digit or '_' (for a JWT not a base64url character or '.'), and an AWS id
// is not followed by a letter or digit. Matches are maximal: the whole run
// of token characters is masked. KindProviderKey names the provider key a
// run uses, told to the Redactor as a value.
const (
	KindGitHubToken = "github-token"
	KindAWSKeyID    = "aws-access-key-id"
	KindSlackToken  = "slack-token"
	KindPrivateKey  = "private-key"
	KindJWT         = "jwt"
	KindProviderKey = "provider-key"
)

// Lengths of the token formats.
const (
	minGitHubClassic = 36 // ghp_ and friends: 36 base62 characters
	minGitHubPAT     = 22 // github_pat_: at least the 22-character id part
	awsIDLen         = 16 // AKIA/ASIA + 16 upper-case letters or digits
	minSlack         = 10 // xox?- + at least 10 characters
	minJWTHeader     = 10 // eyJ… header segment
	minJWTPayload    = 4
	maxPEMLabel      = 64 // "-----BEGIN <label>-----"
)

// isWord reports whether c is [A-Za-z0-9_].
func isWord(c byte) bool { return isAlnum(c) || c == '_' }

func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

func isUpperDigit(c byte) bool { return 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' }

func isB64URL(c byte) bool { return isWord(c) || c == '-' }

func isSlack(c byte) bool { return isAlnum(c) || c == '-' }

func isPEMLabel(c byte) bool { return isUpperDigit(c) || c == ' ' }

// tokenStarts are the first two bytes of every token format; the scanner
// looks at a token only where they occur.
var tokenStarts = append([]string{"gh", "gi", "AK", "AS", "xo", "--", "ey"}, familyTokenStarts()...)

// run returns the length of the prefix of s whose bytes satisfy ok.
func run(s []byte, ok func(byte) bool) int {
	for i, c := range s {
		if !ok(c) {
			return i
		}
	}
	return len(s)
}

// prefix reports whether s starts with p; more reports that s is a proper
// prefix of p, so that more input could still make it one.
func prefix(s []byte, p string) (ok, more bool) {
	if len(s) < len(p) {
		return false, string(s) == p[:len(s)]
	}
	return string(s[:len(p)]) == p, false
}

// matchToken reports the token that starts at s[0]: its length and kind,
// or more when s ends before that can be decided (only when !final). prev
// is the byte before s, or -1 at the start of the text.
func matchToken(s []byte, prev int, final bool) (n int, kind string, more bool) {
	n, kind, more = matchKnown(s, prev, final)
	others := [...]func([]byte, int, bool) (int, string, bool){matchFamily, nil}
	switch c := s[0]; {
	case '1' <= c && c <= '9':
		others[1] = matchTelegram
	case c == 'M' || c == 'N' || c == 'O':
		others[1] = matchDiscord
	}
	for _, f := range others {
		if f == nil {
			continue
		}
		fn, fkind, fmore := f(s, prev, final)
		more = more || fmore
		if fn > n {
			n, kind = fn, fkind
		}
	}
	if more && !final {
		return 0, "", true
	}
	return n, kind, false
}

// matchKnown is matchToken for the formats of this file.
func matchKnown(s []byte, prev int, final bool) (n int, kind string, more bool) {
	switch s[0] {
	case 'g':
		if prev >= 0 && isWord(byte(prev)) {
			return 0, "", false
		}
		return matchGitHub(s, final)
	case 'A':
		if prev >= 0 && isAlnum(byte(prev)) {
			return 0, "", false
		}
		return matchAWS(s, final)
	case 'x':
		if prev >= 0 && isWord(byte(prev)) {
			return 0, "", false
		}
		return matchSlack(s, final)
	case 'e':
		if prev >= 0 && (isB64URL(byte(prev)) || prev == '.') {
			return 0, "", false
		}
		return matchJWT(s, final)
	case '-':
		return matchPEM(s, final)
	}
	return 0, "", false
}

// body measures a run of token characters after a prefix of length at:
// more when it reaches the end of s and the text may go on.
func body(s []byte, at int, ok func(byte) bool, final bool) (end int, more bool) {
	end = at + run(s[at:], ok)
	return end, end == len(s) && !final
}

func matchGitHub(s []byte, final bool) (int, string, bool) {
	if ok, more := prefix(s, "github_pat_"); ok || more {
		if more {
			return 0, "", !final
		}
		end, more := body(s, len("github_pat_"), isWord, final)
		if more {
			return 0, "", true
		}
		if end-len("github_pat_") >= minGitHubPAT {
			return end, KindGitHubToken, false
		}
		return 0, "", false
	}
	if len(s) < 4 {
		more := !final && (len(s) < 2 || s[1] == 'h') && (len(s) < 3 || bytes.IndexByte([]byte("pousr"), s[2]) >= 0)
		return 0, "", more
	}
	if s[1] != 'h' || bytes.IndexByte([]byte("pousr"), s[2]) < 0 || s[3] != '_' {
		return 0, "", false
	}
	end, more := body(s, 4, isAlnum, final)
	if more {
		return 0, "", true
	}
	if end-4 >= minGitHubClassic {
		return end, KindGitHubToken, false
	}
	return 0, "", false
}

func matchAWS(s []byte, final bool) (int, string, bool) {
	okK, moreK := prefix(s, "AKIA")
	okS, moreS := prefix(s, "ASIA")
	if !okK && !okS {
		return 0, "", (moreK || moreS) && !final
	}
	end, more := body(s, 4, isUpperDigit, final)
	switch {
	case more && end-4 <= awsIDLen:
		return 0, "", true
	case end-4 != awsIDLen:
		return 0, "", false
	case end < len(s) && isAlnum(s[end]): // a lower-case letter glued to it
		return 0, "", false
	}
	return end, KindAWSKeyID, false
}

func matchSlack(s []byte, final bool) (int, string, bool) {
	if len(s) < 5 {
		more := !final
		for i, c := range s {
			switch {
			case i < 3 && c != "xox"[i], i == 3 && bytes.IndexByte([]byte("abprs"), c) < 0:
				more = false
			}
		}
		return 0, "", more
	}
	if string(s[:3]) != "xox" || bytes.IndexByte([]byte("abprs"), s[3]) < 0 || s[4] != '-' {
		return 0, "", false
	}
	end, more := body(s, 5, isSlack, final)
	if more {
		return 0, "", true
	}
	if end-5 >= minSlack {
		return end, KindSlackToken, false
	}
	return 0, "", false
}

func matchJWT(s []byte, final bool) (int, string, bool) {
	if ok, more := prefix(s, "eyJ"); !ok {
		return 0, "", more && !final
	}
	h, more := body(s, 0, isB64URL, final)
	switch {
	case more:
		return 0, "", true
	case h < minJWTHeader:
		return 0, "", false
	case h == len(s): // final
		return 0, "", false
	case s[h] != '.':
		return 0, "", false
	}
	p, more := body(s, h+1, isB64URL, final)
	switch {
	case more:
		return 0, "", true
	case p-h-1 < minJWTPayload:
		return 0, "", false
	case p == len(s):
		return 0, "", false
	case s[p] != '.':
		return 0, "", false
	}
	sig, more := body(s, p+1, isB64URL, final)
	if more {
		return 0, "", true
	}
	return sig, KindJWT, false
}

// matchPEM matches a private key block. Without an END line the block
// runs to the end of the text when final; otherwise more.
func matchPEM(s []byte, final bool) (int, string, bool) {
	const begin = "-----BEGIN "
	if ok, more := prefix(s, begin); !ok {
		return 0, "", more && !final
	}
	label := run(s[len(begin):], isPEMLabel)
	at := len(begin) + label
	if label > maxPEMLabel {
		return 0, "", false
	}
	if ok, more := prefix(s[at:], "-----"); !ok {
		return 0, "", more && !final
	}
	if l := s[len(begin):at]; !bytes.HasSuffix(l, []byte("PRIVATE KEY")) && !bytes.HasSuffix(l, []byte("PRIVATE KEY BLOCK")) {
		return 0, "", false
	}
	if end := pemEnd(s[at+5:]); end >= 0 {
		return at + 5 + end, KindPrivateKey, false
	}
	if !final {
		return 0, "", true
	}
	return len(s), KindPrivateKey, false
}

// pemEnd returns the length of s through the first "-----END …-----", or
// -1 when s holds none (yet).
func pemEnd(s []byte) int {
	const end = "-----END "
	i := bytes.Index(s, []byte(end))
	if i < 0 {
		return -1
	}
	j := bytes.Index(s[i+len(end):], []byte("-----"))
	if j < 0 {
		return -1
	}
	return i + len(end) + j + 5
}
