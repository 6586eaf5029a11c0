package enablebankingsim

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/finsync/finsync/providers/sim"
	"github.com/finsync/finsync/providers/sim/simkit"
)

// aspsp is a bank the simulated API offers.
type aspsp struct {
	Name    string `json:"name"`
	Country string `json:"country"`
	BIC     string `json:"bic"`
	Logo    string `json:"logo"`
	// MaxConsent is maximum_consent_validity, in seconds.
	MaxConsent int64 `json:"maximum_consent_validity"`
}

// banks are the ASPSPs sessions are spread over (read-only).
var banks = [...]aspsp{
	{"Nordea", "FI", "NDEAFIHH", "https://enablebanking.com/brands/FI/Nordea/", 180 * 86400},
	{"OP", "FI", "OKOYFIHH", "https://enablebanking.com/brands/FI/OP/", 180 * 86400},
	{"Sparkasse Berlin", "DE", "BELADEBE", "https://enablebanking.com/brands/DE/Sparkasse/", 90 * 86400},
	{"Revolut", "LT", "REVOLT21", "https://enablebanking.com/brands/LT/Revolut/", 180 * 86400},
}

// demoSessionDays is how long a session of the demo application that the
// link flow did not create (Credentials) lasts from the simulator's start.
const demoSessionDays = 180

// authRequest is a POST /auth waiting for the user, then its code.
type authRequest struct {
	app, redirect, state, psuType string
	bank                          aspsp
	validUntil                    time.Time
}

// session is a session, created by the link flow or, for the demo
// application, on first use of a session id.
type session struct {
	id, app, psuType string
	// data is the session whose accounts and transactions this one shows:
	// its own id, but for a demo session that re-links another
	// (relinkedSession), the first one's.
	data       string
	bank       aspsp
	validUntil time.Time
	closed     atomic.Bool
}

// status is the session's status at the simulated instant now.
func (s *session) status(h *sim.Simulator, now time.Time) string {
	switch {
	case s.closed.Load():
		return "CLOSED"
	case !now.Before(s.validUntil) || h.ActiveFault(Name).Mode == sim.FaultLoginRequired:
		return "EXPIRED"
	}
	return "AUTHORIZED"
}

// signed checks the request's JWT and serves it with the application id:
// RS256 signed by a known application (kid), iss and aud as documented,
// not expired on the wall clock, exp at most 24 hours after iat.
func (s *server) signed(next func(http.ResponseWriter, *http.Request, string)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		raw, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok {
			writeError(w, http.StatusUnauthorized, "UNAUTHORIZED", "Authorization header with a Bearer JWT required")
			return
		}
		var claims jwt.RegisteredClaims
		tok, err := jwt.ParseWithClaims(strings.TrimSpace(raw), &claims, func(t *jwt.Token) (any, error) {
			kid, _ := t.Header["kid"].(string)
			s.mu.Lock()
			key := s.apps[kid]
			s.mu.Unlock()
			if key == nil {
				return nil, errors.New("unknown application (kid)")
			}
			return key, nil
		}, jwt.WithValidMethods([]string{"RS256"}), jwt.WithTimeFunc(s.h.Now), jwt.WithIssuedAt(),
			jwt.WithExpirationRequired(), jwt.WithIssuer("enablebanking.com"), jwt.WithAudience("api.enablebanking.com"))
		if err != nil {
			writeError(w, http.StatusUnauthorized, "UNAUTHORIZED", "Invalid JWT: "+err.Error())
			return
		}
		if claims.IssuedAt == nil || claims.ExpiresAt.Sub(claims.IssuedAt.Time) > MaxTokenLife*time.Second {
			writeError(w, http.StatusUnauthorized, "UNAUTHORIZED", "Invalid JWT: exp must be at most 24 hours after iat")
			return
		}
		kid, _ := tok.Header["kid"].(string)
		next(w, r, kid)
	}
}

// mintApplication serves GET /_sim/enablebanking/credentials: a fresh
// application the simulator accepts, with its private key (PKCS #8 PEM).
func (s *server) mintApplication(w http.ResponseWriter, _ *http.Request) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "INTERNAL_ERROR", err.Error())
		return
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "INTERNAL_ERROR", err.Error())
		return
	}
	s.mu.Lock()
	s.minted++
	id := simkit.UUIDFrom(simkit.Hash2(s.h.Seed()^0xa99, s.minted))
	s.apps[id] = &key.PublicKey
	s.mu.Unlock()
	simkit.WriteJSON(w, http.StatusOK, map[string]string{
		"application_id": id,
		"private_key":    string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
	})
}

