package gocardlesssim

import (
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
func (s *server) gcInstitution(w http.ResponseWriter, r *http.Request) {
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
func (s *server) gcInstitutions(w http.ResponseWriter, r *http.Request) {
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
