// Package stripesim is Stripe's simulated API, mounted by the simulator host
// (package sim) under /v1/: the balance and balance transactions, with
// Stripe's auth (Bearer or Basic, Stripe-Account), list paging and filters,
// minor units and error bodies.
package stripesim

import (
	"encoding/json"
	"net/http"

	"github.com/finsync/finsync/providers/sim"
	"github.com/finsync/finsync/providers/sim/simkit"
)

// Name is the provider's name, as the adapter's registry knows it.
const Name = "stripe"

// Sim is Stripe's simulated API, under /v1/.
// The zero value is ready to use and holds no state: what it keeps for
// one simulator lives in what Route builds.
type Sim struct{}

// Name returns the provider's name, Name.
func (Sim) Name() string { return Name }

// Prefix returns the path prefix the API lives under.
func (Sim) Prefix() string { return "/v1/" }

// Route registers the endpoints on mux, served for simulator h with
// state of their own for that simulator.
func (Sim) Route(h *sim.Simulator, mux *http.ServeMux) {
	s := &server{h: h, notes: &notifier{h: h, accounts: map[string]*stripeConn{}}}
	h.OnChange(func(c sim.Change) { s.notes.changed(s, c) })
	s.routeStripe(mux)
}

// ExtraFaults lists the fault modes supported beyond the host's.
func (Sim) ExtraFaults() []string { return nil }

// BaseURL returns the base URL an adapter uses for a simulator at root.
func (Sim) BaseURL(root string) string { return root }

// CredentialKey returns the distinguishing credential of decoded
// credentials ("" when missing).
func (Sim) CredentialKey(c map[string]string) string {
	return stripeKey(c["api_key"], c["account"])
}

// WriteFault answers with the provider's real error for an injected
// outage or rate limit.
func (Sim) WriteFault(w http.ResponseWriter, r *http.Request, mode string) {
	if mode == sim.FaultRateLimit {
		w.Header().Set("Retry-After", "1")
		writeStripeError(w, r, http.StatusTooManyRequests, stripeError{Type: "invalid_request_error", Code: "rate_limit", Message: "Request rate limit exceeded. You can learn more about rate limits here https://stripe.com/docs/rate-limits."})
		return
	}
	writeStripeError(w, r, http.StatusInternalServerError, stripeError{Type: "api_error", Message: "An unknown error occurred"})
}

// Credentials returns credentials the simulator accepts, in the shape
// the adapter stores, deterministic from name, with the provider
// settings (Settings).
func (Sim) Credentials(name string) json.RawMessage {
	h := simkit.HashString(0x5eed, Name, name)
	return simkit.MustJSON(map[string]string{
		"api_key":        "sk_test_" + string(simkit.AppendAlnum(nil, h, 99)),
		"account":        "acct_" + string(simkit.AppendAlnum(nil, simkit.Mix(h), 16)),
		"webhook_secret": webhookSecret(),
	})
}

// server serves the endpoints for one simulator.
type server struct {
	h *sim.Simulator
	// notes sends the connected accounts' events.
	notes *notifier
}