// application serves GET /application.
func (s *server) application(w http.ResponseWriter, _ *http.Request, app string) {
	simkit.WriteJSON(w, http.StatusOK, map[string]any{
		"name": "finsync simulated application", "description": "", "kid": app, "environment": "SANDBOX",
		"redirect_urls": []string{}, "active": true, "countries": []string{"DE", "FI", "LT"}, "services": []string{"AIS"},
	})
}

// aspsps serves GET /aspsps[?country=XX].
func (s *server) aspsps(w http.ResponseWriter, r *http.Request, _ string) {
	country := strings.ToUpper(r.URL.Query().Get("country"))
	out := []map[string]any{}
	for _, b := range banks {
		if country == "" || b.Country == country {
			out = append(out, map[string]any{"name": b.Name, "country": b.Country, "bic": b.BIC, "logo": b.Logo,
				"maximum_consent_validity": b.MaxConsent, "psu_types": []string{"personal", "business"},
				"auth_methods": []any{}, "beta": false})
		}
	}
	simkit.WriteJSON(w, http.StatusOK, map[string]any{"aspsps": out})
}

// bankNamed returns the ASPSP of that name and country.
func bankNamed(name, country string) (aspsp, bool) {
	for _, b := range banks {
		if b.Name == name && strings.EqualFold(b.Country, country) {
			return b, true
		}
	}
	return aspsp{}, false
}

// startAuth serves POST /auth: it records the request and answers the URL
// where the user authorises, which redirects back with a code.
func (s *server) startAuth(w http.ResponseWriter, r *http.Request, app string) {
	var req struct {
		ASPSP       struct{ Name, Country string } `json:"aspsp"`
		RedirectURL string                         `json:"redirect_url"`
		State       string                         `json:"state"`
		PSUType     string                         `json:"psu_type"`
		Access      struct {
			ValidUntil string `json:"valid_until"`
		} `json:"access"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "WRONG_REQUEST_PARAMETERS", "invalid JSON body: "+err.Error())
		return
	}
	bank, ok := bankNamed(req.ASPSP.Name, req.ASPSP.Country)
	if !ok {
		writeError(w, http.StatusNotFound, "ASPSP_NOT_FOUND", "ASPSP "+req.ASPSP.Name+" ("+req.ASPSP.Country+") not found")
		return
	}
	redirect, err := url.Parse(req.RedirectURL)
	until, err2 := time.Parse(time.RFC3339Nano, req.Access.ValidUntil)
	now := s.h.WallNow()
	if err != nil || (redirect.Scheme != "http" && redirect.Scheme != "https") || err2 != nil || !until.After(now) {
		writeError(w, http.StatusUnprocessableEntity, "WRONG_REQUEST_PARAMETERS", "redirect_url must be an http(s) URL and access.valid_until a future RFC 3339 time")
		return
	}
	if longest := now.Add(time.Duration(bank.MaxConsent) * time.Second); until.After(longest) {
		until = longest
	}
	until = until.UTC()
	s.mu.Lock()
	s.minted++
	id := simkit.UUIDFrom(simkit.Hash2(s.h.Seed()^0xa07, s.minted))
	s.auths[id] = authRequest{app: app, redirect: req.RedirectURL, state: req.State, psuType: req.PSUType, bank: bank, validUntil: until}
	s.mu.Unlock()
	simkit.WriteJSON(w, http.StatusOK, map[string]string{
		"url": "http://" + r.Host + "/enablebanking/_bank/authorize/" + id, "authorization_id": id,
		"psu_id_hash": simkit.UUIDFrom(simkit.Hash2(0x9501, s.minted)),
	})
}

// authorize is the bank's page: the user consents at once and is sent to
// the redirect URL with a one-time code and the state.
func (s *server) authorize(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	a, ok := s.auths[r.PathValue("id")]
	delete(s.auths, r.PathValue("id"))
	s.minted++
	code := simkit.UUIDFrom(simkit.Hash2(s.h.Seed()^0xc0de, s.minted))
	if ok {
		s.codes[code] = a
	}
	s.mu.Unlock()
	if !ok {
		http.Error(w, "Unknown or used authorization", http.StatusNotFound)
		return
	}
	u, _ := url.Parse(a.redirect)
	q := u.Query()
	q.Set("code", code)
	q.Set("state", a.state)
	u.RawQuery = q.Encode()
	http.Redirect(w, r, u.String(), http.StatusFound)
}

// createSession serves POST /sessions {code}: the code is spent once, by
// the application that started the authorisation.
func (s *server) createSession(w http.ResponseWriter, r *http.Request, app string) {
	var req struct {
		Code string `json:"code"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "WRONG_REQUEST_PARAMETERS", "invalid JSON body: "+err.Error())
		return
	}
	s.mu.Lock()
	a, ok := s.codes[req.Code]
	if ok && a.app == app {
		delete(s.codes, req.Code)
	}
	s.minted++
	id := simkit.UUIDFrom(simkit.Hash2(s.h.Seed()^0x5e5, s.minted))
	if ok && a.app == app {
		s.sessions[id] = &session{id: id, data: id, app: app, psuType: a.psuType, bank: a.bank, validUntil: a.validUntil}
	}
	sess := s.sessions[id]
	s.mu.Unlock()
	if sess == nil {
		writeError(w, http.StatusUnprocessableEntity, "WRONG_AUTHORIZATION_CODE", "Authorization code is unknown, used or of another application")
		return
	}
	accounts := make([]map[string]any, 0, accountCount)
	for k, uid := range s.register(sess) {
		accounts = append(accounts, s.accountResource(sess, k, uid))
	}
	simkit.WriteJSON(w, http.StatusOK, map[string]any{
		"session_id": id, "accounts": accounts, "aspsp": map[string]string{"name": sess.bank.Name, "country": sess.bank.Country},
		"psu_type": sess.psuType, "access": map[string]string{"valid_until": sess.validUntil.Format(time.RFC3339)},
	})
}

