package ops

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// MinTokenLength is the shortest operator token accepted.
const MinTokenLength = 32

// ValidateToken reports whether token may be the operator credential: at
// least MinTokenLength characters, no white space, not one repeated
// character. It does not judge where the token came from.
func ValidateToken(token string) error {
	if len(token) < MinTokenLength {
		return fmt.Errorf("must be at least %d characters (make one with `openssl rand -hex 32`)", MinTokenLength)
	}
	if strings.ContainsAny(token, " \t\r\n") {
		return errors.New("must not contain white space")
	}
	if strings.Count(token, token[:1]) == len(token) {
		return errors.New("must not be one character repeated")
	}
	return nil
}

// Cookie and form names.
const (
	sessionCookie = "finsync_ops"
	csrfField     = "csrf"
	tokenField    = "token"
)

// sessionTTL is how long a sign-in lasts.
const sessionTTL = 12 * time.Hour

// authenticator checks the operator credential. The session cookie holds
// an expiry and an HMAC of it keyed by the token, never the token: every
// serve process with the same token accepts it, and changing the token
// ends every session.
type authenticator struct {
	token []byte
	now   func() time.Time
}

// how says how a request proved itself.
type how int

const (
	unauthenticated how = iota
	byBearer
	bySession
)

// mac is the HMAC-SHA256 of msg keyed by the token, in hex.
func (a *authenticator) mac(msg string) string {
	h := hmac.New(sha256.New, a.token)
	h.Write([]byte(msg))
	return hex.EncodeToString(h.Sum(nil))
}

// tokenMatches compares a presented token with the operator token in
// constant time (over their digests, so lengths leak nothing either).
func (a *authenticator) tokenMatches(given string) bool {
	g, w := sha256.Sum256([]byte(given)), sha256.Sum256(a.token)
	return subtle.ConstantTimeCompare(g[:], w[:]) == 1
}

// newSession returns a session cookie value valid for sessionTTL.
func (a *authenticator) newSession() string {
	exp := strconv.FormatInt(a.now().Add(sessionTTL).Unix(), 10)
	return exp + "." + a.mac("session|"+exp)
}

// validSession reports whether a session cookie value is one of ours and
// not expired.
func (a *authenticator) validSession(v string) bool {
	exp, sig, ok := strings.Cut(v, ".")
	if !ok {
		return false
	}
	if !hmac.Equal([]byte(sig), []byte(a.mac("session|"+exp))) {
		return false
	}
	unix, err := strconv.ParseInt(exp, 10, 64)
	return err == nil && a.now().Before(time.Unix(unix, 0))
}

// check says how r is authenticated: a bearer token first, else the
// session cookie.
func (a *authenticator) check(r *http.Request) (how, string) {
	if authz := r.Header.Get("Authorization"); authz != "" {
		scheme, tok, _ := strings.Cut(authz, " ")
		if strings.EqualFold(scheme, "Bearer") && a.tokenMatches(strings.TrimSpace(tok)) {
			return byBearer, ""
		}
		return unauthenticated, ""
	}
	c, err := r.Cookie(sessionCookie)
	if err == nil && a.validSession(c.Value) {
		return bySession, c.Value
	}
	return unauthenticated, ""
}

// csrfFor is the form token of a session: an HMAC of the session value,
// so a page of one session cannot post for another.
func (a *authenticator) csrfFor(session string) string {
	if session == "" {
		return ""
	}
	return a.mac("csrf|" + session)
}

// csrfOK reports whether a form posted with a session carries the
// session's CSRF token. Bearer requests need none: a browser never adds
// an Authorization header on its own.
func (a *authenticator) csrfOK(r *http.Request, h how, session string) bool {
	if h == byBearer {
		return true
	}
	return hmac.Equal([]byte(r.PostFormValue(csrfField)), []byte(a.csrfFor(session)))
}

// setSession sets the session cookie: Secure, HttpOnly, SameSite=Strict,
// for /ops only.
func setSession(w http.ResponseWriter, value string, maxAge int) {
	http.SetCookie(w, &http.Cookie{
		Name: sessionCookie, Value: value, Path: "/ops", MaxAge: maxAge,
		Secure: true, HttpOnly: true, SameSite: http.SameSiteStrictMode,
	})
}
