package gocardlesssim

import (
	"bufio"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/finsync/finsync/providers/sim"
	"github.com/finsync/finsync/providers/sim/simkit"
)

// gcBank is a simulated GoCardless institution and how its rows identify
// themselves.
type gcBank struct {
	id, name, currency, bic string
	txID, internalID        bool // which id fields booked rows carry
}

// gcBanks are the institutions requisitions are spread over (read-only).
var gcBanks = [...]gcBank{
	{"SANDBOXFINANCE_SFIN0000", "Sandbox Finance", "EUR", "SFIN0000", true, true},
	{"REVOLUT_REVOLT21", "Revolut", "EUR", "REVOLT21", true, false},
	{"MONZO_MONZGB2L", "Monzo", "GBP", "MONZGB2L", false, true},
	{"NORDEA_NDEAFIHH", "Nordea", "EUR", "NDEAFIHH", false, false},
}

// gcAccountCount is the number of accounts behind every requisition.
const gcAccountCount = 3

// gcAccountRef locates an account id in its requisition.
type gcAccountRef struct {
	requisition string
	slot        int
}

// gcConn is a requisition's generated data at a clock.
type gcConn struct {
	requisition string
	seed        uint64
	bank        gcBank
	accounts    [gcAccountCount]string
}

// gcConnFor builds a requisition's data and registers its account ids.
func (s *server) gcConnFor(requisition string) *gcConn {
	seed := s.h.ConnSeed(Name, requisition)
	c := &gcConn{requisition: requisition, seed: seed, bank: gcBanks[simkit.Pick(simkit.Hash2(seed, 1), len(gcBanks))]}
	s.mu.Lock()
	defer s.mu.Unlock()
	for k := range c.accounts {
		c.accounts[k] = simkit.UUIDFrom(simkit.Hash2(seed^0xacc, uint64(k)))
		s.gcAcct[c.accounts[k]] = gcAccountRef{requisition: requisition, slot: k}
	}
	s.gcEUA[c.agreement()] = requisition
	return c
}

// agreement is the id of the connection's end user agreement.
func (c *gcConn) agreement() string { return simkit.UUIDFrom(simkit.Hash2(c.seed, 0xa9)) }

// gcAgreementDays is how long the simulated end user agreements give
// access (GoCardless's default access_valid_for_days).
const gcAgreementDays = 90

// gcAgreementTerms returns when the connection's end user agreement was
// accepted and for how many days it gives access: accepted on the
// simulator's first day for gcAgreementDays, unless the control API set
// when its consent ends (sim.Simulator.SetConsent on the requisition id):
// then accepted gcAgreementDays before that end.
func (s *server) gcAgreementTerms(requisition string) (accepted time.Time, days int) {
	if ends, set, _ := s.h.ConsentEnds(Name, requisition); set {
		return ends.AddDate(0, 0, -gcAgreementDays), gcAgreementDays
	}
	return s.h.DateOf(0).Add(9 * time.Hour), gcAgreementDays
}

// gcAgreementExpired reports whether the connection's agreement has
// ended by the simulated time: GoCardless then reports the requisition
// expired (EX) and refuses its accounts' data (AccessExpiredError).
func (s *server) gcAgreementExpired(requisition string) bool {
	accepted, days := s.gcAgreementTerms(requisition)
	return !s.h.WallNow().Before(accepted.AddDate(0, 0, days))
}

// gcAgreement serves GET /api/v2/agreements/enduser/{id}/.
func (s *server) gcAgreement(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	s.mu.Lock()
	requisition, ok := s.gcEUA[id]
	s.mu.Unlock()
	if !ok {
		writeGCError(w, http.StatusNotFound, gcError{Summary: "Not found.", Detail: "Not found."})
		return
	}
	c := s.gcConnFor(requisition)
	accepted, days := s.gcAgreementTerms(requisition)
	// access_scope is left out: the published description types it as an
	// array of arrays, which the API does not answer, and it is optional.
	simkit.WriteJSON(w, http.StatusOK, map[string]any{
		"id": id, "created": gcTime(accepted.Add(-5 * time.Minute)), "institution_id": c.bank.id,
		"max_historical_days": s.h.Options().HistoryDays, "access_valid_for_days": days, "accepted": gcTime(accepted),
	})
}

