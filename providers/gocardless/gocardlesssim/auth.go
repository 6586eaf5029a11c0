package gocardlesssim

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/finsync/finsync/providers/sim/simkit"
)

// gcError is GoCardless's error body.
type gcError struct {
	Summary string `json:"summary"`
	Detail  string `json:"detail"`
	Type    string `json:"type,omitempty"`
}

// writeGCError writes a GoCardless error body with its status code.
func writeGCError(w http.ResponseWriter, status int, e gcError) {
	simkit.WriteJSON(w, status, struct {
		gcError
		StatusCode int `json:"status_code"`
	}{e, status})
}

// writeGCFieldError writes a GoCardless validation error keyed by field.
func writeGCFieldError(w http.ResponseWriter, field, summary, detail string) {
	simkit.WriteJSON(w, http.StatusBadRequest, map[string]any{
		field:         map[string]string{"summary": summary, "detail": detail},
		"status_code": http.StatusBadRequest,
	})
}

// jwtClaims is the payload of the simulator's GoCardless tokens.
type jwtClaims struct {
	TokenType string `json:"token_type"`
	Exp       int64  `json:"exp"`
	Iat       int64  `json:"iat"`
	Jti       string `json:"jti"`
	SecretID  string `json:"secret_id"`
}

// issueJWT returns a signed HS256 JWT for the claims.
func (s *server) issueJWT(c jwtClaims) string {
	enc := base64.RawURLEncoding
	head := enc.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT"}`))
	body, _ := json.Marshal(c)
	msg := head + "." + enc.EncodeToString(body)
	return msg + "." + enc.EncodeToString(s.sign(msg))
}

// sign returns the HMAC-SHA256 of msg under the simulator's key.
func (s *server) sign(msg string) []byte {
	m := hmac.New(sha256.New, s.jwtKey)
	_, _ = m.Write([]byte(msg))
	return m.Sum(nil)
}

// parseJWT verifies a token's signature, type and expiry.
func (s *server) parseJWT(tok, typ string) (jwtClaims, bool) {
	p := strings.Split(tok, ".")
	if len(p) != 3 {
		return jwtClaims{}, false
	}
	sig, err := base64.RawURLEncoding.DecodeString(p[2])
	if err != nil || !hmac.Equal(sig, s.sign(p[0]+"."+p[1])) {
		return jwtClaims{}, false
	}
	body, err := base64.RawURLEncoding.DecodeString(p[1])
	if err != nil {
		return jwtClaims{}, false
	}
	var c jwtClaims
	if json.Unmarshal(body, &c) != nil || c.TokenType != typ || s.h.Now().Unix() >= c.Exp {
		return jwtClaims{}, false
	}
	return c, true
}

// issueAccess returns a fresh access token for a secret id.
func (s *server) issueAccess(secretID string) string {
	now := s.h.Now()
	return s.issueJWT(jwtClaims{TokenType: "access", Iat: now.Unix(), Exp: now.Add(s.accessTTL()).Unix(),
		Jti: string(simkit.AppendHex(nil, simkit.Mix(uint64(now.UnixNano())), 32)), SecretID: secretID})
}

// gcTokenNew serves POST /api/v2/token/new/.
func (s *server) gcTokenNew(w http.ResponseWriter, r *http.Request) {
	s.gcGlobalLimitHeaders(w)
	var req struct {
		SecretID  string `json:"secret_id"`
		SecretKey string `json:"secret_key"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeGCError(w, http.StatusBadRequest, gcError{Summary: "Invalid request", Detail: "JSON parse error - " + err.Error()})
		return
	}
	switch {
	case req.SecretID == "":
		writeGCFieldError(w, "secret_id", "This field is required.", "This field is required.")
		return
	case req.SecretKey == "":
		writeGCFieldError(w, "secret_key", "This field is required.", "This field is required.")
		return
	case !simkit.IsToken(req.SecretID, 8, 128) || !simkit.IsToken(req.SecretKey, 16, 256):
		writeGCError(w, http.StatusUnauthorized, gcError{Summary: "Authentication failed", Detail: "No active account found with the given credentials"})
		return
	}
	now := s.h.Now()
	refresh := s.issueJWT(jwtClaims{TokenType: "refresh", Iat: now.Unix(), Exp: now.Add(s.refreshTTL()).Unix(),
		Jti: string(simkit.AppendHex(nil, simkit.Mix(uint64(now.UnixNano())+1), 32)), SecretID: req.SecretID})
	simkit.WriteJSON(w, http.StatusOK, map[string]any{
		"access": s.issueAccess(req.SecretID), "access_expires": int64(s.accessTTL().Seconds()),
		"refresh": refresh, "refresh_expires": int64(s.refreshTTL().Seconds()),
	})
}

// gcTokenRefresh serves POST /api/v2/token/refresh/.
func (s *server) gcTokenRefresh(w http.ResponseWriter, r *http.Request) {
	s.gcGlobalLimitHeaders(w)
	var req struct {
		Refresh string `json:"refresh"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Refresh == "" {
		writeGCFieldError(w, "refresh", "This field is required.", "This field is required.")
		return
	}
	c, ok := s.parseJWT(req.Refresh, "refresh")
	if !ok {
		writeGCError(w, http.StatusUnauthorized, gcError{Summary: "Invalid token", Detail: "Token is invalid or expired"})
		return
	}
	simkit.WriteJSON(w, http.StatusOK, map[string]any{
		"access": s.issueAccess(c.SecretID), "access_expires": int64(s.accessTTL().Seconds()),
	})
}

// gcAuthed wraps a GoCardless handler with access-token checking.
func (s *server) gcAuthed(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.gcGlobalLimitHeaders(w)
		auth := r.Header.Get("Authorization")
		tok, ok := strings.CutPrefix(auth, "Bearer ")
		if !ok || tok == "" {
			writeGCError(w, http.StatusUnauthorized, gcError{Summary: "Authentication credentials were not provided.", Detail: "Authentication credentials were not provided."})
			return
		}
		if _, ok := s.parseJWT(tok, "access"); !ok {
			writeGCError(w, http.StatusUnauthorized, gcError{Summary: "Invalid token", Detail: "Token is invalid or expired"})
			return
		}
		h(w, r)
	}
}

// gcGlobalLimitHeaders sets the company-wide rate-limit headers.
func (s *server) gcGlobalLimitHeaders(w http.ResponseWriter) {
	h := w.Header()
	setExact(h, "HTTP_X_RATELIMIT_LIMIT", "100")
	setExact(h, "HTTP_X_RATELIMIT_REMAINING", "99")
	setExact(h, "HTTP_X_RATELIMIT_RESET", "60")
}

// gcTime formats an instant as GoCardless does.
func gcTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000000Z") }

// setExact sets a header under its exact spelling: GoCardless's rate-limit
// headers are upper case with underscores, which canonicalisation would
// rewrite.
func setExact(h http.Header, key, value string) { h[key] = []string{value} }
