// Package simplefinsim is SimpleFIN's simulated server, mounted by the
// simulator host (package sim) under /simplefin/: the Account Set at
// /simplefin/accounts with HTTP Basic credentials, the claim of setup tokens
// at /simplefin/claim/{token}, and GET /_sim/simplefin/token, which mints a
// fresh setup token whose claim URL points at the simulator.
package simplefinsim

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"sync"

	"github.com/finsync/finsync/providers/sim"
	"github.com/finsync/finsync/providers/sim/simkit"
)

// Name is the provider's name, as the adapter's registry knows it.
const Name = "simplefin"

// BridgeHost is the host the access URLs of Credentials name; an adapter
// reaches the simulator through the connection's base URL instead.
const BridgeHost = "bridge.simplefin.org"

// Sim is SimpleFIN's simulated server, under /simplefin/. The zero value is
// ready to use and holds no state: the claim tokens minted for one simulator
// live in what Route builds.
type Sim struct{}

// Name returns the provider's name, Name.
func (Sim) Name() string { return Name }

// Prefix returns the path prefix the API lives under.
func (Sim) Prefix() string { return "/simplefin/" }

// Route registers the endpoints on mux, served for simulator h with state
// of their own (the minted setup tokens) for that simulator.
func (Sim) Route(h *sim.Simulator, mux *http.ServeMux) {
	s := &server{h: h, claims: map[string]bool{}}
	mux.HandleFunc("GET /simplefin/accounts", s.accounts)
	mux.HandleFunc("POST /simplefin/claim/{token}", s.claim)
	mux.HandleFunc("GET /_sim/simplefin/token", s.mint)
}

// ExtraFaults lists the fault modes supported beyond the host's.
func (Sim) ExtraFaults() []string { return nil }

// BaseURL returns the base URL an adapter uses for a simulator at root.
func (Sim) BaseURL(root string) string { return root + "/simplefin" }

// CredentialKey returns the distinguishing credential of decoded
// credentials: the user of the access URL ("" when missing).
func (Sim) CredentialKey(c map[string]string) string {
	u, err := url.Parse(c["access_url"])
	if err != nil || u.User == nil {
		return ""
	}
	return u.User.Username()
}

// WriteFault answers with a plain-text 503 for an outage, a 429 with
// Retry-After for a rate limit (SimpleFIN documents no error body).
func (Sim) WriteFault(w http.ResponseWriter, _ *http.Request, mode string) {
	if mode == sim.FaultRateLimit {
		w.Header().Set("Retry-After", "1")
		http.Error(w, "Too many requests", http.StatusTooManyRequests)
		return
	}
	http.Error(w, "Service temporarily unavailable", http.StatusServiceUnavailable)
}

// Credentials returns an access URL the simulator accepts, deterministic
// from name, in the shape the adapter stores.
func (Sim) Credentials(name string) json.RawMessage {
	user := userFor(simkit.HashString(0x5eed, Name, name))
	return simkit.MustJSON(map[string]string{"access_url": "https://" + user + ":" + password(user) + "@" + BridgeHost + "/simplefin"})
}

// userFor returns the access URL user name derived from h.
func userFor(h uint64) string { return "sfin" + string(simkit.AppendAlnum(nil, h, 28)) }

// password returns the password the simulator expects for user.
func password(user string) string {
	return string(simkit.AppendAlnum(nil, simkit.HashString(0x9a55, Name, user), 32))
}

// server serves the endpoints for one simulator.
type server struct {
	h  *sim.Simulator
	mu sync.Mutex
	// claims maps each minted claim token to whether it was claimed.
	claims map[string]bool
	minted uint64
}

// mint serves GET /_sim/simplefin/token: a fresh setup token (plain text),
// the base64 of a claim URL on the host the request reached.
func (s *server) mint(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.minted++
	tok := "c" + strconv.FormatUint(s.minted, 10) + string(simkit.AppendAlnum(nil, simkit.Hash2(0xc1a1, s.minted), 24))
	s.claims[tok] = false
	s.mu.Unlock()
	claim := "http://" + r.Host + "/simplefin/claim/" + tok
	w.Header().Set("Content-Type", "text/plain")
	_, _ = w.Write([]byte(base64.StdEncoding.EncodeToString([]byte(claim))))
}

// claim serves POST /simplefin/claim/{token}: the access URL, once.
func (s *server) claim(w http.ResponseWriter, r *http.Request) {
	tok := r.PathValue("token")
	s.mu.Lock()
	claimed, ok := s.claims[tok]
	s.claims[tok] = true
	s.mu.Unlock()
	if !ok || claimed {
		http.Error(w, "Forbidden", http.StatusForbidden)
		return
	}
	user := userFor(simkit.HashString(0xc1a1, Name, tok))
	w.Header().Set("Content-Type", "text/plain")
	_, _ = w.Write([]byte("http://" + user + ":" + password(user) + "@" + r.Host + "/simplefin"))
}
