package sim

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// syncCursor is the decoded form of a /transactions/sync cursor. A loop
// start or end cursor has end=true and records the clock the client is in
// sync with (from=-1: never synced). A mid-loop cursor records the loop's
// clocks and the next transaction index.
type syncCursor struct {
	tag  string
	end  bool
	from int64
	to   int64
	pos  int64
	slot int
}

// encode returns the opaque cursor string.
func (c syncCursor) encode() string {
	k := "m"
	if c.end {
		k = "e"
	}
	raw := fmt.Sprintf("%s.%s.%d.%d.%d.%d", c.tag, k, c.from, c.to, c.pos, c.slot)
	return base64.RawURLEncoding.EncodeToString([]byte(raw))
}

// decodeSyncCursor parses a cursor issued for the connection with tag.
func decodeSyncCursor(s, tag string) (syncCursor, bool) {
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return syncCursor{}, false
	}
	p := strings.Split(string(raw), ".")
	if len(p) != 6 || p[0] != tag || (p[1] != "e" && p[1] != "m") {
		return syncCursor{}, false
	}
	var n [4]int64
	for k := range n {
		v, err := strconv.ParseInt(p[2+k], 10, 64)
		if err != nil {
			return syncCursor{}, false
		}
		n[k] = v
	}
	return syncCursor{tag: tag, end: p[1] == "e", from: n[0], to: n[1], pos: n[2], slot: int(n[3])}, true
}

// syncTag identifies the connection a cursor belongs to.
func syncTag(seed uint64) string { return string(appendHex(nil, seed, 8)) }

// plaidSync serves /transactions/sync.
func (s *Simulator) plaidSync(w http.ResponseWriter, r *http.Request, req *plaidRequest, it *plaidItem) {
	count := 100
	if req.Count != nil {
		count = *req.Count
	}
	if count < 1 || count > 500 {
		writePlaidError(w, r, http.StatusBadRequest, "INVALID_REQUEST", "INVALID_FIELD", "count must be between 1 and 500", "")
		return
	}
	slot := -1
	if req.Options.AccountID != "" {
		if slot = it.accountIndex(req.Options.AccountID); slot < 0 {
			writePlaidError(w, r, http.StatusBadRequest, "INVALID_INPUT", "INVALID_ACCOUNT_ID", "one or more of the account IDs is invalid", "")
			return
		}
	}
	snap := s.open(Plaid, req.AccessToken, plaidTxAccounts)
	cur, errCode := s.plaidLoopPosition(req, snap, slot)
	if errCode != "" {
		s.writeSyncError(w, r, errCode)
		return
	}
	opts := plaidTxOptions{
		pfc:       req.Options.PFCVersion,
		origDesc:  req.Options.IncludeOriginalDescription,
		tag:       syncTag(snap.seed),
		inst:      pick(hash2(it.seed, 1), len(plaidInstitutions)),
		accountID: func(k int) string { return it.accounts[k].id },
		dateOf:    s.dateOf,
	}
	if opts.pfc == "" {
		opts.pfc = "v1"
	}
	b := s.getBuf(streamChunk + 16<<10)
	defer s.putBuf(b)
	b.stream(w)
	page := buildSyncPage(b, &snap.tl, cur, count, &opts)
	b.raw(`,"accounts":`)
	slots, _ := it.filterAccounts(nil)
	it.writeAccounts(b, slots, s.wallNow(), false)
	b.raw(`,"has_more":`)
	b.bool(page.hasMore)
	b.raw(`,"next_cursor":`)
	b.str(page.next.encode())
	b.raw(`,"request_id":`)
	b.str(plaidRequestID())
	b.raw(`,"transactions_update_status":"HISTORICAL_UPDATE_COMPLETE"}`)
	b.end()
}

// plaidLoopPosition resolves the request's cursor to the loop position to
// serve, or returns an error code.
func (s *Simulator) plaidLoopPosition(req *plaidRequest, snap snapshot, slot int) (syncCursor, string) {
	tag := syncTag(snap.seed)
	start := syncCursor{tag: tag, from: -1, to: snap.clock, slot: slot}
	if req.Cursor == nil || *req.Cursor == "" {
		return start, ""
	}
	if *req.Cursor == "now" {
		return syncCursor{tag: tag, end: true, from: snap.clock, to: snap.clock, pos: snap.tl.count(snap.clock), slot: slot}, ""
	}
	c, ok := decodeSyncCursor(*req.Cursor, tag)
	if !ok || c.slot != slot || c.to > snap.clock {
		return c, "INVALID_CURSOR"
	}
	if c.end {
		start.from = c.to
		start.pos = snap.tl.unsettledFrom(c.to)
		if c.to == snap.clock {
			start.pos = snap.tl.count(snap.clock)
		}
		return start, ""
	}
	if c.to != snap.clock || s.takeMutationFault() {
		return c, "TRANSACTIONS_SYNC_MUTATION_DURING_PAGINATION"
	}
	return c, ""
}

