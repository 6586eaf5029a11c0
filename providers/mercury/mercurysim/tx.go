package mercurysim

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/finsync/finsync/providers/sim"
	"github.com/finsync/finsync/providers/sim/simkit"
)

// mercuryTxID returns the id of transaction i: a UUID carrying the
// organisation tag and the index.
func (o *mercuryOrg) mercuryTxID(b []byte, i int64) []byte {
	h := simkit.Hash2(o.seed^0x3e7, uint64(i))
	b = simkit.AppendHexFixed(b, o.tag&0xffffffff, 8)
	b = append(b, '-')
	b = simkit.AppendHexFixed(b, h>>48, 4)
	b = append(b, '-', '4')
	b = simkit.AppendHexFixed(b, (h>>36)&0xfff, 3)
	b = append(b, '-', simkit.HexDigits[8|(h>>34)&0x3])
	b = simkit.AppendHexFixed(b, (h>>22)&0xfff, 3)
	b = append(b, '-')
	return simkit.AppendHexFixed(b, uint64(i), 12)
}

// mercuryTxIndex decodes a transaction id of this organisation.
func (o *mercuryOrg) mercuryTxIndex(id string) (int64, bool) {
	if len(id) != 36 {
		return 0, false
	}
	v, ok := simkit.ParseHexFixed(id[24:])
	if !ok {
		return 0, false
	}
	i := int64(v)
	return i, string(o.mercuryTxID(nil, i)) == id
}

// orgScope applies the org-wide feed's accountId filter and start_after
// cursor; it returns a message for a 400 on bad input.
func (mq *mercuryQuery) orgScope(q url.Values, o *mercuryOrg) string {
	mq.filter.slots = 0
	for _, id := range append(q["accountId"], q["accountId[]"]...) {
		slot := o.slotOf(id)
		if slot < 0 {
			return "unknown accountId: " + id
		}
		mq.filter.slots |= 1 << slot
	}
	if mq.filter.slots == 0 {
		mq.filter.slots = 1<<mercuryAccountCount - 1
	}
	if v := q.Get("start_after"); v != "" {
		i, ok := o.mercuryTxIndex(v)
		if !ok {
			return "start_after: unknown transaction id"
		}
		if mq.desc {
			mq.hi = min(mq.hi, i)
		} else {
			mq.lo = max(mq.lo, i+1)
		}
	}
	return ""
}

// mercuryStatus maps a life-cycle state to Mercury's status.
func mercuryStatus(st simkit.TxState) string {
	switch st {
	case simkit.Pending:
		return "pending"
	case simkit.Vanished:
		return "cancelled"
	default:
		return "sent"
	}
}

