package stripesim

import (
	"encoding/base64"
	"net/http"
	"strings"
	"time"

	"github.com/finsync/finsync/providers/sim"
	"github.com/finsync/finsync/providers/sim/simkit"
)

// stripeError is the "error" object of Stripe's error body.
type stripeError struct {
	Type    string `json:"type"`
	Code    string `json:"code,omitempty"`
	Message string `json:"message"`
	Param   string `json:"param,omitempty"`
	DocURL  string `json:"doc_url,omitempty"`
}

// writeStripeError writes Stripe's error body.
func writeStripeError(w http.ResponseWriter, r *http.Request, status int, e stripeError) {
	if e.Code != "" && e.DocURL == "" {
		e.DocURL = "https://stripe.com/docs/error-codes/" + strings.ReplaceAll(e.Code, "_", "-")
	}
	setStripeRequestID(w)
	simkit.WriteJSON(w, status, map[string]stripeError{"error": e})
}

// setStripeRequestID sets Stripe's Request-Id response header.
func setStripeRequestID(w http.ResponseWriter) {
	if w.Header().Get("Request-Id") == "" {
		w.Header().Set("Request-Id", "req_"+requestID())
	}
}

// stripeConn is an authenticated Stripe request's connection.
type stripeConn struct {
	key     string
	live    bool
	seed    uint64
	tag     string
	jpy     bool
	account string
}

// routeStripe registers the Stripe endpoints.
func (s *server) routeStripe(mux *http.ServeMux) {
	mux.HandleFunc("GET /v1/balance", s.stripe(s.stripeBalance))
	mux.HandleFunc("GET /v1/balance_transactions", s.stripe(s.stripeList))
	mux.HandleFunc("GET /v1/balance_transactions/{id}", s.stripe(s.stripeGet))
}

// stripe wraps a Stripe handler with authentication and faults.
func (s *server) stripe(h func(http.ResponseWriter, *http.Request, *stripeConn)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		setStripeRequestID(w)
		key, ok := stripeAPIKey(r)
		if !ok {
			writeStripeError(w, r, http.StatusUnauthorized, stripeError{Type: "invalid_request_error",
				Message: "You did not provide an API key. You need to provide your API key in the Authorization header, using Bearer auth (e.g. 'Authorization: Bearer YOUR_SECRET_KEY'). See https://stripe.com/docs/api#authentication for details, or we can help at https://support.stripe.com/."})
			return
		}
		if !validStripeKey(key) {
			writeStripeError(w, r, http.StatusUnauthorized, stripeError{Type: "invalid_request_error", Message: "Invalid API Key provided: " + redactKey(key)})
			return
		}
		acct := r.Header.Get("Stripe-Account")
		if acct != "" && !strings.HasPrefix(acct, "acct_") {
			writeStripeError(w, r, http.StatusForbidden, stripeError{Type: "invalid_request_error", Code: "account_invalid",
				Message: "The provided key '" + redactKey(key) + "' does not have access to account '" + acct + "' (or that account does not exist). Application access may have been revoked."})
			return
		}
		if s.h.ActiveFault(Name).Mode == sim.FaultLoginRequired {
			writeStripeError(w, r, http.StatusUnauthorized, stripeError{Type: "invalid_request_error", Code: "api_key_expired", Message: "Expired API Key provided: " + redactKey(key)})
			return
		}
		ck := stripeKey(key, acct)
		seed := s.h.ConnSeed(Name, ck)
		h(w, r, &stripeConn{key: ck, live: strings.Contains(key, "_live_"), seed: seed, tag: string(simkit.AppendAlnum(nil, seed, 6)), jpy: seed%3 == 0, account: acct})
	}
}

// stripeAPIKey extracts the API key from Bearer or Basic authorization.
func stripeAPIKey(r *http.Request) (string, bool) {
	auth := r.Header.Get("Authorization")
	if k, ok := strings.CutPrefix(auth, "Bearer "); ok && k != "" {
		return strings.TrimSpace(k), true
	}
	if b, ok := strings.CutPrefix(auth, "Basic "); ok {
		raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(b))
		if err == nil {
			user, _, _ := strings.Cut(string(raw), ":")
			return user, user != ""
		}
	}
	return "", false
}

// redactKey hides all but the prefix and the last four characters of a key.
func redactKey(k string) string {
	if len(k) <= 12 {
		return strings.Repeat("*", len(k))
	}
	i := strings.LastIndexByte(k[:min(len(k), 8)], '_') + 1
	return k[:i] + strings.Repeat("*", len(k)-i-4) + k[len(k)-4:]
}

// stripeKey is the connection key of a Stripe API key and optional
// connected account.
func stripeKey(apiKey, account string) string {
	if account == "" {
		return apiKey
	}
	return apiKey + "/" + account
}

// validStripeKey reports whether k looks like a Stripe secret or
// restricted key.
func validStripeKey(k string) bool {
	for _, p := range []string{"sk_test_", "sk_live_", "rk_test_", "rk_live_"} {
		if rest, ok := strings.CutPrefix(k, p); ok {
			return simkit.IsToken(rest, 8, 255)
		}
	}
	return false
}

// requestID returns a fresh random request id (Stripe's Request-Id after
// its req_ prefix).
func requestID() string {
	return string(simkit.AppendAlnum(nil, simkit.Mix(uint64(time.Now().UnixNano())), 15))
}