// sessionOf returns the application's session id, creating a demo
// application's session on first use; nil when it is unknown or another
// application's.
func (s *server) sessionOf(id, app string) *session {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sess, ok := s.sessions[id]; ok {
		if sess.app != app {
			return nil
		}
		return sess
	}
	if app != DemoApplicationID || !simkit.IsUUID(id) {
		return nil
	}
	data, _ := splitSession(id)
	seed := s.h.ConnSeed(Name, data)
	sess := &session{id: id, data: data, app: app, psuType: "personal", bank: banks[simkit.Pick(simkit.Hash2(seed, 1), len(banks))],
		validUntil: s.h.DateOf(demoSessionDays)}
	s.sessions[id] = sess
	return sess
}

// getSession serves GET /sessions/{id}.
func (s *server) getSession(w http.ResponseWriter, r *http.Request, app string) {
	sess := s.sessionOf(r.PathValue("id"), app)
	if sess == nil {
		writeError(w, http.StatusNotFound, "SESSION_DOES_NOT_EXIST", "Session "+r.PathValue("id")+" not found")
		return
	}
	uids := s.register(sess)
	data := make([]map[string]string, len(uids))
	for k, uid := range uids {
		data[k] = map[string]string{"uid": uid, "identification_hash": strconv.FormatUint(simkit.Hash2(0x1d, uint64(k)), 16)}
	}
	simkit.WriteJSON(w, http.StatusOK, map[string]any{
		"status": sess.status(s.h, s.h.WallNow()), "accounts": uids, "accounts_data": data,
		"aspsp": map[string]string{"name": sess.bank.Name, "country": sess.bank.Country}, "psu_type": sess.psuType,
		"access": map[string]string{"valid_until": sess.validUntil.Format(time.RFC3339)},
	})
}

// closeSession serves DELETE /sessions/{id}: the session ends for good.
func (s *server) closeSession(w http.ResponseWriter, r *http.Request, app string) {
	sess := s.sessionOf(r.PathValue("id"), app)
	if sess == nil {
		writeError(w, http.StatusNotFound, "SESSION_DOES_NOT_EXIST", "Session "+r.PathValue("id")+" not found")
		return
	}
	sess.closed.Store(true)
	simkit.WriteJSON(w, http.StatusOK, map[string]string{"message": "OK"})
}
