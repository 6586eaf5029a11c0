package enablebankingsim

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/providers/sim/simkit"
)

// Account slots of a session.
const (
	slotChecking = iota
	slotSavings
	slotCard
	accountCount
)

// PageSize is how many transactions one page holds before a
// continuation_key.
const PageSize = 50

// DefaultDailyQuota is the unattended requests per account, kind and
// simulated day when Options.DailyQuota is 0.
const DefaultDailyQuota = 4

// accountInfo describes the slots (read-only).
var accountInfo = [accountCount]struct{ name, cashType, product string }{
	{"Current Account", "CACC", "Basic current account"},
	{"Savings Account", "SVGS", "Online savings"},
	{"Credit Card", "CARD", "Classic credit card"},
}

// accountRef locates an account uid in its session.
type accountRef struct {
	session string
	slot    int
}

// quotaUse counts requests of one kind on one simulated day.
type quotaUse struct {
	day   int64
	count int
}

// register returns the session's account uids and makes them known.
func (s *server) register(sess *session) []string {
	seed := s.h.ConnSeed(Name, sess.id)
	uids := make([]string, accountCount)
	s.mu.Lock()
	defer s.mu.Unlock()
	for k := range uids {
		uids[k] = simkit.UUIDFrom(simkit.Hash2(seed^0xacc, uint64(k)))
		s.accounts[uids[k]] = accountRef{session: sess.id, slot: k}
	}
	return uids
}

// iban returns slot k's IBAN in the bank's country.
func iban(sess *session, k int) string {
	h := simkit.Hash2(simkit.HashString(0x1ba, sess.data), uint64(k))
	return sess.bank.Country + strconv.Itoa(10+simkit.Pick(h, 89)) + sess.bank.BIC[:4] + strconv.FormatUint(1e13+h%9e13, 10)
}

// identificationHash is slot k's identification_hash: the same for every
// session that reaches the account, as Enable Banking's is.
func identificationHash(sess *session, k int) string {
	return strconv.FormatUint(simkit.Hash2(simkit.HashString(0x1d, sess.data), uint64(k)), 16)
}

// accountResource is the account as POST /sessions and GET details give it.
func (s *server) accountResource(sess *session, k int, uid string) map[string]any {
	return map[string]any{
		"uid": uid, "account_id": map[string]string{"iban": iban(sess, k)}, "name": accountInfo[k].name,
		"details": accountInfo[k].product, "product": accountInfo[k].product, "currency": "EUR",
		"cash_account_type": accountInfo[k].cashType, "usage": "PRIV",
		"identification_hash": identificationHash(sess, k),
	}
}

// account resolves the path's account for the application, refuses a
// session that is not authorised, counts the daily quota of kind (none
// when empty), and serves the request with h.
func (s *server) account(kind string, h func(http.ResponseWriter, *http.Request, *session, int)) func(http.ResponseWriter, *http.Request, string) {
	return func(w http.ResponseWriter, r *http.Request, app string) {
		uid := r.PathValue("uid")
		s.mu.Lock()
		ref, ok := s.accounts[uid]
		s.mu.Unlock()
		var sess *session
		if ok {
			sess = s.sessionOf(ref.session, app)
		}
		if sess == nil {
			writeError(w, http.StatusNotFound, "ACCOUNT_DOES_NOT_EXIST", "Account "+uid+" not found")
			return
		}
		switch st := sess.status(s.h, s.h.WallNow()); st {
		case "AUTHORIZED":
		case "CLOSED":
			writeError(w, http.StatusUnauthorized, "CLOSED_SESSION", "Session is closed")
			return
		default:
			writeError(w, http.StatusUnauthorized, "EXPIRED_SESSION", "Session access expired at "+sess.validUntil.Format(time.RFC3339))
			return
		}
		if kind != "" && r.URL.Query().Get("continuation_key") == "" && r.Header.Get("Psu-Ip-Address") == "" && !s.spend(uid+"/"+kind) {
			w.Header().Set("Retry-After", strconv.FormatInt(s.h.SecondsToReset(), 10))
			writeError(w, http.StatusTooManyRequests, "ASPSP_RATE_LIMIT_EXCEEDED", "The bank's daily limit of unattended requests for this account is reached")
			return
		}
		h(w, r, sess, ref.slot)
	}
}

