package plaidsim

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/finsync/finsync/providers/sim"
	"github.com/finsync/finsync/providers/sim/simkit"
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
func syncTag(seed uint64) string { return string(simkit.AppendHex(nil, seed, 8)) }

// plaidSync serves /transactions/sync.
func (s *server) plaidSync(w http.ResponseWriter, r *http.Request, req *plaidRequest, it *plaidItem) {
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
	s.notes.synced(it)
	snap := s.h.Open(Name, it.key, plaidTxAccounts)
	cur, errCode := s.plaidLoopPosition(req, snap, syncTag(it.idSeed), slot)
	if errCode != "" {
		s.writeSyncError(w, r, errCode)
		return
	}
	opts := plaidTxOptions{
		pfc:       req.Options.PFCVersion,
		origDesc:  req.Options.IncludeOriginalDescription,
		tag:       syncTag(it.idSeed),
		idSeed:    it.idSeed,
		inst:      simkit.Pick(simkit.Hash2(it.seed, 1), len(plaidInstitutions)),
		accountID: func(k int) string { return it.accounts[k].id },
		dateOf:    s.h.DateOf,
	}
	if opts.pfc == "" {
		opts.pfc = "v1"
	}
	b := s.getBuf(simkit.StreamChunk + 16<<10)
	defer s.putBuf(b)
	b.Stream(w)
	page := buildSyncPage(b, &snap.TL, cur, count, &opts)
	b.Raw(`,"accounts":`)
	slots, _ := it.filterAccounts(nil)
	it.writeAccounts(b, slots, s.h.WallNow(), false)
	b.Raw(`,"has_more":`)
	b.Bool(page.hasMore)
	b.Raw(`,"next_cursor":`)
	b.Str(page.next.encode())
	b.Raw(`,"request_id":`)
	b.Str(plaidRequestID())
	b.Raw(`,"transactions_update_status":"HISTORICAL_UPDATE_COMPLETE"}`)
	b.End()
}

// plaidLoopPosition resolves the request's cursor to the loop position to
// serve, or returns an error code.
// A cursor carries the tag of the item it was issued for (tag): another
// item's, a re-linked item's included, is invalid.
func (s *server) plaidLoopPosition(req *plaidRequest, snap sim.Snapshot, tag string, slot int) (syncCursor, string) {
	start := syncCursor{tag: tag, from: -1, to: snap.Clock, slot: slot}
	if req.Cursor == nil || *req.Cursor == "" {
		return start, ""
	}
	if *req.Cursor == "now" {
		return syncCursor{tag: tag, end: true, from: snap.Clock, to: snap.Clock, pos: snap.TL.Count(snap.Clock), slot: slot}, ""
	}
	c, ok := decodeSyncCursor(*req.Cursor, tag)
	if !ok || c.slot != slot || c.to > snap.Clock {
		return c, "INVALID_CURSOR"
	}
	if c.end {
		start.from = c.to
		start.pos = snap.TL.ChangedFrom(c.to)
		if c.to == snap.Clock {
			start.pos = snap.TL.Count(snap.Clock)
		}
		return start, ""
	}
	if c.to != snap.Clock || s.h.TakeFault(Name, sim.FaultMutation) {
		return c, "TRANSACTIONS_SYNC_MUTATION_DURING_PAGINATION"
	}
	return c, ""
}

// writeSyncError writes a /transactions/sync error.
func (s *server) writeSyncError(w http.ResponseWriter, r *http.Request, code string) {
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
	pfc      string
	origDesc bool
	tag      string
	// idSeed generates the transaction ids (the item's: new ones on a
	// re-link).
	idSeed    uint64
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
	addState                 simkit.TxState
}

// changeOf computes the change of transaction i between the loop's clocks.
func changeOf(l simkit.Life, from, to int64) syncChange {
	s1 := l.State(to)
	if from < 0 {
		if s1 == simkit.Vanished || s1 == simkit.Absent {
			return syncChange{}
		}
		return syncChange{added: true, addState: s1}
	}
	s0 := l.State(from)
	if s0 == s1 || (s0 == simkit.Modified && s1 == simkit.Posted) {
		return syncChange{}
	}
	switch s0 {
	case simkit.Absent:
		if s1 == simkit.Vanished {
			return syncChange{}
		}
		return syncChange{added: true, addState: s1}
	case simkit.Pending:
		if s1 == simkit.Vanished {
			return syncChange{removed: true}
		}
		return syncChange{removed: true, added: true, addState: s1}
	case simkit.Posted:
		return syncChange{modified: s1 == simkit.Modified, addState: s1}
	}
	return syncChange{}
}

