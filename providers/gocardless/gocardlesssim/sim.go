// Package gocardlesssim is GoCardless Bank Account Data's simulated API, mounted
// by the simulator host (package sim) under /api/v2/: tokens (JWT, with
// expiry), requisitions, institutions and account metadata, details,
// balances and transactions, with GoCardless's per-account daily quota
// (Options.DailyQuota, default 4), rate-limit headers and error bodies.
package gocardlesssim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/finsync/finsync/providers/sim"
	"github.com/finsync/finsync/providers/sim/simkit"
)

// Name is the provider's name, as the adapter's registry knows it.
const Name = "gocardless"

// Sim is GoCardless Bank Account Data's simulated API, under
// /api/v2/.
// The zero value is ready to use and holds no state: what it keeps for
// one simulator lives in what Route builds.
type Sim struct{}

// Name returns the provider's name, Name.
func (Sim) Name() string { return Name }

// Prefix returns the path prefix the API lives under.
func (Sim) Prefix() string { return "/api/v2/" }

// Route registers the endpoints on mux, served for simulator h with
// state of their own for that simulator.
func (Sim) Route(h *sim.Simulator, mux *http.ServeMux) {
	s := newServer(h)
	s.routeGoCardless(mux)
}

// ExtraFaults lists the fault modes supported beyond the host's.
func (Sim) ExtraFaults() []string { return nil }

// BaseURL returns the base URL an adapter uses for a simulator at root.
func (Sim) BaseURL(root string) string { return root + "/api/v2" }

// CredentialKey returns the distinguishing credential of decoded
// credentials ("" when missing).
func (Sim) CredentialKey(c map[string]string) string { return c["requisition_id"] }

// WriteFault answers with the provider's real error for an injected
// outage or rate limit.
func (Sim) WriteFault(w http.ResponseWriter, _ *http.Request, mode string) {
	if mode == sim.FaultRateLimit {
		h := w.Header()
		setExact(h, "HTTP_X_RATELIMIT_LIMIT", "100")
		setExact(h, "HTTP_X_RATELIMIT_REMAINING", "0")
		setExact(h, "HTTP_X_RATELIMIT_RESET", "60")
		writeGCError(w, http.StatusTooManyRequests, gcError{Summary: "Rate limit exceeded", Detail: "The rate limit for this resource is 100/minute. Please try again in 60 seconds"})
		return
	}
	writeGCError(w, http.StatusServiceUnavailable, gcError{Summary: "Service Unavailable", Detail: "Institution service unavailable. Please try again later.", Type: "ServiceError"})
}

// Credentials returns credentials the simulator accepts, in the shape
// the adapter stores, deterministic from name.
func (Sim) Credentials(name string) json.RawMessage {
	h := simkit.HashString(0x5eed, Name, name)
	return simkit.MustJSON(map[string]string{
		"secret_id":      simkit.UUIDFrom(h),
		"secret_key":     string(simkit.AppendHex(nil, simkit.Mix(h), 128)),
		"requisition_id": simkit.UUIDFrom(simkit.Mix(h + 1)),
	})
}

// server serves the endpoints for one simulator and keeps what GoCardless
// remembers between calls.
type server struct {
	h      *sim.Simulator
	jwtKey []byte

	mu     sync.Mutex
	gcAcct map[string]gcAccountRef // account id → its requisition and slot
	gcEUA  map[string]string       // agreement id → its requisition
	quota  map[string]quotaUse     // requisition, account and kind → use today
}

// quotaUse counts successful calls of one kind on one simulated day.
type quotaUse struct {
	day   int64
	count int
}

// newServer returns the server of simulator h.
func newServer(h *sim.Simulator) *server {
	return &server{
		h:      h,
		jwtKey: []byte(fmt.Sprintf("finsync-sim-%016x", h.Seed())),
		gcAcct: map[string]gcAccountRef{},
		gcEUA:  map[string]string{},
		quota:  map[string]quotaUse{},
	}
}

// dailyQuota returns the successful calls allowed per account, kind and
// day (Options.DailyQuota, default 4; negative: unlimited).
func (s *server) dailyQuota() int {
	if q := s.h.Options().DailyQuota; q != 0 {
		return q
	}
	return 4
}

// accessTTL returns the lifetime of access tokens (default 24h).
func (s *server) accessTTL() time.Duration {
	if d := s.h.Options().AccessTokenTTL; d > 0 {
		return d
	}
	return 24 * time.Hour
}

// refreshTTL returns the lifetime of refresh tokens (default 30 days).
func (s *server) refreshTTL() time.Duration {
	if d := s.h.Options().RefreshTokenTTL; d > 0 {
		return d
	}
	return 30 * 24 * time.Hour
}
