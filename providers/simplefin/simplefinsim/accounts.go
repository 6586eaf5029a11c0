package simplefinsim

import (
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/finsync/finsync/providers/sim"
	"github.com/finsync/finsync/providers/sim/simkit"
)

// MaxRangeDays bounds the date range of one request, as the Bridge does:
// a longer range is cut to its last MaxRangeDays days, with a message in
// the Account Set's errors.
const MaxRangeDays = 90

// Account slots of a simulated connection.
const (
	slotChecking = iota
	slotSavings
	slotCredit
	accountCount
)

// creditLimit is the credit card's limit in cents.
const creditLimit = 500000

// accountNames are the slots' account names (read-only).
var accountNames = [accountCount]string{"Everyday Checking", "High Yield Savings", "Rewards Credit Card"}

// basicUser returns the user of valid Basic credentials ("" when missing
// or wrong).
func basicUser(r *http.Request) string {
	b, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Basic ")
	if !ok {
		return ""
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(b))
	if err != nil {
		return ""
	}
	user, pass, ok := strings.Cut(string(raw), ":")
	if !ok || !strings.HasPrefix(user, "sfin") || !simkit.IsToken(user, 8, 64) || pass != password(user) {
		return ""
	}
	return user
}

// accountID returns the id of slot k of the connection seeded seed.
func accountID(seed uint64, k int) string {
	return "ACT-" + string(simkit.AppendHexFixed(nil, simkit.Hash2(seed^0xacc, uint64(k)), 16))
}

// accounts serves GET /simplefin/accounts: the Account Set, with the
// transactions made in [start-date, end-date) (pending ones only with
// pending=1), or only balances with balances-only=1.
func (s *server) accounts(w http.ResponseWriter, r *http.Request) {
	user := basicUser(r)
	if user == "" || s.h.ActiveFault(Name).Mode == sim.FaultLoginRequired {
		http.Error(w, "Forbidden", http.StatusForbidden)
		return
	}
	snap := s.h.Open(Name, user, accountCount)
	t := &snap.TL
	q := r.URL.Query()
	end := s.h.DateOf(snap.Clock + 1)
	start := end.AddDate(0, 0, -30)
	for _, p := range []struct {
		key string
		dst *time.Time
	}{{"start-date", &start}, {"end-date", &end}} {
		if v := q.Get(p.key); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				http.Error(w, p.key+" must be Unix seconds", http.StatusBadRequest)
				return
			}
			*p.dst = time.Unix(n, 0).UTC()
		}
	}
	var errs []string
	if end.Sub(start) > MaxRangeDays*24*time.Hour {
		start = end.AddDate(0, 0, -MaxRangeDays)
		errs = append(errs, "Date range limited to "+strconv.Itoa(MaxRangeDays)+" days.")
	}
	want := map[string]bool{}
	for _, id := range q["account"] {
		want[id] = true
	}
	pending, balancesOnly := q.Get("pending") == "1", q.Get("balances-only") == "1"
	var b simkit.JW
	b.Stream(w)
	b.Raw(`{"errors":[`)
	for k, e := range errs {
		if k > 0 {
			b.Comma()
		}
		b.Str(e)
	}
	b.Raw(`],"accounts":[`)
	n := 0
	for k := range accountCount {
		id := accountID(snap.Seed, k)
		if len(want) > 0 && !want[id] {
			continue
		}
		if n > 0 {
			b.Comma()
		}
		n++
		s.writeAccount(&b, snap, k, id)
		b.Raw(`,"transactions":[`)
		if !balancesOnly {
			s.writeTransactions(&b, t, k, start, end, pending, snap.Clock)
		}
		b.Raw(`]}`)
		b.Flush()
	}
	b.Raw(`]}`)
	b.End()
}

// writeAccount writes the account object of slot k, up to its transactions.
func (s *server) writeAccount(b *simkit.JW, snap sim.Snapshot, k int, id string) {
	h := simkit.Hash2(snap.Seed^0xba1, uint64(k))
	bal := simkit.Between(h, 200000, 2500000) + snap.Clock*7919%50000
	switch k {
	case slotSavings:
		bal = simkit.Between(h, 500000, 9000000)
	case slotCredit:
		bal = -simkit.Between(h, 5000, 250000)
	}
	b.Raw(`{"org":{"domain":"bank.example.com","sfin-url":"https://` + BridgeHost + `/simplefin","name":"Example Bank","id":"example-bank"},"id":`)
	b.Str(id)
	b.Raw(`,"name":`)
	b.Str(accountNames[k])
	b.Raw(`,"currency":"USD","balance":`)
	b.CentsString(bal)
	b.Raw(`,"available-balance":`)
	if k == slotCredit {
		b.CentsString(creditLimit + bal) // available credit
	} else {
		b.CentsString(bal - simkit.Between(simkit.Mix(h+1), 0, 20000))
	}
	b.Raw(`,"balance-date":`)
	b.Int(s.h.DateOf(snap.Clock).Add(6 * time.Hour).Unix())
}

// writeTransactions writes slot k's transactions posted (pending ones:
// made) in [start, end).
func (s *server) writeTransactions(b *simkit.JW, t *simkit.Timeline, k int, start, end time.Time, pending bool, clock int64) {
	n := 0
	hi := t.Count(min(clock, s.h.DayOf(end)))
	for i := t.FirstIndex(s.h.DayOf(start) - 3); i < hi; i++ { // a row posts at most 3 days after it is made
		if t.Account(i) != k {
			continue
		}
		l := t.LifeOf(i)
		st := l.State(clock)
		at := s.h.DateOf(l.Day).Add(time.Duration(t.SecondOfDay(i)) * time.Second)
		// The protocol's range is of posted dates (start inclusive, end
		// exclusive); a pending row is in it by the time it was made.
		posted := s.h.DateOf(l.PostDay()).Add(time.Duration(t.SecondOfDay(i))*time.Second + 90*time.Minute)
		in := posted
		if st == simkit.Pending {
			in = at
		}
		if st == simkit.Absent || st == simkit.Vanished || (st == simkit.Pending && !pending) || in.Before(start) || !in.Before(end) {
			continue
		}
		c := t.ContentOf(i, simkit.AccountKind(k))
		if n > 0 {
			b.Comma()
		}
		n++
		b.Raw(`{"id":"TRN-`)
		b.B = simkit.AppendHexFixed(b.B, uint64(i), 12)
		b.Raw(`","posted":`)
		if st == simkit.Pending {
			b.Int(0)
		} else {
			b.Int(posted.Unix())
		}
		b.Raw(`,"amount":`)
		b.CentsString(c.Amount)
		b.Raw(`,"description":`)
		b.Str(c.M.Name)
		b.Raw(`,"transacted_at":`)
		b.Int(at.Unix())
		if st == simkit.Pending {
			b.Raw(`,"pending":true`)
		}
		b.Byte('}')
		b.Flush()
	}
}
