package stripesim

import (
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/finsync/finsync/providers/sim/simkit"
)

// stripeRow is one generated balance transaction.
type stripeRow struct {
	typ, category, desc, srcPrefix, currency string
	amount, fee                              int64
	availDays                                int64
}

// stripeKind is a template of balance transactions.
type stripeKind struct {
	typ, category, desc, srcPrefix string
	lo, hi                         int64
	out                            bool
	availDays                      int64
}

// stripeKinds are the balance transaction templates, weighted by
// repetition (read-only).
var stripeKinds = [...]stripeKind{
	{"charge", "charge", "Payment for Invoice", "ch_", 1500, 45000, false, 2},
	{"charge", "charge", "Payment for Invoice", "ch_", 1500, 45000, false, 2},
	{"charge", "charge", "Subscription update", "ch_", 900, 9900, false, 2},
	{"charge", "charge", "Subscription creation", "ch_", 900, 9900, false, 2},
	{"charge", "charge", "Payment for Invoice", "ch_", 5000, 150000, false, 2},
	{"payment", "charge", "ACH payment", "py_", 10000, 300000, false, 3},
	{"refund", "refund", "REFUND FOR CHARGE (Payment for Invoice)", "re_", 900, 20000, true, 0},
	{"payout", "payout", "STRIPE PAYOUT", "po_", 50000, 800000, true, 0},
	{"stripe_fee", "fee", "Billing - Usage Fee", "", 100, 2500, true, 0},
	{"adjustment", "dispute", "Chargeback withdrawal for ch_", "du_", 2000, 20000, true, 0},
}

// stripeRowOf generates balance transaction i.
func (c *stripeConn) stripeRowOf(t *simkit.Timeline, i int64) stripeRow {
	h := simkit.Hash2(c.seed^0x57, uint64(t.Content(i)))
	k := &stripeKinds[simkit.Pick(h, len(stripeKinds))]
	r := stripeRow{typ: k.typ, category: k.category, desc: k.desc, srcPrefix: k.srcPrefix, currency: "usd", availDays: k.availDays}
	r.amount = simkit.Between(simkit.Mix(h), k.lo, k.hi)
	if c.jpy && (h>>32)%5 == 0 {
		r.currency = "jpy"
		r.amount = r.amount / 100 * 15
	}
	switch r.typ {
	case "charge", "payment":
		r.fee = r.amount*29/1000 + 30
		if r.currency == "jpy" {
			r.fee = r.amount * 36 / 1000
		}
	case "adjustment":
		r.fee = 1500
		if r.currency == "jpy" {
			r.fee = 2000
		}
	}
	if k.out {
		r.amount = -r.amount
	}
	return r
}

// stripeID returns the id of balance transaction i.
func (c *stripeConn) stripeID(i int64) string {
	b := make([]byte, 0, 28)
	b = append(b, "txn_1"...)
	b = append(b, c.tag...)
	b = appendBase62Fixed(b, uint64(i), 8)
	b = simkit.AppendAlnum(b, simkit.Hash2(c.seed^0x1d, uint64(i)), 9)
	return string(b)
}

// stripeIndex decodes a balance transaction id of this connection.
func (c *stripeConn) stripeIndex(id string) (int64, bool) {
	if len(id) != 28 || !strings.HasPrefix(id, "txn_1") || id[5:11] != c.tag {
		return 0, false
	}
	var v uint64
	for k := 11; k < 19; k++ {
		d := strings.IndexByte(simkit.Alnum, id[k])
		if d < 0 {
			return 0, false
		}
		v = v*62 + uint64(d)
	}
	i := int64(v)
	return i, c.stripeID(i) == id
}

// appendBase62Fixed appends v as exactly n base62 digits.
func appendBase62Fixed(b []byte, v uint64, n int) []byte {
	var d [16]byte
	for k := n - 1; k >= 0; k-- {
		d[k] = simkit.Alnum[v%62]
		v /= 62
	}
	return append(b, d[:n]...)
}

// created returns the Unix creation time of transaction i.
func (s *server) stripeCreated(t *simkit.Timeline, i int64) int64 {
	return s.h.DateOf(t.Day(i)).Unix() + t.SecondOfDay(i)
}

