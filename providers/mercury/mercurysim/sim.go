// Package mercurysim is Mercury's simulated API, mounted by the simulator host
// (package sim) under /api/v1/: deposit accounts (/accounts), the credit
// account (/credit), categories and transactions per account and for the
// organisation, with Mercury's token auth, paging, filters and error
// bodies. It honours sim.Options.MemoBytes for the account transaction
// pages.
package mercurysim

import (
	"encoding/json"
	"net/http"

	"github.com/finsync/finsync/providers/sim"
	"github.com/finsync/finsync/providers/sim/simkit"
)

// Name is the provider's name, as the adapter's registry knows it.
const Name = "mercury"

// Sim is Mercury's simulated API, under /api/v1/.
// The zero value is ready to use and holds no state: what it keeps for
// one simulator lives in what Route builds.
type Sim struct{}

// Name returns the provider's name, Name.
func (Sim) Name() string { return Name }

// Prefix returns the path prefix the API lives under.
func (Sim) Prefix() string { return "/api/v1/" }

// Route registers the endpoints on mux, served for simulator h with
// state of their own for that simulator: the pages kept to serve again
// (sim.Options.MemoBytes), forgotten at every change of h's clock or
// faults.
func (Sim) Route(h *sim.Simulator, mux *http.ServeMux) {
	s := &server{h: h, memo: &pageMemo{limit: h.Options().MemoBytes}}
	h.OnChange(func(sim.Change) { s.memo.reset() })
	s.routeMercury(mux)
}

// ExtraFaults lists the fault modes supported beyond the host's.
func (Sim) ExtraFaults() []string { return nil }

// BaseURL returns the base URL an adapter uses for a simulator at root.
func (Sim) BaseURL(root string) string { return root + "/api/v1" }

// CredentialKey returns the distinguishing credential of decoded
// credentials ("" when missing).
func (Sim) CredentialKey(c map[string]string) string { return c["token"] }

// WriteFault answers with the provider's real error for an injected
// outage or rate limit.
func (Sim) WriteFault(w http.ResponseWriter, _ *http.Request, mode string) {
	if mode == sim.FaultRateLimit {
		w.Header().Set("Retry-After", "1")
		writeMercuryError(w, http.StatusTooManyRequests, "Too many requests")
		return
	}
	writeMercuryError(w, http.StatusServiceUnavailable, "Service temporarily unavailable")
}

// Credentials returns credentials the simulator accepts, in the shape
// the adapter stores, deterministic from name.
func (Sim) Credentials(name string) json.RawMessage {
	h := simkit.HashString(0x5eed, Name, name)
	return simkit.MustJSON(map[string]string{
		"token": "secret-token:mercury_sandbox_wma_" + string(simkit.AppendAlnum(nil, h, 40)),
	})
}

// server serves the endpoints for one simulator.
type server struct {
	h    *sim.Simulator
	memo *pageMemo
}