// routeGoCardless registers the GoCardless endpoints.
func (s *server) routeGoCardless(mux *http.ServeMux) {
	mux.HandleFunc("POST /api/v2/token/new/{$}", s.gcTokenNew)
	mux.HandleFunc("POST /api/v2/token/refresh/{$}", s.gcTokenRefresh)
	mux.HandleFunc("GET /api/v2/requisitions/{id}/{$}", s.gcAuthed(s.gcRequisition))
	mux.HandleFunc("GET /api/v2/agreements/enduser/{id}/{$}", s.gcAuthed(s.gcAgreement))
	mux.HandleFunc("GET /api/v2/institutions/{$}", s.gcAuthed(s.gcInstitutions))
	mux.HandleFunc("GET /api/v2/institutions/{id}/{$}", s.gcAuthed(s.gcInstitution))
	mux.HandleFunc("GET /api/v2/accounts/{id}/{$}", s.gcAuthed(s.gcAccountHandler("", s.gcAccountMeta)))
	mux.HandleFunc("GET /api/v2/accounts/{id}/details/{$}", s.gcAuthed(s.gcAccountHandler("details", s.gcDetails)))
	mux.HandleFunc("GET /api/v2/accounts/{id}/balances/{$}", s.gcAuthed(s.gcAccountHandler("balances", s.gcBalances)))
	mux.HandleFunc("GET /api/v2/accounts/{id}/transactions/{$}", s.gcAuthed(s.gcAccountHandler("transactions", s.gcTransactions)))
}

// gcRequisition serves GET /api/v2/requisitions/{id}/.
func (s *server) gcRequisition(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if !simkit.IsUUID(id) {
		writeGCError(w, http.StatusBadRequest, gcError{Summary: "Invalid Requisition ID", Detail: id + " is not a valid Requisition UUID. "})
		return
	}
	c := s.gcConnFor(id)
	status := "LN"
	if s.h.ActiveFault(Name).Mode == sim.FaultLoginRequired || s.gcAgreementExpired(id) {
		status = "EX"
	}
	created := s.h.DateOf(-int64(s.h.Options().HistoryDays)).Add(9 * time.Hour)
	simkit.WriteJSON(w, http.StatusOK, map[string]any{
		"id": id, "created": gcTime(created), "redirect": "http://localhost/callback", "status": status,
		"institution_id": c.bank.id, "agreement": c.agreement(), "reference": id,
		"accounts": c.accounts[:], "user_language": "EN",
		"link":              "https://ob.gocardless.com/ob-psd2/start/" + simkit.UUIDFrom(simkit.Hash2(c.seed, 0x11)) + "/" + c.bank.id,
		"account_selection": false, "redirect_immediate": false,
	})
}

// gcAccountHandler resolves the account of the path, applies the consent
// fault and the per-account daily quota of kind (none when empty), and
// calls h on success of those checks.
func (s *server) gcAccountHandler(kind string, h func(http.ResponseWriter, *http.Request, *gcConn, int) bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		if !simkit.IsUUID(id) {
			writeGCError(w, http.StatusBadRequest, gcError{Summary: "Invalid Account ID", Detail: id + " is not a valid Account UUID. "})
			return
		}
		s.mu.Lock()
		ref, ok := s.gcAcct[id]
		s.mu.Unlock()
		if !ok {
			writeGCError(w, http.StatusNotFound, gcError{Summary: "Account ID " + id + " not found", Detail: "Please check whether you specified a valid Account ID"})
			return
		}
		c := s.gcConnFor(ref.requisition)
		if kind != "" && (s.h.ActiveFault(Name).Mode == sim.FaultLoginRequired || s.gcAgreementExpired(ref.requisition)) {
			writeGCError(w, http.StatusUnauthorized, gcError{Type: "AccessExpiredError",
				Summary: "End User Agreement (EUA) " + c.agreement() + " has expired",
				Detail:  "EUA was valid for 90 days and it expired. The end user must connect their account again with a new EUA and Requisition."})
			return
		}
		if kind == "" {
			h(w, r, c, ref.slot)
			return
		}
		s.gcQuotaServe(w, r, c, ref.slot, kind, h)
	}
}

