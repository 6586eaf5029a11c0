package ops

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/finsync/finsync/storage"
)

// Cookie and form names.
const (
	sessionCookie = "finsync_ops"
	csrfField     = "csrf"
	tokenField    = "token"
)

// sessionTTL is how long a sign-in lasts.
const sessionTTL = 12 * time.Hour

// sessionIDBytes is the size of a session id; the cookie holds it in
// unpadded base64url.
const sessionIDBytes = 32

// authenticator checks the operator credential. The session cookie holds
// a random id, never the token; the session itself is a row of
// ops_sessions (storage), read on every request by every serve process,
// so a sign-out anywhere ends it everywhere at once, and a session counts
// only under the token it was made with.
type authenticator struct {
	token []byte
	// fingerprint binds sessions to the token: an HMAC of a fixed text
	// keyed by the token, which reveals nothing of it.
	fingerprint []byte
	store       *storage.Store
	now         func() time.Time
}

func newAuthenticator(token string, store *storage.Store, now func() time.Time) *authenticator {
	a := &authenticator{token: []byte(token), store: store, now: now}
	a.fingerprint = a.macBytes("finsync ops session token fingerprint")
	return a
}

// how says how a request proved itself.
type how int

const (
	unauthenticated how = iota
	byBearer
	bySession
)

func (a *authenticator) macBytes(msg string) []byte {
	h := hmac.New(sha256.New, a.token)
	h.Write([]byte(msg))
	return h.Sum(nil)
}

// mac is the HMAC-SHA256 of msg keyed by the token, in hex.
func (a *authenticator) mac(msg string) string { return hex.EncodeToString(a.macBytes(msg)) }

// tokenMatches compares a presented token with the operator token in
// constant time (over their digests, so lengths leak nothing either).
func (a *authenticator) tokenMatches(given string) bool {
	g, w := sha256.Sum256([]byte(given)), sha256.Sum256(a.token)
	return subtle.ConstantTimeCompare(g[:], w[:]) == 1
}

// bearerToken returns the token of an Authorization header and whether
// the request carries one at all (any scheme: a wrong scheme is a failed
// attempt, not an absent one).
func bearerToken(r *http.Request) (token string, present bool) {
	authz := r.Header.Get("Authorization")
	if authz == "" {
		return "", false
	}
	scheme, tok, _ := strings.Cut(authz, " ")
	if !strings.EqualFold(scheme, "Bearer") {
		return "", true
	}
	return strings.TrimSpace(tok), true
}

// sessionHash parses a cookie value into the stored hash of its id; ok is
// false when it cannot be one of ours (no database read then).
func sessionHash(v string) ([]byte, bool) {
	raw, err := base64.RawURLEncoding.Strict().DecodeString(v)
	if err != nil || len(raw) != sessionIDBytes {
		return nil, false
	}
	h := sha256.Sum256(raw)
	return h[:], true
}

// newSession records a session valid for sessionTTL and returns its
// cookie value.
func (a *authenticator) newSession(ctx context.Context) (string, error) {
	id := make([]byte, sessionIDBytes)
	if _, err := rand.Read(id); err != nil {
		return "", fmt.Errorf("make ops session id: %w", err)
	}
	v := base64.RawURLEncoding.EncodeToString(id)
	h, _ := sessionHash(v)
	if err := a.store.CreateOpsSession(ctx, h, a.fingerprint, a.now().Add(sessionTTL)); err != nil {
		return "", err
	}
	return v, nil
}

// validSession reports whether a session cookie value names a live
// session of this token.
func (a *authenticator) validSession(ctx context.Context, v string) (bool, error) {
	h, ok := sessionHash(v)
	if !ok {
		return false, nil
	}
	return a.store.IsOpsSessionValid(ctx, h, a.fingerprint, a.now())
}

// endSession revokes the session of a cookie value.
func (a *authenticator) endSession(ctx context.Context, v string) error {
	h, ok := sessionHash(v)
	if !ok {
		return nil
	}
	return a.store.RevokeOpsSession(ctx, h)
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
