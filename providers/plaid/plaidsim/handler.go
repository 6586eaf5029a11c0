package plaidsim

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/finsync/finsync/providers/sim"
	"github.com/finsync/finsync/providers/sim/simkit"
)

// plaidRequest is the union of the request bodies of the simulated Plaid
// endpoints.
type plaidRequest struct {
	ClientID    string  `json:"client_id"`
	Secret      string  `json:"secret"`
	AccessToken string  `json:"access_token"`
	Cursor      *string `json:"cursor"`
	Count       *int    `json:"count"`
	StartDate   string  `json:"start_date"`
	EndDate     string  `json:"end_date"`
	WebhookCode string  `json:"webhook_code"`
	Options     struct {
		AccountIDs                 []string `json:"account_ids"`
		AccountID                  string   `json:"account_id"`
		IncludeOriginalDescription bool     `json:"include_original_description"`
		PFCVersion                 string   `json:"personal_finance_category_version"`
		Count                      *int     `json:"count"`
		Offset                     *int     `json:"offset"`
	} `json:"options"`
}

// plaidHandler handles one authenticated Plaid request for an item.
type plaidHandler func(w http.ResponseWriter, r *http.Request, req *plaidRequest, it *plaidItem)

// routePlaid registers the Plaid endpoints.
func (s *server) routePlaid(mux *http.ServeMux) {
	mux.HandleFunc("POST /accounts/get", s.plaid(s.plaidAccounts))
	mux.HandleFunc("POST /accounts/balance/get", s.plaid(s.plaidAccounts))
	mux.HandleFunc("POST /item/get", s.plaid(s.plaidItemGet))
	mux.HandleFunc("POST /transactions/sync", s.plaid(s.plaidSync))
	mux.HandleFunc("POST /investments/holdings/get", s.plaid(s.plaidHoldings))
	mux.HandleFunc("POST /investments/transactions/get", s.plaid(s.plaidInvestmentTransactions))
	mux.HandleFunc("POST /liabilities/get", s.plaid(s.plaidLiabilities))
	mux.HandleFunc("POST /institutions/get_by_id", s.plaidInstitutionGet)
	mux.HandleFunc("POST /webhook_verification_key/get", s.plaidVerificationKey)
	mux.HandleFunc("POST /sandbox/item/fire_webhook", s.plaid(s.plaidFireWebhook))
}

// plaid wraps a Plaid handler with body decoding, authentication and the
// item-level faults.
func (s *server) plaid(h plaidHandler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req plaidRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			writePlaidError(w, r, http.StatusBadRequest, "INVALID_REQUEST", "INVALID_BODY", "body could not be parsed as JSON", "")
			return
		}
		if v := r.Header.Get("PLAID-CLIENT-ID"); v != "" && req.ClientID == "" {
			req.ClientID = v
		}
		if v := r.Header.Get("PLAID-SECRET"); v != "" && req.Secret == "" {
			req.Secret = v
		}
		if !s.plaidAuth(w, r, &req) {
			return
		}
		it := s.plaidItemFor(req.AccessToken)
		if s.plaidItemFault(w, r, it) {
			return
		}
		if _, _, ended := s.h.ConsentEnds(Name, it.token); ended {
			// After its consent_expiration_time, an Item needs the user
			// back in Link's update mode, as after a changed login.
			writePlaidError(w, r, http.StatusBadRequest, "ITEM_ERROR", "ITEM_LOGIN_REQUIRED", loginRequiredMessage, loginRequiredDisplay)
			return
		}
		h(w, r, &req, it)
	}
}

// plaidAuth checks the API keys and access token, writing Plaid's error
// when they are missing or malformed.
func (s *server) plaidAuth(w http.ResponseWriter, r *http.Request, req *plaidRequest) bool {
	var missing []string
	if req.ClientID == "" {
		missing = append(missing, "client_id")
	}
	if req.Secret == "" {
		missing = append(missing, "secret")
	}
	if req.AccessToken == "" {
		missing = append(missing, "access_token")
	}
	switch {
	case len(missing) > 0:
		msg := "the following required fields are missing: "
		for i, m := range missing {
			if i > 0 {
				msg += ", "
			}
			msg += m
		}
		writePlaidError(w, r, http.StatusBadRequest, "INVALID_REQUEST", "MISSING_FIELDS", msg, "")
	case !simkit.IsToken(req.ClientID, 8, 64) || !simkit.IsToken(req.Secret, 8, 64):
		writePlaidError(w, r, http.StatusBadRequest, "INVALID_INPUT", "INVALID_API_KEYS", "invalid client_id or secret provided", "")
	case !validPlaidAccessToken(req.AccessToken):
		writePlaidError(w, r, http.StatusBadRequest, "INVALID_INPUT", "INVALID_ACCESS_TOKEN", "provided access token is in an invalid format. expected format: access-<environment>-<identifier>", "")
	default:
		return true
	}
	return false
}

// plaidItemFault answers with an injected item or institution error.
func (s *server) plaidItemFault(w http.ResponseWriter, r *http.Request, it *plaidItem) bool {
	f := s.h.ActiveFault(Name)
	switch {
	case f.Mode == sim.FaultLoginRequired:
		writePlaidError(w, r, http.StatusBadRequest, "ITEM_ERROR", "ITEM_LOGIN_REQUIRED", loginRequiredMessage, loginRequiredDisplay)
		return true
	case f.Mode == sim.FaultInstitutionDown && (f.InstitutionID == "" || f.InstitutionID == it.institutionID):
		writePlaidError(w, r, http.StatusBadRequest, "INSTITUTION_ERROR", "INSTITUTION_DOWN",
			"this institution is not currently responding to this request. please try again soon",
			"This financial institution is not currently responding to requests. We apologize for the inconvenience.")
		return true
	}
	return false
}

// Plaid's messages of ITEM_LOGIN_REQUIRED.
const (
	loginRequiredMessage = "the login details of this item have changed (credentials, MFA, or required user action) and a user login is required to update this information. use Link's update mode to restore the item to a good state"
	loginRequiredDisplay = "Your bank login details have changed. Please log in again to continue."
)

// writePlaidError writes Plaid's error body.
func writePlaidError(w http.ResponseWriter, r *http.Request, status int, typ, code, msg, display string) {
	var b simkit.JW
	b.Raw(`{"display_message":`)
	b.StrOrNull(display)
	b.Field("documentation_url")
	b.Str("https://plaid.com/docs/errors/")
	b.Field("error_code")
	b.Str(code)
	b.Raw(`,"error_code_reason":null`)
	b.Field("error_message")
	b.Str(msg)
	b.Field("error_type")
	b.Str(typ)
	b.Field("request_id")
	b.Str(plaidRequestID())
	b.Raw(`,"suggested_action":null}`)
	simkit.WriteRaw(w, status, b.B)
}

// plaidRequestID returns a fresh Plaid-style request id.
func plaidRequestID() string {
	return string(simkit.AppendAlnum(nil, simkit.Mix(uint64(time.Now().UnixNano())), 15))
}

// validPlaidAccessToken reports whether t has the form
// access-<environment>-<identifier>.
func validPlaidAccessToken(t string) bool {
	for _, env := range []string{"access-sandbox-", "access-development-", "access-production-"} {
		if rest, ok := strings.CutPrefix(t, env); ok {
			return simkit.IsToken(rest, 8, 128)
		}
	}
	return false
}