// gcQuotaServe serves an account data call under the daily quota: only
// successful calls count.
func (s *server) gcQuotaServe(w http.ResponseWriter, r *http.Request, c *gcConn, slot int, kind string, h func(http.ResponseWriter, *http.Request, *gcConn, int) bool) {
	limit := s.dailyQuota()
	reset := s.h.SecondsToReset()
	key := c.accounts[slot] + "/" + kind
	qk := c.requisition + "\x00" + key
	clock := s.h.Clock()
	s.mu.Lock()
	u := s.quota[qk]
	if u.day != clock {
		u = quotaUse{day: clock}
	}
	s.mu.Unlock()
	hd := w.Header()
	if limit > 0 {
		setExact(hd, "HTTP_X_RATELIMIT_ACCOUNT_SUCCESS_LIMIT", strconv.Itoa(limit))
		setExact(hd, "HTTP_X_RATELIMIT_ACCOUNT_SUCCESS_RESET", strconv.FormatInt(reset, 10))
		if u.count >= limit {
			setExact(hd, "HTTP_X_RATELIMIT_ACCOUNT_SUCCESS_REMAINING", "0")
			writeGCError(w, http.StatusTooManyRequests, gcError{Type: "RateLimitError", Summary: "Rate limit exceeded",
				Detail: fmt.Sprintf("The rate limit for this resource is %d/day. Please try again in %d seconds", limit, reset)})
			return
		}
		setExact(hd, "HTTP_X_RATELIMIT_ACCOUNT_SUCCESS_REMAINING", strconv.Itoa(limit-u.count-1))
	}
	if !h(w, r, c, slot) {
		return
	}
	clock = s.h.Clock()
	s.mu.Lock()
	cur := s.quota[qk]
	if cur.day != clock {
		cur = quotaUse{day: clock}
	}
	cur.count++
	s.quota[qk] = cur
	s.mu.Unlock()
}

// gcAccountMeta serves GET /api/v2/accounts/{id}/.
func (s *server) gcAccountMeta(w http.ResponseWriter, _ *http.Request, c *gcConn, slot int) bool {
	created := s.h.DateOf(-int64(s.h.Options().HistoryDays)).Add(9*time.Hour + 5*time.Minute)
	status := "READY"
	if s.h.ActiveFault(Name).Mode == sim.FaultLoginRequired {
		status = "EXPIRED"
	}
	simkit.WriteJSON(w, http.StatusOK, map[string]any{
		"id": c.accounts[slot], "created": gcTime(created), "last_accessed": gcTime(s.h.WallNow()),
		"iban": c.iban(slot), "bban": nil, "institution_id": c.bank.id, "status": status, "owner_name": c.owner(),
	})
	return true
}

// iban returns the IBAN of account slot.
func (c *gcConn) iban(slot int) string {
	h := simkit.Hash2(c.seed^0x1ba, uint64(slot))
	if c.bank.currency == "GBP" {
		return "GB" + string(simkit.AppendDigits(nil, h, 2)) + c.bank.bic[:4] + string(simkit.AppendDigits(nil, simkit.Mix(h), 14))
	}
	return "LT" + string(simkit.AppendDigits(nil, h, 2)) + string(simkit.AppendDigits(nil, simkit.Mix(h), 16))
}

// owner returns the account holder's name.
func (c *gcConn) owner() string {
	names := [...]string{"John Doe", "Jane Smith", "Alex Müller", "Maria García", "Luca Rossi"}
	return names[simkit.Pick(simkit.Hash2(c.seed, 0x0e), len(names))]
}

// gcSlotInfo returns the cash account type, product and name of a slot.
func gcSlotInfo(slot int) (cashType, product, name string) {
	switch slot {
	case 0:
		return "CACC", "Current Account", "Main Account"
	case 1:
		return "SVGS", "Savings Account", "Savings"
	default:
		return "CARD", "Credit Card", "Credit Card"
	}
}

// gcDetails serves GET /api/v2/accounts/{id}/details/.
func (s *server) gcDetails(w http.ResponseWriter, _ *http.Request, c *gcConn, slot int) bool {
	cashType, product, name := gcSlotInfo(slot)
	acct := map[string]any{
		"resourceId": string(simkit.AppendHex(nil, simkit.Hash2(c.seed^0x7e5, uint64(slot)), 24)), "currency": c.bank.currency,
		"ownerName": c.owner(), "name": name, "product": product, "cashAccountType": cashType, "status": "enabled",
	}
	if slot == 2 {
		acct["maskedPan"] = "516759XXXXXX" + string(simkit.AppendDigits(nil, simkit.Hash2(c.seed, 0x9a), 4))
	} else {
		acct["iban"] = c.iban(slot)
		acct["bic"] = c.bank.bic
	}
	if c.bank.txID {
		acct["displayName"] = name
	}
	simkit.WriteJSON(w, http.StatusOK, map[string]any{"account": acct})
	return true
}