// writeMercuryTx encodes transaction i at clock.
func (s *server) writeMercuryTx(b *simkit.JW, o *mercuryOrg, t *simkit.Timeline, i int64, l simkit.Life, clock int64) {
	slot := t.Account(i)
	c := t.ContentOf(i, simkit.AccountKind(slot))
	m := c.M
	mc := mercuryCatOf(simkit.AccountKind(slot), m)
	st := l.State(clock)
	created := s.h.DateOf(l.Day).Add(time.Duration(t.SecondOfDay(i)) * time.Second)
	b.Raw(`{"id":"`)
	b.B = o.mercuryTxID(b.B, i)
	b.Raw(`","accountId":`)
	b.Str(o.accounts[slot])
	b.Raw(`,"feeId":null,"amount":`)
	b.Cents(c.Amount)
	b.Raw(`,"createdAt":`)
	b.Str(mercuryTime(created))
	b.Raw(`,"postedAt":`)
	if st == simkit.Posted || st == simkit.Modified {
		b.Str(mercuryTime(s.h.DateOf(l.PostDay()).Add(time.Duration(t.SecondOfDay(i))*time.Second + 90*time.Minute)))
	} else {
		b.Null()
	}
	b.Raw(`,"estimatedDeliveryDate":`)
	b.Str(mercuryTime(s.h.DateOf(l.PostDay()).Add(time.Duration(t.SecondOfDay(i)) * time.Second)))
	b.Raw(`,"status":`)
	b.Str(mercuryStatus(st))
	b.Raw(`,"note":null,"bankDescription":`)
	b.Str(m.BankDesc)
	b.Raw(`,"externalMemo":null,"counterpartyId":`)
	b.Str(simkit.UUIDFrom(simkit.HashString(o.seed, m.Name)))
	b.Raw(`,"counterpartyName":`)
	b.Str(m.Name)
	b.Raw(`,"counterpartyNickname":null,"kind":`)
	b.Str(mc.kind)
	b.Raw(`,"mercuryCategory":`)
	b.Str(mc.category)
	b.Raw(`,"categoryData":`)
	if (c.H>>40)%4 == 0 {
		cat := simkit.Pick(c.H>>8, len(mercuryCustomCategories))
		b.Raw(`{"id":`)
		b.Str(o.mercuryCategoryID(cat))
		b.Raw(`,"name":`)
		b.Str(mercuryCustomCategories[cat])
		b.Byte('}')
	} else {
		b.Null()
	}
	b.Raw(`,"dashboardLink":"https://app.mercury.com/transactions/`)
	b.B = o.mercuryTxID(b.B, i)
	b.Raw(`","reasonForFailure":null,"failedAt":null,"checkNumber":null,"currencyExchangeInfo":null,"relatedTransactions":[],"glAllocations":[],"attachments":[]`)
	if m.MCC != "" {
		b.Raw(`,"cardId":`)
		b.Str(simkit.UUIDFrom(simkit.Hash2(o.seed^0xca2d, uint64(slot))))
		b.Raw(`,"merchant":{"id":`)
		b.Str(simkit.UUIDFrom(simkit.HashString(o.seed^0x3e2c, m.Name)))
		b.Raw(`,"amount":`)
		b.Int(-c.Amount)
		b.Raw(`,"category":`)
		b.Str(mc.category)
		b.Raw(`,"categoryCode":`)
		b.Str(m.MCC)
		b.Raw(`,"currency":"USD"}`)
	} else {
		b.Raw(`,"cardId":null,"merchant":null`)
	}
	b.Byte('}')
}

// mercuryFilter holds the row filters of a transaction query.
type mercuryFilter struct {
	slots    uint8 // bitmask of account slots
	status   map[string]bool
	category string
	search   string
}

// scan reports whether the filter needs per-row inspection.
func (f *mercuryFilter) scan() bool {
	return len(f.status) > 0 || f.category != "" || f.search != ""
}

// match reports whether transaction i passes the filter at clock.
func (f *mercuryFilter) match(t *simkit.Timeline, i int64, clock int64) bool {
	if f.slots&(1<<t.Account(i)) == 0 {
		return false
	}
	if !f.scan() {
		return true
	}
	l := t.LifeOf(i)
	if len(f.status) > 0 && !f.status[mercuryStatus(l.State(clock))] {
		return false
	}
	kind := simkit.AccountKind(t.Account(i))
	m := t.ContentOf(i, kind).M
	if f.category != "" && mercuryCatOf(kind, m).category != f.category {
		return false
	}
	if f.search != "" && !strings.Contains(strings.ToLower(m.Name+" "+m.BankDesc), strings.ToLower(f.search)) {
		return false
	}
	return true
}

// parseMercuryDay parses YYYY-MM-DD or an ISO 8601 instant into a sim day.
func (s *server) parseMercuryDay(v string) (int64, bool) {
	if d, err := time.Parse(time.DateOnly, v); err == nil {
		return s.h.DayOf(d), true
	}
	if d, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return s.h.DayOf(d.UTC()), true
	}
	return 0, false
}

// mercuryQuery is the parsed common part of a transaction query.
type mercuryQuery struct {
	lo, hi int64 // index window [lo, hi)
	limit  int
	desc   bool
	filter mercuryFilter
}

