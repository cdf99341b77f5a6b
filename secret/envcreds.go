package secret

import "strings"

// AddEnvironment registers, as known values, the credentials of an
// environment (KEY=VALUE entries, as os.Environ gives them) that Norma
// withholds from what it runs: the value of every variable whose name is
// a credential's ([CredentialKey]: TOKEN, SECRET, PASSWORD, API_KEY, …)
// when it looks generated (a token of a known format, or at least 12
// bytes of high entropy; not a path). Each is named "env_" and the
// variable's name in lower case, so a finding or a mask says which
// variable it was, never the value. It returns how many it added.
//
// The sandbox starts tools with an environment of their own, so these
// values never reach them; knowing them keeps one the agent learned some
// other way (a file, a command's output) from leaving through an exit or
// showing in output.
func (r *Redactor) AddEnvironment(environ []string) int {
	n := 0
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" || !CredentialKey(k) || len(v) < 12 || strings.ContainsAny(v[:1], "/.~") {
			continue
		}
		if !highEntropy([]byte(v)) && tokensIn(v) == 0 {
			continue
		}
		if err := r.AddValue(envName(k), NewValue([]byte(v))); err == nil {
			n++
		}
	}
	return n
}

// tokensIn counts the token-format findings in s as written, with no
// normalization.
func tokensIn(s string) int {
	var d detection
	d.m = (*Redactor)(nil).matcher(detectSet)
	d.tokens([]byte(s), "")
	return len(d.found)
}

// envName is a variable's name as a secret's: "env_" and its name in
// lower case, anything but [a-z0-9_] an underscore, at most 64 bytes.
func envName(k string) string {
	b := []byte("env_")
	for i := 0; i < len(k) && len(b) < 64; i++ {
		c := k[i]
		switch {
		case 'A' <= c && c <= 'Z':
			c += 'a' - 'A'
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '_':
		default:
			c = '_'
		}
		b = append(b, c)
	}
	return string(b)
}
