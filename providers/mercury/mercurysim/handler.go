package mercurysim

import (
	"encoding/base64"
	"net/http"
	"strings"
	"time"

	"github.com/finsync/finsync/providers/sim"
	"github.com/finsync/finsync/providers/sim/simkit"
)

// writeMercuryError writes Mercury's error body.
func writeMercuryError(w http.ResponseWriter, status int, msg string) {
	simkit.WriteJSON(w, status, map[string]any{"errors": map[string]string{"message": msg}})
}

// Mercury account slots; the credit account is listed by /credit only.
const (
	mercuryChecking = iota
	mercurySavings
	mercuryCredit
	mercuryAccountCount
)

// mercuryOrg is the organisation behind a Mercury token.
type mercuryOrg struct {
	token    string
	seed     uint64
	tag      uint64
	accounts [mercuryAccountCount]string
}

// routeMercury registers the Mercury endpoints.
func (s *server) routeMercury(mux *http.ServeMux) {
	mux.HandleFunc("GET /api/v1/accounts", s.mercury(s.mercuryAccounts))
	mux.HandleFunc("GET /api/v1/account/{id}", s.mercury(s.mercuryAccount))
	mux.HandleFunc("GET /api/v1/account/{id}/transactions", s.mercury(s.mercuryAccountTransactions))
	mux.HandleFunc("GET /api/v1/account/{id}/transaction/{txid}", s.mercury(s.mercuryTransaction))
	mux.HandleFunc("GET /api/v1/transactions", s.mercury(s.mercuryOrgTransactions))
	mux.HandleFunc("GET /api/v1/credit", s.mercury(s.mercuryCreditAccounts))
	mux.HandleFunc("GET /api/v1/categories", s.mercury(s.mercuryCategoryList))
}

// mercury wraps a Mercury handler with authentication and faults.
func (s *server) mercury(h func(http.ResponseWriter, *http.Request, *mercuryOrg)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		tok, ok := mercuryToken(r)
		if !ok || !validMercuryToken(tok) {
			writeMercuryError(w, http.StatusUnauthorized, "Unauthorized: invalid or missing API token")
			return
		}
		if s.h.ActiveFault(Name).Mode == sim.FaultLoginRequired {
			writeMercuryError(w, http.StatusUnauthorized, "Unauthorized: the API token has been revoked")
			return
		}
		h(w, r, s.org(tok))
	}
}

// org returns the organisation behind token tok.
func (s *server) org(tok string) *mercuryOrg {
	seed := s.h.ConnSeed(Name, tok)
	o := &mercuryOrg{token: tok, seed: seed, tag: seed >> 32}
	for k := range o.accounts {
		hi := simkit.Hash2(seed^0xacc, uint64(k))
		o.accounts[k] = string(simkit.AppendUUID(nil, hi, simkit.Mix(hi)))
	}
	return o
}

// mercuryToken extracts the token from Bearer or Basic authorization.
func mercuryToken(r *http.Request) (string, bool) {
	auth := r.Header.Get("Authorization")
	if k, ok := strings.CutPrefix(auth, "Bearer "); ok {
		return strings.TrimSpace(k), true
	}
	if b, ok := strings.CutPrefix(auth, "Basic "); ok {
		raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(b))
		if err == nil {
			// The token itself contains a colon: the password is after the last.
			user := string(raw)
			if k := strings.LastIndexByte(user, ':'); k >= 0 {
				user = user[:k]
			}
			return user, user != ""
		}
	}
	return "", false
}

// slotOf returns the slot of an account id, or -1.
func (o *mercuryOrg) slotOf(id string) int {
	for k, a := range o.accounts {
		if a == id {
			return k
		}
	}
	return -1
}

// mercuryTime formats an instant as Mercury does.
func mercuryTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000000Z") }