// parseMercuryQuery parses limit, order, status, category, search and the
// date range (defStart: default first day; nil = whole history). It
// returns a message for a 400 on bad input.
func (s *server) parseMercuryQuery(q url.Values, t *simkit.Timeline, clock int64, defOrder string, defStart *int64) (mercuryQuery, string) {
	mq := mercuryQuery{limit: 1000}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			return mq, "limit must be an integer between 1 and 1000"
		}
		mq.limit = n
	}
	order := q.Get("order")
	if order == "" {
		order = defOrder
	}
	if order != "asc" && order != "desc" {
		return mq, "order must be asc or desc"
	}
	mq.desc = order == "desc"
	startDay, endDay := int64(-1<<40), clock
	if defStart != nil {
		startDay = *defStart
	}
	for _, p := range []struct {
		name string
		dst  *int64
	}{{"start", &startDay}, {"end", &endDay}} {
		if v := q.Get(p.name); v != "" {
			d, ok := s.parseMercuryDay(v)
			if !ok {
				return mq, p.name + " must be a date (YYYY-MM-DD) or an ISO 8601 date-time"
			}
			*p.dst = d
		}
	}
	if msg := mq.filter.parse(q); msg != "" {
		return mq, msg
	}
	mq.lo = t.FirstIndex(startDay)
	mq.hi = max(mq.lo, t.Count(min(endDay, clock)))
	return mq, ""
}

// parse reads the status, mercuryCategory and search filters.
func (f *mercuryFilter) parse(q url.Values) string {
	statuses := append(q["status"], q["status[]"]...)
	if len(statuses) > 0 {
		f.status = map[string]bool{}
		for _, st := range statuses {
			switch st {
			case "pending", "sent", "cancelled", "failed", "reversed", "blocked":
				f.status[st] = true
			default:
				return "invalid status: " + st
			}
		}
	}
	f.category, f.search = q.Get("mercuryCategory"), q.Get("search")
	if f.category != "" && !isMercuryCategory(f.category) {
		return "invalid mercuryCategory: " + f.category
	}
	return ""
}

// mercuryAccountTransactions serves GET /api/v1/account/{id}/transactions:
// the page kept in the memo when the same query was answered before at
// the same clock (sim.Options.MemoBytes), else the page rendered (and
// kept, when the memo has room).
func (s *server) mercuryAccountTransactions(w http.ResponseWriter, r *http.Request, o *mercuryOrg) {
	slot := o.slotOf(r.PathValue("id"))
	if slot < 0 {
		writeMercuryError(w, http.StatusNotFound, "Account not found")
		return
	}
	gen := s.memo.generation() // before the snapshot: see keep
	snap := s.h.Open(Name, o.token, mercuryAccountCount)
	key := pageKey{token: o.token, slot: slot, query: r.URL.RawQuery, clock: snap.Clock}
	body, room := s.memo.lookup(key)
	switch {
	case body != nil:
		simkit.WriteRaw(w, http.StatusOK, body)
	case room:
		tee := &teeWriter{ResponseWriter: w}
		if s.writeAccountTransactions(tee, r.URL.Query(), o, slot, &snap) {
			s.memo.keep(key, gen, tee.body)
		}
	default:
		s.writeAccountTransactions(w, r.URL.Query(), o, slot, &snap)
	}
}

// writeAccountTransactions renders and streams one page of an account's
// transactions from snap, and reports whether it did (false: it answered
// a 400 for a bad query).
func (s *server) writeAccountTransactions(w http.ResponseWriter, q url.Values, o *mercuryOrg, slot int, snap *sim.Snapshot) bool {
	t := &snap.TL
	defStart := snap.Clock - 30
	mq, msg := s.parseMercuryQuery(q, t, snap.Clock, "desc", &defStart)
	offset := 0
	if v := q.Get("offset"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			msg = "offset must be a non-negative integer"
		}
		offset = n
	}
	if msg != "" {
		writeMercuryError(w, http.StatusBadRequest, msg)
		return false
	}
	mq.filter.slots = 1 << slot
	idx, total := mercuryPage(t, mq, slot, offset, snap.Clock)
	b := simkit.JW{B: make([]byte, 0, min(256+len(idx)*900, simkit.StreamChunk+8<<10))}
	b.Stream(w)
	b.Raw(`{"total":`)
	b.Int(total)
	b.Raw(`,"transactions":[`)
	for k, i := range idx {
		if k > 0 {
			b.Comma()
		}
		s.writeMercuryTx(&b, o, t, i, t.LifeOf(i), snap.Clock)
		b.Flush()
	}
	b.Raw(`]}`)
	b.End()
	return true
}

