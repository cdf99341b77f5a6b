package daemon

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"syscall"

	"github.com/norma-run/norma/internal/loopback"
)

// tokenPrefix marks a daemon token, so secret scanners and people can tell
// what a leaked one is.
const tokenPrefix = "norma_serve_"

// Token is the bearer token of the daemon's HTTP listener. It never
// prints: String and LogValue redact it.
type Token struct{ secret string }

// String redacts the token.
func (Token) String() string { return "REDACTED_TOKEN" }

// LogValue redacts the token.
func (Token) LogValue() slog.Value { return slog.StringValue("REDACTED_TOKEN") }

// Matches reports whether got is the token, in time that does not depend
// on where they differ.
func (t Token) Matches(got string) bool {
	return t.secret != "" && subtle.ConstantTimeCompare([]byte(got), []byte(t.secret)) == 1
}

// LoadToken reads the token kept at path, creating it (256 random bits,
// mode 0600) when there is none. A token file that is not a regular file
// of this uid, or that others may read, is refused: the token it holds may
// be known, so it must be removed (a new one is then made).
func LoadToken(path string) (tok Token, created bool, err error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err == nil {
		defer f.Close()
		b := make([]byte, 32)
		rand.Read(b)
		s := tokenPrefix + base64.RawURLEncoding.EncodeToString(b)
		if _, err := io.WriteString(f, s+"\n"); err != nil {
			return Token{}, false, fmt.Errorf("daemon: writing the token: %w", err)
		}
		if err := f.Sync(); err != nil {
			return Token{}, false, fmt.Errorf("daemon: writing the token: %w", err)
		}
		return Token{s}, true, nil
	}
	if !errors.Is(err, fs.ErrExist) {
		return Token{}, false, fmt.Errorf("daemon: creating the token: %w", err)
	}
	f, err = os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		return Token{}, false, fmt.Errorf("daemon: reading the token: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return Token{}, false, fmt.Errorf("daemon: reading the token: %w", err)
	}
	st, _ := fi.Sys().(*syscall.Stat_t)
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o077 != 0 || st == nil || int(st.Uid) != os.Getuid() {
		return Token{}, false, fmt.Errorf("daemon: the token file %s is not a private file of this user (mode %v); remove it and a new token is made", path, fi.Mode())
	}
	b, err := io.ReadAll(io.LimitReader(f, 1024))
	if err != nil {
		return Token{}, false, fmt.Errorf("daemon: reading the token: %w", err)
	}
	s := strings.TrimSpace(string(b))
	if len(s) < len(tokenPrefix)+32 || !strings.HasPrefix(s, tokenPrefix) {
		return Token{}, false, fmt.Errorf("daemon: the token file %s does not hold a token; remove it and a new one is made", path)
	}
	return Token{s}, false, nil
}

// Guard is the guard of a loopback HTTP listener ([ListenLoopback]). It
// refuses, before the route runs:
//   - a browser request (an Origin or Sec-Fetch-* header), 403: no page
//     of any site may drive the daemon, even one on loopback;
//   - a Host that is not a loopback IP or "localhost", 421: a DNS
//     rebinding page reaches 127.0.0.1 under its own name;
//   - a request without "Authorization: Bearer TOKEN", 401.
//
// log, when not nil, is told of each refusal (the status and why, never a
// header's value): an http hook that is refused goes on unchecked, so the
// operator has to see it.
func Guard(tok Token, log func(line string)) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			refuse := func(code int, why string) {
				if log != nil {
					log(fmt.Sprintf("refused %s %s via http: %d, %s", r.Method, r.URL.Path, code, why))
				}
				if code == http.StatusUnauthorized {
					w.Header().Set("WWW-Authenticate", `Bearer realm="norma serve"`)
				}
				http.Error(w, why, code)
			}
			if fromBrowser(r) {
				refuse(http.StatusForbidden, "browser requests are refused")
				return
			}
			if !loopback.Host(r.Host) {
				refuse(http.StatusMisdirectedRequest, "the Host header must name a loopback address")
				return
			}
			scheme, auth, _ := strings.Cut(r.Header.Get("Authorization"), " ")
			if !strings.EqualFold(scheme, "Bearer") || !tok.Matches(strings.TrimSpace(auth)) {
				refuse(http.StatusUnauthorized, "a valid bearer token is required")
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// fromBrowser reports whether r carries the headers browsers add to every
// request a page makes (fetch, forms, navigations); agents' hook clients
// send none of them.
func fromBrowser(r *http.Request) bool {
	if r.Header.Get("Origin") != "" {
		return true
	}
	for k := range r.Header {
		if strings.HasPrefix(k, "Sec-Fetch-") {
			return true
		}
	}
	return false
}