// spend counts one unattended request of key today; false past the quota.
// A continuation page belongs to the request that began the listing, and a
// request with Psu-Ip-Address is the user's own: neither counts.
func (s *server) spend(key string) bool {
	limit := s.h.Options().DailyQuota
	if limit == 0 {
		limit = DefaultDailyQuota
	}
	if limit < 0 {
		return true
	}
	day := s.h.Clock()
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.quota[key]
	if u.day != day {
		u = quotaUse{day: day}
	}
	if u.count >= limit {
		return false
	}
	u.count++
	s.quota[key] = u
	return true
}

// details serves GET /accounts/{uid}/details.
func (s *server) details(w http.ResponseWriter, r *http.Request, sess *session, k int) {
	simkit.WriteJSON(w, http.StatusOK, s.accountResource(sess, k, r.PathValue("uid")))
}

// balances serves GET /accounts/{uid}/balances: a current account has
// CLBD and ITAV, savings CLBD only, the card XPCD (negative: owed) and
// CLAV (credit left).
func (s *server) balances(w http.ResponseWriter, _ *http.Request, sess *session, k int) {
	snap := s.h.Open(Name, sess.data, accountCount)
	h := simkit.Hash2(snap.Seed^0xba1, uint64(k))
	date := s.h.DateOf(snap.Clock).Format(time.DateOnly)
	var b simkit.JW
	bal := func(name, typ string, cents int64) {
		if len(b.B) > 0 {
			b.Comma()
		}
		b.Raw(`{"name":`)
		b.Str(name)
		b.Raw(`,"balance_amount":{"currency":"EUR","amount":`)
		b.CentsString(cents)
		b.Raw(`},"balance_type":`)
		b.Str(typ)
		b.Raw(`,"reference_date":`)
		b.Str(date)
		b.Byte('}')
	}
	switch k {
	case slotChecking:
		v := simkit.Between(h, 200000, 2500000) + snap.Clock*7919%50000
		bal("Booked", "CLBD", v)
		bal("Available", "ITAV", v-simkit.Between(simkit.Mix(h+1), 0, 20000))
	case slotSavings:
		bal("Booked", "CLBD", simkit.Between(h, 500000, 9000000))
	case slotCard:
		owed := simkit.Between(h, 5000, 250000) + snap.Clock*313%5000
		bal("Expected", "XPCD", -owed)
		bal("Credit left", "CLAV", 500000-owed)
	}
	simkit.WriteRaw(w, http.StatusOK, append(append([]byte(`{"balances":[`), b.B...), "]}"...))
}