// mercuryPage returns one page of an account's transactions in [lo, hi)
// and the total number matching.
func mercuryPage(t *simkit.Timeline, mq mercuryQuery, slot, offset int, clock int64) ([]int64, int64) {
	lo, hi, limit, desc, f := mq.lo, mq.hi, mq.limit, mq.desc, &mq.filter
	k := t.Accounts
	first := lo + ((int64(slot)-lo)%k+k)%k
	if !f.scan() {
		total := int64(0)
		if first < hi {
			total = (hi-first-1)/k + 1
		}
		var idx []int64
		for j := int64(offset); j < total && len(idx) < limit; j++ {
			p := j
			if desc {
				p = total - 1 - j
			}
			idx = append(idx, first+p*k)
		}
		return idx, total
	}
	var idx []int64
	var total int64
	visit := func(i int64) {
		if !f.match(t, i, clock) {
			return
		}
		if total >= int64(offset) && len(idx) < limit {
			idx = append(idx, i)
		}
		total++
	}
	if desc {
		last := first + ((hi-1-first)/k)*k
		for i := last; i >= first && first < hi; i -= k {
			visit(i)
		}
	} else {
		for i := first; i < hi; i += k {
			visit(i)
		}
	}
	return idx, total
}

// mercuryTransaction serves GET /api/v1/account/{id}/transaction/{txid}.
func (s *server) mercuryTransaction(w http.ResponseWriter, r *http.Request, o *mercuryOrg) {
	slot := o.slotOf(r.PathValue("id"))
	snap := s.h.Open(Name, o.token, mercuryAccountCount)
	i, ok := o.mercuryTxIndex(r.PathValue("txid"))
	if slot < 0 || !ok || i >= snap.TL.Count(snap.Clock) || snap.TL.Account(i) != slot {
		writeMercuryError(w, http.StatusNotFound, "Transaction not found")
		return
	}
	var b simkit.JW
	s.writeMercuryTx(&b, o, &snap.TL, i, snap.TL.LifeOf(i), snap.Clock)
	simkit.WriteRaw(w, http.StatusOK, b.B)
}

// mercuryOrgTransactions serves GET /api/v1/transactions.
func (s *server) mercuryOrgTransactions(w http.ResponseWriter, r *http.Request, o *mercuryOrg) {
	snap := s.h.Open(Name, o.token, mercuryAccountCount)
	t := &snap.TL
	q := r.URL.Query()
	mq, msg := s.parseMercuryQuery(q, t, snap.Clock, "asc", nil)
	if msg == "" {
		msg = mq.orgScope(q, o)
	}
	if msg != "" {
		writeMercuryError(w, http.StatusBadRequest, msg)
		return
	}
	lo, hi, limit, desc, f := mq.lo, mq.hi, mq.limit, mq.desc, &mq.filter
	b := simkit.JW{B: make([]byte, 0, min(256+limit*900, simkit.StreamChunk+8<<10))}
	b.Stream(w)
	b.Raw(`{"transactions":[`)
	n := 0
	step, i := int64(1), lo
	if desc {
		step, i = -1, hi-1
	}
	for ; i >= lo && i < hi && n < limit; i += step {
		if !f.match(t, i, snap.Clock) {
			continue
		}
		if n > 0 {
			b.Comma()
		}
		n++
		s.writeMercuryTx(&b, o, t, i, t.LifeOf(i), snap.Clock)
		b.Flush()
	}
	b.Raw(`]}`)
	b.End()
}