// accountJSON returns a deposit account object.
func (s *server) mercuryAccountJSON(o *mercuryOrg, slot int) map[string]any {
	h := simkit.Hash2(o.seed^0xba1, uint64(slot))
	clock := s.h.Clock()
	current := simkit.Between(h, 2000000, 25000000) + clock*7919%500000
	if slot == mercurySavings {
		current = simkit.Between(h, 5000000, 90000000)
	}
	kind, name := "checking", "Mercury Checking ••"
	if slot == mercurySavings {
		kind, name = "savings", "Mercury Savings ••"
	}
	number := string(simkit.AppendDigits(nil, simkit.Mix(h), 12))
	return map[string]any{
		"id": o.accounts[slot], "accountNumber": number, "routingNumber": "091311229",
		"name": name + number[8:], "nickname": nil, "legalBusinessName": "Acme Robotics, Inc.",
		"status": "active", "type": "mercury", "kind": kind,
		"availableBalance": simkit.Money(current - simkit.Between(simkit.Mix(h+1), 0, 20000)), "currentBalance": simkit.Money(current),
		"createdAt":              mercuryTime(s.h.DateOf(-400).Add(15 * time.Hour)),
		"dashboardLink":          "https://app.mercury.com/accounts/" + o.accounts[slot],
		"canReceiveTransactions": true,
	}
}

// mercuryAccounts serves GET /api/v1/accounts.
func (s *server) mercuryAccounts(w http.ResponseWriter, r *http.Request, o *mercuryOrg) {
	list := []map[string]any{s.mercuryAccountJSON(o, mercuryChecking), s.mercuryAccountJSON(o, mercurySavings)}
	if r.URL.Query().Get("order") == "desc" {
		list[0], list[1] = list[1], list[0]
	}
	simkit.WriteJSON(w, http.StatusOK, map[string]any{"accounts": list})
}

// mercuryAccount serves GET /api/v1/account/{id}.
func (s *server) mercuryAccount(w http.ResponseWriter, r *http.Request, o *mercuryOrg) {
	slot := o.slotOf(r.PathValue("id"))
	if slot < 0 || slot == mercuryCredit {
		writeMercuryError(w, http.StatusNotFound, "Account not found")
		return
	}
	simkit.WriteJSON(w, http.StatusOK, s.mercuryAccountJSON(o, slot))
}

// mercuryCreditAccounts serves GET /api/v1/credit.
func (s *server) mercuryCreditAccounts(w http.ResponseWriter, _ *http.Request, o *mercuryOrg) {
	owed := simkit.Between(simkit.Hash2(o.seed, 0xc4ed), 50000, 2500000)
	simkit.WriteJSON(w, http.StatusOK, map[string]any{"accounts": []map[string]any{{
		"id": o.accounts[mercuryCredit], "availableBalance": simkit.Money(5000000 - owed), "currentBalance": simkit.Money(owed),
		"createdAt": mercuryTime(s.h.DateOf(-300).Add(16 * time.Hour)), "status": "active",
	}}})
}

// mercuryCustomCategories are the organisation's own categories
// (read-only).
var mercuryCustomCategories = [...]string{"Meals & Entertainment", "Travel", "Software & SaaS", "Payroll", "Office", "Transfers"}

// mercuryCategoryID returns the id of custom category k.
func (o *mercuryOrg) mercuryCategoryID(k int) string {
	return simkit.UUIDFrom(simkit.Hash2(o.seed^0xca7, uint64(k)))
}

// mercuryCategoryList serves GET /api/v1/categories.
func (s *server) mercuryCategoryList(w http.ResponseWriter, _ *http.Request, o *mercuryOrg) {
	var list []map[string]any
	for k, name := range mercuryCustomCategories {
		list = append(list, map[string]any{"id": o.mercuryCategoryID(k), "name": name, "isArchived": false})
	}
	simkit.WriteJSON(w, http.StatusOK, map[string]any{"categories": list})
}

// validMercuryToken reports whether t looks like a Mercury API token.
func validMercuryToken(t string) bool {
	rest, ok := strings.CutPrefix(t, "secret-token:")
	return ok && simkit.IsToken(rest, 8, 255)
}