// gcBalances serves GET /api/v2/accounts/{id}/balances/.
func (s *server) gcBalances(w http.ResponseWriter, _ *http.Request, c *gcConn, slot int) bool {
	clock := s.h.Clock()
	h := simkit.Hash2(c.seed^0xba1, uint64(slot))
	var booked int64
	switch slot {
	case 0:
		booked = simkit.Between(h, 100000, 900000) + clock*731%30000
	case 1:
		booked = simkit.Between(h, 500000, 4000000) + clock*1291%20000
	default:
		booked = -simkit.Between(h, 5000, 300000)
	}
	avail := booked - simkit.Between(simkit.Mix(h), 0, 5000)
	ref := s.h.DateOf(clock - 1).Format(time.DateOnly)
	bal := func(amount int64, typ string) map[string]any {
		return map[string]any{
			"balanceAmount": map[string]string{"amount": centsText(amount), "currency": c.bank.currency},
			"balanceType":   typ, "referenceDate": ref,
		}
	}
	var list []map[string]any
	switch {
	case c.bank.txID && c.bank.internalID:
		list = []map[string]any{bal(booked, "closingBooked"), bal(avail, "interimAvailable")}
	case c.bank.txID:
		list = []map[string]any{bal(booked, "interimBooked"), bal(avail, "interimAvailable")}
	default:
		list = []map[string]any{bal(booked, "expected")}
	}
	if slot == 2 {
		for _, b := range list {
			b["creditLimitIncluded"] = b["balanceType"] == "interimAvailable"
		}
	}
	simkit.WriteJSON(w, http.StatusOK, map[string]any{"balances": list})
	return true
}

// centsText formats minor units as a decimal string with two digits.
func centsText(v int64) string { return string(simkit.AppendCents(nil, v, true)) }

// gcTransactions serves GET /api/v2/accounts/{id}/transactions/.
func (s *server) gcTransactions(w http.ResponseWriter, r *http.Request, c *gcConn, slot int) bool {
	snap := s.h.Open(Name, c.requisition, gcAccountCount)
	lo, hi, ok := s.gcDateRange(w, r, snap)
	if !ok {
		return false
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	bw := bufio.NewWriterSize(w, simkit.StreamChunk)
	gw := gcTxWriter{s: s, c: c, t: &snap.TL, clock: snap.Clock, bw: bw}
	gw.write(slot, lo, hi)
	_ = bw.Flush()
	return true
}

// gcDateRange validates date_from/date_to and returns them as sim days.
func (s *server) gcDateRange(w http.ResponseWriter, r *http.Request, snap sim.Snapshot) (lo, hi int64, ok bool) {
	q := r.URL.Query()
	lo, hi = -(snap.TL.Days - 1), snap.Clock
	for _, f := range []struct {
		name string
		dst  *int64
	}{{"date_from", &lo}, {"date_to", &hi}} {
		v := q.Get(f.name)
		if v == "" {
			continue
		}
		d, err := time.Parse(time.DateOnly, v)
		if err != nil {
			writeGCFieldError(w, f.name, "Invalid date format", fmt.Sprintf("%s must be a valid date in the YYYY-MM-DD format", f.name))
			return 0, 0, false
		}
		*f.dst = s.h.DayOf(d)
		if *f.dst > snap.Clock {
			writeGCFieldError(w, f.name, "Date can't be in future", fmt.Sprintf("'%s' can't be greater than %s. Specify correct date range", v, s.h.DateOf(snap.Clock).Format(time.DateOnly)))
			return 0, 0, false
		}
	}
	if lo > hi {
		writeGCError(w, http.StatusBadRequest, gcError{Summary: "Incorrect date range",
			Detail: fmt.Sprintf("Starting date '%s' is greater than end date '%s'. When specifying date range, starting date must precede the end date.", q.Get("date_from"), q.Get("date_to"))})
		return 0, 0, false
	}
	return lo, hi, true
}