// writeStripeTx encodes balance transaction i at clock.
func (s *server) writeStripeTx(b *simkit.JW, c *stripeConn, t *simkit.Timeline, i, clock int64) {
	r := c.stripeRowOf(t, i)
	d := t.Day(i)
	status := "available"
	if clock < d+r.availDays {
		status = "pending"
	}
	b.Raw(`{"id":`)
	b.Str(c.stripeID(i))
	b.Raw(`,"object":"balance_transaction","amount":`)
	b.Int(r.amount)
	b.Raw(`,"available_on":`)
	b.Int(s.h.DateOf(d + r.availDays).Unix())
	b.Raw(`,"balance_type":"payments","created":`)
	b.Int(s.stripeCreated(t, i))
	b.Raw(`,"currency":`)
	b.Str(r.currency)
	b.Raw(`,"description":`)
	b.Str(r.desc)
	b.Raw(`,"exchange_rate":null,"fee":`)
	b.Int(r.fee)
	b.Raw(`,"fee_details":[`)
	if r.fee != 0 {
		b.Raw(`{"amount":`)
		b.Int(r.fee)
		b.Raw(`,"application":null,"currency":`)
		b.Str(r.currency)
		b.Raw(`,"description":"Stripe processing fees","type":"stripe_fee"}`)
	}
	b.Raw(`],"net":`)
	b.Int(r.amount - r.fee)
	b.Raw(`,"reporting_category":`)
	b.Str(r.category)
	b.Raw(`,"source":`)
	if r.srcPrefix == "" {
		b.Null()
	} else {
		b.Byte('"')
		b.Raw(r.srcPrefix)
		b.B = simkit.AppendAlnum(b.B, simkit.Hash2(c.seed^0x5c, uint64(i)), 24)
		b.Byte('"')
	}
	b.Raw(`,"status":`)
	b.Str(status)
	b.Raw(`,"type":`)
	b.Str(r.typ)
	b.Byte('}')
}

// stripeQuery is a parsed list request.
type stripeQuery struct {
	limit         int
	after, before int64 // -1 when absent
	lo, hi        int64 // index window [lo, hi)
	typ, currency string
}

// parseStripeQuery parses the list parameters.
func (s *server) parseStripeQuery(q url.Values, c *stripeConn, t *simkit.Timeline, clock int64) (stripeQuery, *stripeError) {
	sq := stripeQuery{limit: 10, after: -1, before: -1, hi: t.Count(clock), typ: q.Get("type"), currency: strings.ToLower(q.Get("currency"))}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return sq, &stripeError{Type: "invalid_request_error", Code: "parameter_invalid_integer", Param: "limit", Message: "Invalid integer: " + v}
		}
		if n < 1 || n > 100 {
			return sq, &stripeError{Type: "invalid_request_error", Param: "limit", Message: "Invalid limit: must be between 1 and 100"}
		}
		sq.limit = n
	}
	sa, eb := q.Get("starting_after"), q.Get("ending_before")
	if sa != "" && eb != "" {
		return sq, &stripeError{Type: "invalid_request_error", Message: "You may only specify one of these parameters: ending_before, starting_after."}
	}
	for _, p := range []struct {
		name, v string
		dst     *int64
	}{{"starting_after", sa, &sq.after}, {"ending_before", eb, &sq.before}} {
		if p.v == "" {
			continue
		}
		i, ok := c.stripeIndex(p.v)
		if !ok || i >= sq.hi {
			return sq, &stripeError{Type: "invalid_request_error", Code: "resource_missing", Param: p.name, Message: "No such balance transaction: '" + p.v + "'"}
		}
		*p.dst = i
	}
	return sq, s.parseStripeCreated(q, t, &sq)
}

// parseStripeCreated narrows the index window by the created filters.
func (s *server) parseStripeCreated(q url.Values, t *simkit.Timeline, sq *stripeQuery) *stripeError {
	n := int(sq.hi)
	first := func(ts int64) int64 { // first index created at or after ts
		return int64(sort.Search(n, func(i int) bool { return s.stripeCreated(t, int64(i)) >= ts }))
	}
	for _, op := range []string{"", "gt", "gte", "lt", "lte"} {
		name := "created"
		if op != "" {
			name = "created[" + op + "]"
		}
		v := q.Get(name)
		if v == "" {
			continue
		}
		ts, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return &stripeError{Type: "invalid_request_error", Code: "parameter_invalid_integer", Param: name, Message: "Invalid integer: " + v}
		}
		switch op {
		case "":
			sq.lo, sq.hi = max(sq.lo, first(ts)), min(sq.hi, first(ts+1))
		case "gt":
			sq.lo = max(sq.lo, first(ts+1))
		case "gte":
			sq.lo = max(sq.lo, first(ts))
		case "lt":
			sq.hi = min(sq.hi, first(ts))
		case "lte":
			sq.hi = min(sq.hi, first(ts+1))
		}
	}
	return nil
}

