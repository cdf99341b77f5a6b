package inbox

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"sync"
	"time"
)

// Cookie names. Over TLS the session cookie takes the __Host- prefix, which
// a browser accepts only when it is Secure, host-only and Path=/, so no
// other host can plant or shadow it.
const (
	cookieName       = "norma_inbox"
	secureCookieName = "__Host-norma_inbox"
	// preCookieName carries the sign-in form's token before there is a
	// session (double submit: the form's field must equal it).
	preCookieName       = "norma_inbox_signin"
	securePreCookieName = "__Host-norma_inbox_signin"
)

// maxSessions bounds the sessions kept; signing in beyond it drops the
// session closest to its end.
const maxSessions = 4096

// session is one signed-in browser. token is the bearer token it signed
// in with, kept (in memory only, never logged or sent back) to
// authenticate it again on every request.
type session struct {
	token   string
	csrf    string
	expires time.Time
}

// sessions is the in-memory session table.
type sessions struct {
	mu  sync.Mutex
	m   map[string]*session
	ttl time.Duration
	now func() time.Time
}

// randomToken returns 256 random bits, base64url: a session id or a CSRF
// token.
func randomToken() string {
	b := make([]byte, 32)
	rand.Read(b) // never fails (crypto/rand, Go 1.24 and later)
	return base64.RawURLEncoding.EncodeToString(b)
}

// equal compares two secrets in time that does not depend on where they
// differ; an empty secret never matches.
func equal(a, b string) bool {
	return a != "" && subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

// create starts a session for token and returns its id.
func (s *sessions) create(token string) (string, *session) {
	id := randomToken()
	ss := &session{token: token, csrf: randomToken(), expires: s.now().Add(s.ttl)}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sweep()
	if len(s.m) >= maxSessions {
		var oldest string
		for k, v := range s.m {
			if oldest == "" || v.expires.Before(s.m[oldest].expires) {
				oldest = k
			}
		}
		delete(s.m, oldest)
	}
	s.m[id] = ss
	return id, ss
}

// sweep drops expired sessions; s.mu is held.
func (s *sessions) sweep() {
	now := s.now()
	for k, v := range s.m {
		if !now.Before(v.expires) {
			delete(s.m, k)
		}
	}
}

// get returns the live session id names, or nil.
func (s *sessions) get(id string) *session {
	if id == "" {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ss := s.m[id]
	if ss == nil {
		return nil
	}
	if !s.now().Before(ss.expires) {
		delete(s.m, id)
		return nil
	}
	return ss
}

// end forgets a session.
func (s *sessions) end(id string) {
	s.mu.Lock()
	delete(s.m, id)
	s.mu.Unlock()
}

// secure reports whether r came over TLS: its cookies are then Secure.
func secure(r *http.Request) bool { return r.TLS != nil }

func sessionCookieName(r *http.Request) string {
	if secure(r) {
		return secureCookieName
	}
	return cookieName
}

func preCookie(r *http.Request) string {
	if secure(r) {
		return securePreCookieName
	}
	return preCookieName
}

// setCookie sets (maxAge > 0) or clears (maxAge < 0) a cookie with the
// inbox's attributes: HttpOnly, SameSite=Strict, Path=/, Secure over TLS.
func setCookie(w http.ResponseWriter, r *http.Request, name, value string, maxAge int) {
	http.SetCookie(w, &http.Cookie{
		Name: name, Value: value, Path: "/", MaxAge: maxAge,
		HttpOnly: true, Secure: secure(r), SameSite: http.SameSiteStrictMode,
	})
}

// cookie returns the value of the named cookie of r, or "".
func cookie(r *http.Request, name string) string {
	c, err := r.Cookie(name)
	if err != nil {
		return ""
	}
	return c.Value
}