// transactions serves GET /accounts/{uid}/transactions: rows booked or,
// when pending, made between date_from (default 90 days back) and date_to
// (default today), oldest first, PageSize a page; continuation_key
// resumes a listing at the same simulated day.
func (s *server) transactions(w http.ResponseWriter, r *http.Request, sess *session, k int) {
	snap := s.h.Open(Name, sess.data, accountCount)
	q := r.URL.Query()
	from, to := s.h.DateOf(snap.Clock-90), s.h.DateOf(snap.Clock)
	for _, p := range []struct {
		key string
		dst *time.Time
	}{{"date_from", &from}, {"date_to", &to}} {
		if v := q.Get(p.key); v != "" {
			d, err := domain.ParseDate(v)
			if err != nil {
				writeError(w, http.StatusUnprocessableEntity, "WRONG_TRANSACTIONS_PERIOD", p.key+" must be YYYY-MM-DD")
				return
			}
			*p.dst = d.Time
		}
	}
	t := &snap.TL
	lo, hi := s.h.DayOf(from), s.h.DayOf(to)
	var rows []int64
	for i := t.FirstIndex(lo - 3); i < t.Count(min(hi, snap.Clock)); i++ {
		if t.Account(i) != k {
			continue
		}
		l := t.LifeOf(i)
		switch l.State(snap.Clock) {
		case simkit.Pending:
			if l.Day >= lo {
				rows = append(rows, i)
			}
		case simkit.Posted, simkit.Modified:
			if l.PostDay() >= lo && l.PostDay() <= hi {
				rows = append(rows, i)
			}
		}
	}
	check := strings.Join([]string{r.PathValue("uid"), q.Get("date_from"), q.Get("date_to"), strconv.FormatInt(snap.Clock, 10)}, "|")
	start := 0
	if key := q.Get("continuation_key"); key != "" {
		off, sum, ok := strings.Cut(key, ".")
		n, err := strconv.Atoi(off)
		if !ok || err != nil || n < 0 || n > len(rows) || sum != continuationSum(check, n) {
			writeError(w, http.StatusUnprocessableEntity, "WRONG_CONTINUATION_KEY", "continuation_key is not one of this listing")
			return
		}
		start = n
	}
	end := min(start+PageSize, len(rows))
	var b simkit.JW
	b.Raw(`{"transactions":[`)
	for j, i := range rows[start:end] {
		if j > 0 {
			b.Comma()
		}
		s.writeRow(&b, t, i, snap.Clock)
	}
	b.Raw(`],"continuation_key":`)
	if end < len(rows) {
		b.Str(strconv.Itoa(end) + "." + continuationSum(check, end))
	} else {
		b.Null()
	}
	b.Byte('}')
	simkit.WriteRaw(w, http.StatusOK, b.B)
}

// continuationSum ties a continuation offset to its listing.
func continuationSum(listing string, offset int) string {
	return string(simkit.AppendHexFixed(nil, simkit.HashString(0xc0, listing, strconv.Itoa(offset)), 16))
}

// writeRow writes transaction i: entry_reference is the bank's reference,
// the same while pending and once booked; transaction_id comes with the
// booking; the amount is unsigned, its direction credit_debit_indicator.
func (s *server) writeRow(b *simkit.JW, t *simkit.Timeline, i, clock int64) {
	l := t.LifeOf(i)
	c := t.ContentOf(i, simkit.AccountKind(t.Account(i)))
	pending := l.State(clock) == simkit.Pending
	b.Raw(`{"entry_reference":"`)
	b.B = simkit.AppendHexFixed(b.B, simkit.Hash2(t.Seed^0xe4, uint64(i)), 16)
	b.Raw(`","transaction_id":`)
	if pending {
		b.Null()
	} else {
		b.Raw(`"`)
		b.B = simkit.AppendHexFixed(b.B, simkit.Hash2(t.Seed^0x71d, uint64(i)), 20)
		b.Raw(`"`)
	}
	b.Raw(`,"transaction_amount":{"currency":"EUR","amount":`)
	b.CentsString(max(c.Amount, -c.Amount))
	party, indicator := "debtor", "CRDT"
	if c.Amount < 0 {
		party, indicator = "creditor", "DBIT"
	}
	b.Raw(`},"credit_debit_indicator":"` + indicator + `","status":`)
	if pending {
		b.Raw(`"PDNG","booking_date":null`)
	} else {
		b.Raw(`"BOOK","booking_date":`)
		b.Date(s.h.DateOf(l.PostDay()))
	}
	b.Raw(`,"value_date":`)
	b.Date(s.h.DateOf(l.Day))
	b.Raw(`,"transaction_date":`)
	b.Date(s.h.DateOf(l.Day))
	b.Raw(`,"` + party + `":{"name":`)
	b.Str(c.M.Name)
	b.Raw(`},"remittance_information":[`)
	b.Str(c.M.BankDesc)
	b.Raw(`],"bank_transaction_code":{"description":`)
	if c.M.MCC != "" {
		b.Raw(`"Card payment","code":"CCRD","sub_code":"POSD"},"merchant_category_code":`)
		b.Str(c.M.MCC)
	} else {
		b.Raw(`"Transfer","code":"ICDT","sub_code":"ESCT"},"merchant_category_code":null`)
	}
	b.Byte('}')
}