// buildSyncPage writes the "added", "modified" and "removed" arrays of one
// page starting at cur, and returns the next position. A streamed b is
// flushed between rows.
func buildSyncPage(b *simkit.JW, t *simkit.Timeline, cur syncCursor, count int, o *plaidTxOptions) syncPage {
	b.Raw(`{"added":[`)
	i, end, modified, removed := writeAdded(b, t, cur, count, o)
	b.Raw(`],"modified":[`)
	for k, j := range modified {
		if k > 0 {
			b.Comma()
		}
		writePlaidTx(b, t, j, t.LifeOf(j), simkit.Modified, o)
		b.Flush()
	}
	b.Raw(`],"removed":[`)
	for k, j := range removed {
		if k > 0 {
			b.Comma()
		}
		b.Raw(`{"account_id":`)
		b.Str(o.accountID(t.Account(j)))
		b.Raw(`,"transaction_id":`)
		b.B = appendPlaidTxID(b.B, o.idSeed, j, true)
		b.Byte('}')
		b.Flush()
	}
	b.Byte(']')
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
func writeAdded(b *simkit.JW, t *simkit.Timeline, cur syncCursor, count int, o *plaidTxOptions) (i, end int64, modified, removed []int64) {
	end = t.Count(cur.to)
	step := int64(1)
	i = cur.pos
	if cur.slot >= 0 {
		step = t.Accounts
		i += ((int64(cur.slot)-i)%t.Accounts + t.Accounts) % t.Accounts
	}
	n, first := 0, true
	for ; i < end; i += step {
		l := t.LifeOf(i)
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
				b.Comma()
			}
			first = false
			writePlaidTx(b, t, i, l, ch.addState, o)
			b.Flush()
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
	b = simkit.AppendAlnum(b, simkit.Hash2(seed^v, uint64(i)), 27)
	x := uint64(i)
	var d [10]byte
	for k := 9; k >= 0; k-- {
		d[k] = simkit.Alnum[x%62]
		x /= 62
	}
	b = append(b, d[:]...)
	return append(b, '"')
}

// writePlaidTx encodes transaction i in state st as a Plaid Transaction.
func writePlaidTx(b *simkit.JW, t *simkit.Timeline, i int64, l simkit.Life, st simkit.TxState, o *plaidTxOptions) {
	slot := t.Account(i)
	c := t.ContentOf(i, simkit.AccountKind(slot))
	m := c.M
	pc := plaidCatOf(simkit.AccountKind(slot), m)
	pending := st == simkit.Pending
	b.Raw(`{"account_id":`)
	b.Str(o.accountID(slot))
	b.Raw(`,"account_owner":null,"amount":`)
	b.Cents(-c.Amount)
	b.Raw(`,"authorized_date":`)
	b.Date(o.dateOf(l.Day))
	b.Raw(`,"authorized_datetime":`)
	if o.inst%2 == 0 {
		b.Datetime(o.dateOf(l.Day).Add(time.Duration(t.SecondOfDay(i)) * time.Second))
	} else {
		b.Null()
	}
	b.Raw(`,"category":null,"category_id":null,"check_number":null,"counterparties":[`)
	if pc.hasMerchant {
		b.Raw(`{"confidence_level":"VERY_HIGH","entity_id":null,"logo_url":null,"name":`)
		b.Str(m.Name)
		b.Raw(`,"phone_number":null,"type":"merchant","website":null}`)
	}
	b.Raw(`],"date":`)
	if pending {
		b.Date(o.dateOf(l.Day))
	} else {
		b.Date(o.dateOf(l.PostDay()))
	}
	b.Raw(`,"datetime":null,"iso_currency_code":"USD","unofficial_currency_code":null,"location":{"address":null,"city":null,"country":null,"lat":null,"lon":null,"postal_code":null,"region":null,"store_number":null},"logo_url":null,"merchant_entity_id":null`)
	writePlaidTxNames(b, m, pc, st, o)
	writePlaidTxTail(b, t, i, l, pc, pending, o)
}

// writePlaidTxNames writes merchant_name, name and original_description;
// a modified row has its name cleaned up.
func writePlaidTxNames(b *simkit.JW, m *simkit.Merchant, pc plaidCat, st simkit.TxState, o *plaidTxOptions) {
	b.Raw(`,"merchant_name":`)
	if pc.hasMerchant {
		b.Str(m.Name)
	} else {
		b.Null()
	}
	b.Raw(`,"name":`)
	if st == simkit.Modified {
		b.Str(m.Name)
	} else {
		b.Str(m.BankDesc)
	}
	b.Raw(`,"original_description":`)
	if o.origDesc {
		b.Str(m.BankDesc)
	} else {
		b.Null()
	}
}

// writePlaidTxTail writes the remaining fields from payment_channel on.
func writePlaidTxTail(b *simkit.JW, t *simkit.Timeline, i int64, l simkit.Life, pc plaidCat, pending bool, o *plaidTxOptions) {
	b.Raw(`,"payment_channel":`)
	b.Str(pc.channel)
	b.Raw(`,"payment_meta":{"by_order_of":null,"payee":null,"payer":null,"payment_method":null,"payment_processor":null,"ppd_id":null,"reason":null,"reference_number":null},"pending":`)
	b.Bool(pending)
	b.Raw(`,"pending_transaction_id":`)
	if !pending && l.PendDays > 0 {
		b.B = appendPlaidTxID(b.B, o.idSeed, i, true)
	} else {
		b.Null()
	}
	b.Raw(`,"personal_finance_category":{"confidence_level":"VERY_HIGH","detailed":`)
	b.Str(pc.pfcDetailedFor(o.pfc))
	b.Raw(`,"primary":`)
	b.Str(pc.pfcPrimary)
	b.Raw(`,"version":`)
	b.Str(o.pfc)
	b.Raw(`},"transaction_code":null,"transaction_id":`)
	b.B = appendPlaidTxID(b.B, o.idSeed, i, pending && l.PendDays > 0)
	b.Raw(`,"transaction_type":`)
	switch pc.channel {
	case "online":
		b.Str("digital")
	case "in store":
		b.Str("place")
	default:
		b.Str("special")
	}
	b.Raw(`,"website":null}`)
}
