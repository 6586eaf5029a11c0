package sim

import (
	"encoding/json"
	"net/http"

	"github.com/finsync/finsync/providers/sim/simkit"
)

// routeControl registers the /_sim/ control endpoints.
func (s *Simulator) routeControl() {
	s.mux.HandleFunc("POST /_sim/advance", s.handleAdvance)
	s.mux.HandleFunc("POST /_sim/faults", s.handleFaults)
	s.mux.HandleFunc("POST /_sim/connections", s.handleConnections)
	s.mux.HandleFunc("POST /_sim/consent", s.handleConsent)
	s.mux.HandleFunc("POST /_sim/webhooks", s.handleWebhooks)
	s.mux.HandleFunc("GET /_sim/state", s.handleState)
}

// WebhookTarget is where one provider's notifications go
// (POST /_sim/webhooks).
type WebhookTarget struct {
	Provider string `json:"provider"`
	// URL receives the notifications; empty stops them.
	URL string `json:"url"`
}

// handleWebhooks serves POST /_sim/webhooks (WebhookTarget).
func (s *Simulator) handleWebhooks(w http.ResponseWriter, r *http.Request) {
	var t WebhookTarget
	if err := json.NewDecoder(r.Body).Decode(&t); err != nil {
		writeControlError(w, http.StatusBadRequest, "invalid JSON body: "+err.Error())
		return
	}
	if err := s.SetWebhookURL(t.Provider, t.URL); err != nil {
		writeControlError(w, http.StatusBadRequest, err.Error())
		return
	}
	simkit.WriteJSON(w, http.StatusOK, t)
}

// handleConsent serves POST /_sim/consent (Consent).
func (s *Simulator) handleConsent(w http.ResponseWriter, r *http.Request) {
	var c Consent
	if err := json.NewDecoder(r.Body).Decode(&c); err != nil {
		writeControlError(w, http.StatusBadRequest, "invalid JSON body: "+err.Error())
		return
	}
	if err := s.SetConsent(c); err != nil {
		writeControlError(w, http.StatusBadRequest, err.Error())
		return
	}
	simkit.WriteJSON(w, http.StatusOK, c)
}

// handleAdvance serves POST /_sim/advance {"days": N}.
func (s *Simulator) handleAdvance(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Days int `json:"days"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeControlError(w, http.StatusBadRequest, "invalid JSON body: "+err.Error())
		return
	}
	if err := s.Advance(req.Days); err != nil {
		writeControlError(w, http.StatusBadRequest, err.Error())
		return
	}
	simkit.WriteJSON(w, http.StatusOK, s.State())
}

// handleFaults serves POST /_sim/faults.
func (s *Simulator) handleFaults(w http.ResponseWriter, r *http.Request) {
	var f Fault
	if err := json.NewDecoder(r.Body).Decode(&f); err != nil {
		writeControlError(w, http.StatusBadRequest, "invalid JSON body: "+err.Error())
		return
	}
	if err := s.SetFault(f); err != nil {
		writeControlError(w, http.StatusBadRequest, err.Error())
		return
	}
	simkit.WriteJSON(w, http.StatusOK, s.State())
}

// handleConnections serves POST /_sim/connections.
func (s *Simulator) handleConnections(w http.ResponseWriter, r *http.Request) {
	var cs ConnectionSettings
	if err := json.NewDecoder(r.Body).Decode(&cs); err != nil {
		writeControlError(w, http.StatusBadRequest, "invalid JSON body: "+err.Error())
		return
	}
	if err := s.SetConnection(cs); err != nil {
		writeControlError(w, http.StatusConflict, err.Error())
		return
	}
	simkit.WriteJSON(w, http.StatusOK, cs)
}

// handleState serves GET /_sim/state.
func (s *Simulator) handleState(w http.ResponseWriter, _ *http.Request) {
	simkit.WriteJSON(w, http.StatusOK, s.State())
}

// writeControlError writes a control API error.
func writeControlError(w http.ResponseWriter, status int, msg string) {
	simkit.WriteJSON(w, status, map[string]string{"error": msg})
}
