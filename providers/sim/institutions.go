package sim

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/finsync/finsync/providers/sim/simkit"
)

// gcInstitutionJSON returns GoCardless's institution object.
func gcInstitutionJSON(b gcBank) map[string]any {
	country := "LT"
	if b.currency == "GBP" {
		country = "GB"
	}
	return map[string]any{
		"id": b.id, "name": b.name, "bic": b.bic, "transaction_total_days": "730",
		"max_access_valid_for_days": "180", "countries": []string{country},
		"logo":               "https://cdn-logos.gocardless.com/ais/" + b.id + ".png",
		"supported_features": []string{"account_selection", "business_accounts", "card_accounts", "pending_transactions", "private_accounts"},
		"supported_payments": map[string]any{},
	}
}

// gcInstitution serves GET /api/v2/institutions/{id}/.
func (s *Simulator) gcInstitution(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	for _, b := range gcBanks {
		if b.id == id {
			simkit.WriteJSON(w, http.StatusOK, gcInstitutionJSON(b))
			return
		}
	}
	writeGCError(w, http.StatusNotFound, gcError{Summary: "Not found.", Detail: "Not found."})
}

// gcInstitutions serves GET /api/v2/institutions/?country=.
func (s *Simulator) gcInstitutions(w http.ResponseWriter, r *http.Request) {
	country := strings.ToUpper(r.URL.Query().Get("country"))
	list := []map[string]any{}
	for _, b := range gcBanks {
		inst := gcInstitutionJSON(b)
		if country == "" || inst["countries"].([]string)[0] == country {
			list = append(list, inst)
		}
	}
	simkit.WriteJSON(w, http.StatusOK, list)
}

// plaidInstitutionGet serves /institutions/get_by_id, which needs API keys
// but no access token.
func (s *Simulator) plaidInstitutionGet(w http.ResponseWriter, r *http.Request) {
	var req struct {
		ClientID      string `json:"client_id"`
		Secret        string `json:"secret"`
		InstitutionID string `json:"institution_id"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writePlaidError(w, r, http.StatusBadRequest, "INVALID_REQUEST", "INVALID_BODY", "body could not be parsed as JSON", "")
		return
	}
	if req.ClientID == "" {
		req.ClientID = r.Header.Get("PLAID-CLIENT-ID")
	}
	if req.Secret == "" {
		req.Secret = r.Header.Get("PLAID-SECRET")
	}
	if !simkit.IsToken(req.ClientID, 8, 64) || !simkit.IsToken(req.Secret, 8, 64) {
		writePlaidError(w, r, http.StatusBadRequest, "INVALID_INPUT", "INVALID_API_KEYS", "invalid client_id or secret provided", "")
		return
	}
	for _, in := range plaidInstitutions {
		if in[0] == req.InstitutionID {
			simkit.WriteJSON(w, http.StatusOK, map[string]any{
				"institution": map[string]any{
					"institution_id": in[0], "name": in[1], "country_codes": []string{"US"},
					"products":        []string{"assets", "auth", "balance", "transactions", "identity", "investments", "liabilities"},
					"routing_numbers": []string{}, "oauth": false, "url": nil, "primary_color": nil, "logo": nil,
				},
				"request_id": plaidRequestID(),
			})
			return
		}
	}
	writePlaidError(w, r, http.StatusBadRequest, "INVALID_INPUT", "INVALID_INSTITUTION", "invalid institution_id provided", "")
}
