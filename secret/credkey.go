package secret

import (
	"net/url"
	"strings"
	"unicode"
)

// credentialWords are the parts of a name that make its value a
// credential: password, passwd, passphrase, sslpassword, pass, pwd,
// secret, client_secret, token, access_token, key, apikey, sslkey,
// auth, authorization, credentials, sig (a signed URL's), jwt, cookie,
// session.
var credentialWords = []string{"pass", "pwd", "secret", "token", "key", "auth", "cred", "sig", "jwt", "cookie", "session"}

// CredentialKey reports whether a parameter, field, header or variable
// named name may hold a credential: whether name, unescaped as in a query
// and folded to lower case (every case: "PASSWORD", "PaSs", "paſs" with a
// long s), contains one of the words of a credential's name. A name that
// does not unescape counts as a credential's. It is the one answer to
// that question: store.Redact hides such a parameter's value, and the
// detector ([Redactor.Detect]) looks for a high-entropy value after such
// a name.
func CredentialKey(name string) bool {
	n, err := url.QueryUnescape(name)
	if err != nil {
		return true
	}
	return credentialName(n)
}

// credentialName is CredentialKey on a name that needs no unescaping.
func credentialName(n string) bool {
	if nonCredentialName([]byte(n)) {
		return false
	}
	ascii := true
	for i := 0; i < len(n); i++ {
		if n[i] >= 0x80 {
			ascii = false
			break
		}
	}
	if ascii {
		var buf [64]byte
		if len(n) <= len(buf) {
			b := buf[:len(n)]
			for i := 0; i < len(n); i++ {
				c := n[i]
				if 'A' <= c && c <= 'Z' {
					c += 'a' - 'A'
				}
				b[i] = c
			}
			n = string(b) // does not escape: compared below
		} else {
			n = strings.ToLower(n)
		}
	} else {
		n = strings.Map(func(r rune) rune { return unicode.ToLower(unicode.ToUpper(r)) }, n)
	}
	for _, w := range credentialWords {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}