// matches reports whether transaction i passes the type/currency filters.
func (sq *stripeQuery) matches(c *stripeConn, t *simkit.Timeline, i int64) bool {
	if sq.typ == "" && sq.currency == "" {
		return true
	}
	r := c.stripeRowOf(t, i)
	return (sq.typ == "" || r.typ == sq.typ) && (sq.currency == "" || r.currency == sq.currency)
}

// stripeList serves GET /v1/balance_transactions.
func (s *server) stripeList(w http.ResponseWriter, r *http.Request, c *stripeConn) {
	snap := s.h.Open(Name, c.key, 1)
	t := &snap.TL
	sq, perr := s.parseStripeQuery(r.URL.Query(), c, t, snap.Clock)
	if perr != nil {
		writeStripeError(w, r, http.StatusBadRequest, *perr)
		return
	}
	idx, hasMore := sq.selectRows(c, t)
	b := simkit.JW{B: make([]byte, 0, min(256+len(idx)*600, simkit.StreamChunk+8<<10))}
	b.Stream(w)
	b.Raw(`{"object":"list","data":[`)
	for k, i := range idx {
		if k > 0 {
			b.Comma()
		}
		s.writeStripeTx(&b, c, t, i, snap.Clock)
		b.Flush()
	}
	b.Raw(`],"has_more":`)
	b.Bool(hasMore)
	b.Raw(`,"url":"/v1/balance_transactions"}`)
	b.End()
}

// selectRows returns the indices of the page, newest first, and whether
// more rows lie beyond it in the paging direction.
func (sq *stripeQuery) selectRows(c *stripeConn, t *simkit.Timeline) ([]int64, bool) {
	var idx []int64
	if sq.before >= 0 {
		for i := max(sq.lo, sq.before+1); i < sq.hi; i++ {
			if !sq.matches(c, t, i) {
				continue
			}
			if len(idx) == sq.limit {
				slices.Reverse(idx)
				return idx, true
			}
			idx = append(idx, i)
		}
		slices.Reverse(idx)
		return idx, false
	}
	top := sq.hi
	if sq.after >= 0 {
		top = min(top, sq.after)
	}
	for i := top - 1; i >= sq.lo; i-- {
		if !sq.matches(c, t, i) {
			continue
		}
		if len(idx) == sq.limit {
			return idx, true
		}
		idx = append(idx, i)
	}
	return idx, false
}

// stripeGet serves GET /v1/balance_transactions/{id}.
func (s *server) stripeGet(w http.ResponseWriter, r *http.Request, c *stripeConn) {
	snap := s.h.Open(Name, c.key, 1)
	id := r.PathValue("id")
	i, ok := c.stripeIndex(id)
	if !ok || i >= snap.TL.Count(snap.Clock) {
		writeStripeError(w, r, http.StatusNotFound, stripeError{Type: "invalid_request_error", Code: "resource_missing", Param: "id", Message: "No such balance transaction: '" + id + "'"})
		return
	}
	var b simkit.JW
	s.writeStripeTx(&b, c, &snap.TL, i, snap.Clock)
	simkit.WriteRaw(w, http.StatusOK, b.B)
}

// stripeBalance serves GET /v1/balance.
func (s *server) stripeBalance(w http.ResponseWriter, _ *http.Request, c *stripeConn) {
	s.notes.seen(c)
	simkit.WriteJSON(w, http.StatusOK, s.balanceOf(c))
}

// balanceOf is the account's balance object at the current clock.
func (s *server) balanceOf(c *stripeConn) map[string]any {
	snap := s.h.Open(Name, c.key, 1)
	t := &snap.TL
	pending := map[string]int64{"usd": 0}
	available := map[string]int64{"usd": simkit.Between(simkit.Hash2(c.seed, 0xba1), 100000, 5000000) + snap.Clock*4711%100000}
	if c.jpy {
		pending["jpy"] = 0
		available["jpy"] = simkit.Between(simkit.Hash2(c.seed, 0xba2), 10000, 900000)
	}
	for i := t.FirstIndex(snap.Clock - 3); i < t.Count(snap.Clock); i++ {
		row := c.stripeRowOf(t, i)
		if snap.Clock < t.Day(i)+row.availDays {
			pending[row.currency] += row.amount - row.fee
		}
	}
	list := func(m map[string]int64) []map[string]any {
		var out []map[string]any
		for _, cur := range []string{"usd", "jpy"} {
			if v, ok := m[cur]; ok {
				out = append(out, map[string]any{"amount": v, "currency": cur, "source_types": map[string]int64{"card": v}})
			}
		}
		return out
	}
	return map[string]any{
		"object": "balance", "livemode": c.live, "available": list(available), "pending": list(pending),
		"connect_reserved": []any{}, "instant_available": list(available),
	}
}