// writeSyncError writes a /transactions/sync error.
func (s *Simulator) writeSyncError(w http.ResponseWriter, r *http.Request, code string) {
	if code == "INVALID_CURSOR" {
		writePlaidError(w, r, http.StatusBadRequest, "INVALID_REQUEST", "INVALID_FIELD", "cursor is invalid or expired", "")
		return
	}
	writePlaidError(w, r, http.StatusBadRequest, "TRANSACTIONS_ERROR", code,
		"Underlying transaction data changed since last page was fetched. Please restart pagination from last update.", "")
}

// plaidTxOptions carries what encoding a Plaid transaction needs besides
// the timeline.
type plaidTxOptions struct {
	pfc       string
	origDesc  bool
	tag       string
	inst      int
	accountID func(slot int) string
	dateOf    func(day int64) time.Time
}

// syncPage is the outcome of one page.
type syncPage struct {
	hasMore bool
	next    syncCursor
}

// syncChange is what one transaction contributes to a page.
type syncChange struct {
	added, modified, removed bool
	addState                 txState
}

// changeOf computes the change of transaction i between the loop's clocks.
func changeOf(l life, from, to int64) syncChange {
	s1 := l.state(to)
	if from < 0 {
		if s1 == stVanished || s1 == stAbsent {
			return syncChange{}
		}
		return syncChange{added: true, addState: s1}
	}
	s0 := l.state(from)
	if s0 == s1 || (s0 == stModified && s1 == stPosted) {
		return syncChange{}
	}
	switch s0 {
	case stAbsent:
		if s1 == stVanished {
			return syncChange{}
		}
		return syncChange{added: true, addState: s1}
	case stPending:
		if s1 == stVanished {
			return syncChange{removed: true}
		}
		return syncChange{removed: true, added: true, addState: s1}
	case stPosted:
		return syncChange{modified: s1 == stModified, addState: s1}
	}
	return syncChange{}
}

// buildSyncPage writes the "added", "modified" and "removed" arrays of one
// page starting at cur, and returns the next position. A streamed b is
// flushed between rows.
func buildSyncPage(b *jw, t *timeline, cur syncCursor, count int, o *plaidTxOptions) syncPage {
	b.raw(`{"added":[`)
	i, end, modified, removed := writeAdded(b, t, cur, count, o)
	b.raw(`],"modified":[`)
	for k, j := range modified {
		if k > 0 {
			b.comma()
		}
		writePlaidTx(b, t, j, t.lifeOf(j), stModified, o)
		b.flush()
	}
	b.raw(`],"removed":[`)
	for k, j := range removed {
		if k > 0 {
			b.comma()
		}
		b.raw(`{"account_id":`)
		b.str(o.accountID(t.account(j)))
		b.raw(`,"transaction_id":`)
		b.b = appendPlaidTxID(b.b, t.seed, j, true)
		b.byte('}')
		b.flush()
	}
	b.byte(']')
	if i >= end {
		return syncPage{next: syncCursor{tag: o.tag, end: true, from: cur.to, to: cur.to, slot: cur.slot}}
	}
	next := cur
	next.pos = i
	return syncPage{hasMore: true, next: next}
}

// writeAdded walks the loop from cur, writes the added rows of up to count
// changes and returns where it stopped, the loop's end, and the indices of
// the modified and removed rows of the page.
func writeAdded(b *jw, t *timeline, cur syncCursor, count int, o *plaidTxOptions) (i, end int64, modified, removed []int64) {
	end = t.count(cur.to)
	step := int64(1)
	i = cur.pos
	if cur.slot >= 0 {
		step = t.accounts
		i += ((int64(cur.slot)-i)%t.accounts + t.accounts) % t.accounts
	}
	n, first := 0, true
	for ; i < end; i += step {
		l := t.lifeOf(i)
		ch := changeOf(l, cur.from, cur.to)
		k := btoi(ch.added) + btoi(ch.modified) + btoi(ch.removed)
		if k == 0 {
			continue
		}
		if n+k > count && n > 0 {
			break
		}
		n += k
		if ch.removed {
			removed = append(removed, i)
		}
		if ch.modified {
			modified = append(modified, i)
		}
		if ch.added {
			if !first {
				b.comma()
			}
			first = false
			writePlaidTx(b, t, i, l, ch.addState, o)
			b.flush()
		}
	}
	return i, end, modified, removed
}

