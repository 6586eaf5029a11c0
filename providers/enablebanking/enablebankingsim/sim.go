// Package enablebankingsim is Enable Banking's simulated API, mounted by
// the simulator host (package sim) under /enablebanking/. It behaves like
// the real API for any client: every request must carry an RS256 JWT
// signed by an application it knows (kid), at most 24 hours long and not
// expired; the link flow runs POST /auth → the bank's redirect with a code
// → POST /sessions; sessions end at their valid_until on the simulated
// clock; transactions page by continuation_key and pending rows book as
// the clock advances; each account allows Options.DailyQuota (default 4)
// unattended requests a simulated day per kind (balances, transactions),
// then answers 429. GET /_sim/enablebanking/credentials mints a fresh
// application the simulator accepts.
package enablebankingsim

import (
	"crypto/rsa"
	"encoding/json"
	"net/http"
	"strings"
	"sync"

	"github.com/golang-jwt/jwt/v5"

	"github.com/finsync/finsync/providers/sim"
	"github.com/finsync/finsync/providers/sim/simkit"
)

// Name is the provider's name, as the adapter's registry knows it.
const Name = "enablebanking"

// DemoApplicationID is the application every simulator knows (its key is
// demoKeyPEM); Credentials use it.
const DemoApplicationID = "5e1d0c4a-8f5b-4d0e-9a57-3c2b1f6e9d01"

// MaxTokenLife is the longest a JWT may live (exp - iat), as the API has it.
const MaxTokenLife = 24 * 60 * 60

// Sim is Enable Banking's simulated API. The zero value is ready to use and
// holds no state: the applications, authorisations and sessions of one
// simulator live in what Route builds.
type Sim struct{}

// Name returns the provider's name, Name.
func (Sim) Name() string { return Name }

// Prefix returns the path prefix the API lives under.
func (Sim) Prefix() string { return "/enablebanking/" }

// BaseURL returns the base URL an adapter uses for a simulator at root.
func (Sim) BaseURL(root string) string { return root + "/enablebanking" }

// ExtraFaults lists the fault modes supported beyond the host's.
func (Sim) ExtraFaults() []string { return nil }

// CredentialKey returns the distinguishing credential: the session id (a
// re-linking session's is the first session's, whose data it shows).
func (Sim) CredentialKey(c map[string]string) string {
	data, _ := splitSession(c["session_id"])
	return data
}

// Credentials returns credentials the simulator accepts, deterministic from
// name: the demo application and a session authorised for it. A name with
// a relink generation (simkit.SplitRelink) gives a new session of the same
// user at the same bank: new account uids, the same accounts
// (identification_hash, IBAN) and transactions.
func (Sim) Credentials(name string) json.RawMessage {
	base, gen := simkit.SplitRelink(name)
	return simkit.MustJSON(map[string]string{
		"application_id": DemoApplicationID,
		"private_key":    strings.TrimSpace(demoKeyPEM),
		"session_id":     relinkedSession(simkit.UUIDFrom(simkit.HashString(0x5eed, Name, base)), gen),
	})
}

// relinkDigits are the version digits of demo sessions' ids, by relink
// generation: a first session's id is a version-4 UUID; the same id with
// another version digit is a later session of the same user at the same
// bank.
const relinkDigits = "4012356789abcdef"

// relinkedSession returns the id of generation gen (0: id itself; past
// len(relinkDigits)-1 generations the digits repeat) of demo session id.
func relinkedSession(id string, gen uint64) string {
	if gen == 0 || len(id) != 36 {
		return id
	}
	d := relinkDigits[1+(gen-1)%uint64(len(relinkDigits)-1)]
	return id[:14] + string(d) + id[15:]
}

// splitSession returns the demo session whose data a session id shows and
// its relink generation (0 for a version-4 id or any other).
func splitSession(id string) (string, uint64) {
	if !simkit.IsUUID(id) || id[14] == '4' {
		return id, 0
	}
	i := strings.IndexByte(relinkDigits, id[14]|0x20)
	if i <= 0 {
		return id, 0
	}
	return id[:14] + "4" + id[15:], uint64(i)
}

// WriteFault answers an injected outage with 503 and a rate limit with
// 429 and Retry-After, in the API's error body.
func (Sim) WriteFault(w http.ResponseWriter, _ *http.Request, mode string) {
	if mode == sim.FaultRateLimit {
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusTooManyRequests, "TOO_MANY_REQUESTS", "Too many requests")
		return
	}
	writeError(w, http.StatusServiceUnavailable, "SERVICE_UNAVAILABLE", "Service temporarily unavailable")
}

// Route registers the endpoints on mux, served for simulator h.
func (Sim) Route(h *sim.Simulator, mux *http.ServeMux) {
	demo, err := jwt.ParseRSAPrivateKeyFromPEM([]byte(strings.TrimSpace(demoKeyPEM)))
	if err != nil {
		panic("enablebankingsim: demo key: " + err.Error())
	}
	s := &server{h: h, apps: map[string]*rsa.PublicKey{DemoApplicationID: &demo.PublicKey},
		auths: map[string]authRequest{}, codes: map[string]authRequest{}, sessions: map[string]*session{},
		accounts: map[string]accountRef{}, quota: map[string]quotaUse{}}
	mux.HandleFunc("GET /_sim/enablebanking/credentials", s.mintApplication)
	mux.HandleFunc("GET /enablebanking/_bank/authorize/{id}", s.authorize)
	mux.HandleFunc("GET /enablebanking/application", s.signed(s.application))
	mux.HandleFunc("GET /enablebanking/aspsps", s.signed(s.aspsps))
	mux.HandleFunc("POST /enablebanking/auth", s.signed(s.startAuth))
	mux.HandleFunc("POST /enablebanking/sessions", s.signed(s.createSession))
	mux.HandleFunc("GET /enablebanking/sessions/{id}", s.signed(s.getSession))
	mux.HandleFunc("DELETE /enablebanking/sessions/{id}", s.signed(s.closeSession))
	mux.HandleFunc("GET /enablebanking/accounts/{uid}/details", s.signed(s.account("", s.details)))
	mux.HandleFunc("GET /enablebanking/accounts/{uid}/balances", s.signed(s.account("balances", s.balances)))
	mux.HandleFunc("GET /enablebanking/accounts/{uid}/transactions", s.signed(s.account("transactions", s.transactions)))
}

// server serves the endpoints for one simulator and keeps what Enable
// Banking remembers between calls.
type server struct {
	h *sim.Simulator

	mu       sync.Mutex
	apps     map[string]*rsa.PublicKey // application id → its public key
	auths    map[string]authRequest    // authorization id → the request
	codes    map[string]authRequest    // code given at the redirect → the request
	sessions map[string]*session       // sessions created by the link flow
	accounts map[string]accountRef     // account uid → its session and slot
	quota    map[string]quotaUse       // account uid and kind → use today
	minted   uint64
}

// writeError writes the API's error body {message, error, code}.
func writeError(w http.ResponseWriter, status int, code, msg string) {
	simkit.WriteJSON(w, status, map[string]any{"message": msg, "error": code, "code": status})
}