// btoi converts a bool to 0 or 1.
func btoi(v bool) int {
	if v {
		return 1
	}
	return 0
}

// appendPlaidTxID appends the quoted transaction id of transaction i (its
// pending or posted version).
func appendPlaidTxID(b []byte, seed uint64, i int64, pending bool) []byte {
	v := uint64(0x7a)
	if pending {
		v = 0x7b
	}
	b = append(b, '"')
	b = appendAlnum(b, hash2(seed^v, uint64(i)), 27)
	x := uint64(i)
	var d [10]byte
	for k := 9; k >= 0; k-- {
		d[k] = alnum[x%62]
		x /= 62
	}
	b = append(b, d[:]...)
	return append(b, '"')
}

// writePlaidTx encodes transaction i in state st as a Plaid Transaction.
func writePlaidTx(b *jw, t *timeline, i int64, l life, st txState, o *plaidTxOptions) {
	slot := t.account(i)
	c := t.contentOf(i, acctKind(slot))
	m := c.m
	pending := st == stPending
	b.raw(`{"account_id":`)
	b.str(o.accountID(slot))
	b.raw(`,"account_owner":null,"amount":`)
	b.cents(-c.amount)
	b.raw(`,"authorized_date":`)
	b.date(o.dateOf(l.day))
	b.raw(`,"authorized_datetime":`)
	if o.inst%2 == 0 {
		b.datetime(o.dateOf(l.day).Add(time.Duration(t.secondOfDay(i)) * time.Second))
	} else {
		b.null()
	}
	b.raw(`,"category":null,"category_id":null,"check_number":null,"counterparties":[`)
	if m.hasMerchant {
		b.raw(`{"confidence_level":"VERY_HIGH","entity_id":null,"logo_url":null,"name":`)
		b.str(m.name)
		b.raw(`,"phone_number":null,"type":"merchant","website":null}`)
	}
	b.raw(`],"date":`)
	if pending {
		b.date(o.dateOf(l.day))
	} else {
		b.date(o.dateOf(l.postDay()))
	}
	b.raw(`,"datetime":null,"iso_currency_code":"USD","unofficial_currency_code":null,"location":{"address":null,"city":null,"country":null,"lat":null,"lon":null,"postal_code":null,"region":null,"store_number":null},"logo_url":null,"merchant_entity_id":null`)
	writePlaidTxNames(b, m, st, o)
	writePlaidTxTail(b, t, i, l, m, pending, o)
}

// writePlaidTxNames writes merchant_name, name and original_description;
// a modified row has its name cleaned up.
func writePlaidTxNames(b *jw, m *merchant, st txState, o *plaidTxOptions) {
	b.raw(`,"merchant_name":`)
	if m.hasMerchant {
		b.str(m.name)
	} else {
		b.null()
	}
	b.raw(`,"name":`)
	if st == stModified {
		b.str(m.name)
	} else {
		b.str(m.bankDesc)
	}
	b.raw(`,"original_description":`)
	if o.origDesc {
		b.str(m.bankDesc)
	} else {
		b.null()
	}
}

// writePlaidTxTail writes the remaining fields from payment_channel on.
func writePlaidTxTail(b *jw, t *timeline, i int64, l life, m *merchant, pending bool, o *plaidTxOptions) {
	b.raw(`,"payment_channel":`)
	b.str(m.channel)
	b.raw(`,"payment_meta":{"by_order_of":null,"payee":null,"payer":null,"payment_method":null,"payment_processor":null,"ppd_id":null,"reason":null,"reference_number":null},"pending":`)
	b.bool(pending)
	b.raw(`,"pending_transaction_id":`)
	if !pending && l.pendDays > 0 {
		b.b = appendPlaidTxID(b.b, t.seed, i, true)
	} else {
		b.null()
	}
	b.raw(`,"personal_finance_category":{"confidence_level":"VERY_HIGH","detailed":`)
	b.str(m.pfcDetailedFor(o.pfc))
	b.raw(`,"primary":`)
	b.str(m.pfcPrimary)
	b.raw(`,"version":`)
	b.str(o.pfc)
	b.raw(`},"transaction_code":null,"transaction_id":`)
	b.b = appendPlaidTxID(b.b, t.seed, i, pending && l.pendDays > 0)
	b.raw(`,"transaction_type":`)
	switch m.channel {
	case "online":
		b.str("digital")
	case "in store":
		b.str("place")
	default:
		b.str("special")
	}
	b.raw(`,"website":null}`)
}
