package storage

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// windowDetectRows is from how many copied rows a first sync's batch is
// matched against the rows its session keeps (smaller batches read their
// window from the database).
const windowDetectRows = 1000

// maxSessionRows is the most copied rows a first sync's session keeps in
// memory for detection (about 120 bytes each); older batches are let go
// and their days read from the database when a later window covers them.
const maxSessionRows = 300_000

// spanShift makes a span of dates 1<<spanShift = 16 days (amountKey): at
// least the 2*maxTransferLagDays+1 days of a row's window, so that a
// window touches at most two spans.
const spanShift = 4

// matchSpanDays is a span's length in days.
const matchSpanDays = 1 << spanShift

// A window must fit in two spans: this fails to compile otherwise.
const _ = uint(matchSpanDays - (2*maxTransferLagDays + 1))

// amountKey is what a transfer's two sides share in memory: the absolute
// amount (as the outflow's negation of the inflow) and the span of dates
// (days since 2000-01-01, floored to a multiple of matchSpanDays) the row
// falls in: a row's other side lies in the one or two spans its window
// touches (maxTransferLagDays either side), so a common amount's rows
// elsewhere in the history are never walked. Caveat: the currency is not
// in the key (two integers hash faster than a string); matchRows
// checks it.
type amountKey struct {
	minor, span int64
}

// counterpartKeys calls fn with the keys r's other side can have.
func counterpartKeys(r *detectRow, fn func(amountKey)) {
	for span := (r.day - maxTransferLagDays) >> spanShift; span <= (r.day+maxTransferLagDays)>>spanShift; span++ {
		fn(amountKey{-r.minor, span})
	}
}

// sessionRows are rows by amount and span: a first sync's session keeps
// the rows it copied in (those of the batch being matched included), the
// other sides a later batch's rows can have in the connection's own
// accounts, without reading them back; a batch's window search also keeps
// the rows it reads from the database in one. The rows sit in a ring of at
// most limit rows, held by pointer (into the slices added, which must
// not change), each linked to the previous row of its amount and span, so
// that noting a row costs one map write whatever the amounts, and the
// oldest rows are overwritten first. A span's map goes whole once none of
// its rows is held: no map ever deletes a key one by one (a map that does
// slows every later look-up of a missing key). Caveat: the days of rows
// overwritten are evicted (read from the database when a window covers
// them). A resumed first sync (the connection had rows before the
// session, which only the database holds) keeps none.
type sessionRows struct {
	// limit is the most rows held (0: maxSessionRows).
	limit int64
	ring  []*detectRow
	// prev[i] is the number of the row noted before ring[i] with its
	// amount and span, -1 for none; a row's number counts every row
	// noted, and row k sits in ring[k % limit] while it is held.
	prev  []int64
	spans map[int64]*heldSpan
	noted int64
	// evicted are the days of rows overwritten; lastEvicted the last
	// such day (rows go in the order they came, mostly a day at a time).
	evicted     map[int64]bool
	lastEvicted int64
}

// heldSpan is one span's rows held: each amount's newest row number (a
// number no longer held ends its chain) and how many of the span's rows
// are held.
type heldSpan struct {
	newest map[int64]int64
	held   int
}

// add notes rows, overwriting the oldest past the limit. Caveat: rows
// are held by pointer; the slice must not change while they are held.
func (m *sessionRows) add(rows []detectRow) {
	if m.spans == nil {
		m.spans, m.evicted, m.lastEvicted = map[int64]*heldSpan{}, map[int64]bool{}, -1<<62
	}
	if m.limit == 0 {
		m.limit = maxSessionRows
	}
	var sp *heldSpan
	span := int64(-1 << 62)
	for i := range rows {
		w := &rows[i]
		slot := int(m.noted % m.limit)
		if m.noted >= m.limit {
			m.drop(slot)
			m.ring[slot], m.prev[slot] = w, -1
		} else {
			m.ring, m.prev = append(m.ring, w), append(m.prev, -1)
		}
		if s := w.day >> spanShift; s != span || sp == nil || sp.held == 0 {
			span, sp = s, m.span(s)
		}
		if last, ok := sp.newest[w.minor]; ok {
			m.prev[slot] = last
		}
		sp.newest[w.minor] = m.noted
		sp.held++
		m.noted++
	}
}

// span is the held rows of span s, made when there are none.
func (m *sessionRows) span(s int64) *heldSpan {
	sp := m.spans[s]
	if sp == nil {
		sp = &heldSpan{newest: make(map[int64]int64, 1024)}
		m.spans[s] = sp
	}
	return sp
}

// drop lets the row in slot go: its day is evicted, and its span's map
// goes with the span's last row held.
func (m *sessionRows) drop(slot int) {
	old := m.ring[slot]
	if old.day != m.lastEvicted {
		m.evicted[old.day], m.lastEvicted = true, old.day
	}
	s := old.day >> spanShift
	if sp := m.spans[s]; sp != nil {
		if sp.held--; sp.held == 0 {
			delete(m.spans, s)
		}
	}
}

// each calls fn with the held rows of amount k, newest first.
func (m *sessionRows) each(k amountKey, fn func(*detectRow)) {
	sp := m.spans[k.span]
	if sp == nil {
		return
	}
	n, ok := sp.newest[k.minor]
	for ok && n >= m.noted-int64(len(m.ring)) {
		slot := int(n % m.limit)
		fn(m.ring[slot])
		n = m.prev[slot]
	}
}

// matchRows returns the rows of pools that could be r's other side in the
// same currency: the opposite amount, another account, dated within
// maxTransferLagDays; each once (a row may be in two pools).
func matchRows(r *detectRow, pools ...*sessionRows) []*detectRow {
	var out rowSet
	consider := func(x *detectRow) {
		if x.accountID != r.accountID && abs64(x.day-r.day) <= maxTransferLagDays && x.currency == r.currency {
			out.add(x)
		}
	}
	counterpartKeys(r, func(k amountKey) {
		for _, p := range pools {
			if p != nil {
				p.each(k, consider)
			}
		}
	})
	return out.rows
}

// rowSet is rows, each once: a few are checked by a walk, more than
// sixteen through a set of their ids.
type rowSet struct {
	rows []*detectRow
	ids  map[[16]byte]bool
}

// add adds x unless a row with its id is in s already.
func (s *rowSet) add(x *detectRow) {
	if s.ids != nil {
		if s.ids[x.id] {
			return
		}
		s.ids[x.id] = true
	} else {
		for _, r := range s.rows {
			if r.id == x.id {
				return
			}
		}
	}
	s.rows = append(s.rows, x)
	if len(s.rows) > 16 && s.ids == nil {
		s.ids = make(map[[16]byte]bool, 2*len(s.rows))
		for _, r := range s.rows {
			s.ids[r.id] = true
		}
	}
}

// windowCandidates returns the candidate pairs of rows (a batch's new
// and changed rows): each row's same-currency candidates (the opposite
// amount in another of the user's accounts, dated within
// maxTransferLagDays), and its candidates' own, matched by amount in
// memory among the batch, the rows the session copied before (mem, may be
// nil) and the rows read from the database: the user's rows on the
// window's days that the session does not hold (its evicted days; every
// day when mem is nil), else only those of the user's accounts outside the
// connection. One read per account or day of the window, never a look-up
// per row; its cost grows with the rows on those days, not with the
// history. The pairs found are then checked (unpaired, not rejected) and
// bounded per row (boundCandidates: the rows with more are crowded).
// Cross-currency candidates come from crossPairs. It also returns the
// same-currency pairs' rows as scoring sees them, so that they are not
// read again. pre is the batch's in-memory match (nil, or a match of
// other rows: found here); mem may hold the batch itself (the match notes
// it there).
func windowCandidates(ctx context.Context, tx pgx.Tx, userID, connID uuid.UUID, rows []detectRow, accts *userAccounts, mem *sessionRows, pre *windowMatch) ([][2]uuid.UUID, map[[16]byte]bool, map[[16]byte]*transferSide, error) {
	pre.wait()
	if pre == nil || len(pre.found) != len(rows) {
		pre = &windowMatch{}
		pre.run(rows, mem, false)
	}
	// A row's candidates lie within maxTransferLagDays of it, and theirs
	// within as many again; a row's cross-currency candidate lies within
	// maxCrossCurrencyDays (fewer), and its own candidates a lag further.
	days := windowDays(rows, 2*maxTransferLagDays)
	var dbDays, otherDays []int64
	switch {
	case mem == nil:
		dbDays = days
	default:
		// A day some pool let rows of go (the session's older rows, or a
		// batch longer than a pool holds) is read whole.
		for _, d := range days {
			if slices.ContainsFunc(pre.pools, func(p *sessionRows) bool { return p != nil && p.evicted[d] }) {
				dbDays = append(dbDays, d)
			} else {
				otherDays = append(otherDays, d)
			}
		}
	}
	// Only the rows of the batch's amounts can be a candidate or a
	// candidate's own candidate; a cross-currency candidate's own
	// candidates have other amounts, so with cross-currency accounts every
	// row is read.
	var amounts []int64
	if !accts.cross {
		amounts = windowAmounts(rows)
	}
	stored, err := readWindow(ctx, tx, userID, nil, dbDays, amounts)
	if err != nil {
		return nil, nil, nil, err
	}
	var others []detectRow
	if outside := accts.outside(connID); len(outside) > 0 {
		if others, err = readWindow(ctx, tx, userID, outside, otherDays, amounts); err != nil {
			return nil, nil, nil, err
		}
	}
	pools := pre.pools
	check := pairedCheck{from: slices.Min(days), to: slices.Max(days)}
	if mem != nil {
		check.byID = map[[16]byte]bool{}
	}
	if read := append(stored, others...); len(read) > 0 {
		check.noteRead(read)
		db := &sessionRows{limit: int64(len(read))} // all of them: nothing to read again
		db.add(read)
		pools = append(slices.Clip(pools), db)
		pre.add(rows, db)
	}
	var cands []windowPair
	// found holds every row of a pair, pointing into rows, the pools and
	// the matches below (none of which changes from here on). The batch's
	// rows with a candidate go first: matching is symmetric, so a
	// candidate in the batch has one (its row) and is found by then, and
	// a candidate not found by then lies outside the batch.
	found := map[[16]byte]*detectRow{}
	for i := range rows {
		if len(pre.found[i]) > 0 {
			found[rows[i].id] = &rows[i]
		}
	}
	var outside []*detectRow
	for i := range rows {
		c := &rows[i]
		for _, x := range pre.found[i] {
			cands = append(cands, windowPair{c.id, x.id, abs64(x.day - c.day)})
			if _, ok := found[x.id]; !ok {
				found[x.id] = x
				outside = append(outside, x)
			}
		}
	}
	// The candidates' own candidates decide whether a candidate fits a
	// batch row better than any other.
	for _, x := range outside {
		cands = append(cands, ownCandidates(x, pools, found)...)
	}
	var cross [][2]uuid.UUID
	if accts.cross {
		var more []windowPair
		if cross, more, err = crossCandidates(ctx, tx, userID, rows, outside, found, pools, &check); err != nil {
			return nil, nil, nil, err
		}
		cands = append(cands, more...)
	}
	cands, err = freeCandidates(ctx, tx, userID, cands, check, accts.rejections)
	if err != nil {
		return nil, nil, nil, err
	}
	pairs, crowded := boundCandidates(cands)
	sides := windowSides(pairs, found, accts)
	return append(pairs, cross...), crowded, sides, nil
}

// windowMatch is the in-memory half of a large batch's window search:
// each row's same-currency candidates among the batch itself and the rows
// the session copied before. A fresh batch's is found while the batch is
// copied in (startWindowMatch), so that the search adds little to the
// batch's time.
type windowMatch struct {
	done chan struct{}
	// pools hold the batch's rows and those it was matched against;
	// found[i] are the candidates of the batch's row i.
	pools []*sessionRows
	found [][]*detectRow
}

// startWindowMatch matches rows against themselves and mem (may be nil)
// in a goroutine of its own, once ready is closed (nil: at once). When
// keep is set, the rows are noted in mem (not nil) for later batches;
// should the batch not be stored after all, mem must be let go.
// Caveat: mem may not change until wait returns, nor rows while mem (or
// the match) holds them.
func startWindowMatch(rows []detectRow, mem *sessionRows, keep bool, ready <-chan struct{}) *windowMatch {
	m := &windowMatch{done: make(chan struct{})}
	go func() {
		defer close(m.done)
		if ready != nil {
			<-ready
		}
		m.run(rows, mem, keep)
	}()
	return m
}

// run matches rows against themselves and mem: noted in mem when keep is
// set, else in a pool of their own.
func (m *windowMatch) run(rows []detectRow, mem *sessionRows, keep bool) {
	if keep {
		mem.add(rows)
		m.pools = []*sessionRows{mem}
	} else {
		own := &sessionRows{}
		own.add(rows)
		m.pools = []*sessionRows{own, mem}
	}
	m.found = make([][]*detectRow, len(rows))
	for i := range rows {
		m.found[i] = matchRows(&rows[i], m.pools...)
	}
}

// add adds each row's candidates in more that it has not found yet.
func (m *windowMatch) add(rows []detectRow, more *sessionRows) {
	for i := range rows {
		xs := matchRows(&rows[i], more)
		if len(xs) == 0 {
			continue
		}
		var set rowSet
		for _, x := range m.found[i] {
			set.add(x)
		}
		for _, x := range xs {
			set.add(x)
		}
		m.found[i] = set.rows
	}
}

// wait returns once the match is done; there is nothing to wait for
// when m is nil or was run in place.
func (m *windowMatch) wait() {
	if m != nil && m.done != nil {
		<-m.done
	}
}

// windowSides are the rows of pairs as scoring sees them, from the rows
// matched and the user's accounts.
func windowSides(pairs [][2]uuid.UUID, found map[[16]byte]*detectRow, accts *userAccounts) map[[16]byte]*transferSide {
	if len(pairs) == 0 {
		return nil
	}
	sides := make(map[[16]byte]*transferSide, 2*len(pairs))
	for _, p := range pairs {
		for _, id := range p {
			w, ok := found[id]
			if !ok || sides[id] != nil {
				continue
			}
			a := accts.byID[w.accountID]
			sides[id] = &transferSide{id: w.id, accountID: w.accountID, minor: w.minor, currency: w.currency, day: w.day,
				text: w.lowerText(), accountName: a.name, accountMask: a.mask}
		}
	}
	return sides
}

// crossCandidates are the cross-currency candidates of the batch's rows
// whose description says transfer, and of the batch's candidates outside
// it (found holds every row seen so far). A cross-currency candidate not
// seen yet is weighed against its own candidates as any other candidate
// is: its same-currency ones among pools (returned as window pairs, to be
// checked and bounded with the others, and noted in found) and its
// cross-currency ones (among the pairs returned). The rows it reads are
// noted in check, to be looked up by id.
func crossCandidates(ctx context.Context, tx pgx.Tx, userID uuid.UUID, rows []detectRow, outside []*detectRow, found map[[16]byte]*detectRow, pools []*sessionRows, check *pairedCheck) ([][2]uuid.UUID, []windowPair, error) {
	var says []detectRow
	for _, r := range rows {
		if saysTransfer(r.lowerText()) {
			says = append(says, r)
		}
	}
	for _, x := range outside {
		says = append(says, *x) // as matched, not read again; crossPairs keeps those that say transfer
	}
	pairs, err := crossPairs(ctx, tx, userID, says)
	if err != nil || len(pairs) == 0 {
		return pairs, nil, err
	}
	// The batch's rows and the candidates outside it have had their own
	// candidates listed; a batch row's cross-currency candidate that is
	// neither (whether found already or not) has its own listed here.
	batch := make(map[[16]byte]bool, len(rows))
	for i := range rows {
		batch[rows[i].id] = true
	}
	weighed := maps.Clone(batch)
	for _, x := range outside {
		weighed[x.id] = true
	}
	var newIDs []uuid.UUID
	for _, p := range pairs {
		if batch[p[0]] && !weighed[p[1]] {
			weighed[p[1]] = true
			newIDs = append(newIDs, p[1])
		}
	}
	xs, err := loadDetectRows(ctx, tx, userID, newIDs)
	if err != nil {
		return nil, nil, err
	}
	check.lookUp(xs)
	var cands []windowPair
	for i := range xs {
		found[xs[i].id] = &xs[i]
		cands = append(cands, ownCandidates(&xs[i], pools, found)...)
	}
	theirs, err := crossPairs(ctx, tx, userID, xs)
	if err != nil {
		return nil, nil, err
	}
	return append(pairs, theirs...), cands, nil
}

// ownCandidates are x's same-currency candidates among pools, as window
// pairs (x first); each candidate not in found yet is noted there.
func ownCandidates(x *detectRow, pools []*sessionRows, found map[[16]byte]*detectRow) []windowPair {
	ys := matchRows(x, pools...)
	out := make([]windowPair, 0, len(ys))
	for _, y := range ys {
		out = append(out, windowPair{x.id, y.id, abs64(y.day - x.day)})
		if _, ok := found[y.id]; !ok {
			found[y.id] = y
		}
	}
	return out
}

// windowDays returns the days within lag of a row's date, in order:
// each distinct date widened once.
func windowDays(rows []detectRow, lag int64) []int64 {
	dates := make(map[int64]bool, 64)
	for _, r := range rows {
		dates[r.day] = true
	}
	seen := make(map[int64]bool, len(dates)+2*int(lag))
	var out []int64
	for day := range dates {
		for d := day - lag; d <= day+lag; d++ {
			if !seen[d] {
				seen[d] = true
				out = append(out, d)
			}
		}
	}
	slices.Sort(out)
	return out
}

// windowAmounts returns the distinct absolute amounts (ten-thousandths)
// of rows: a same-currency candidate of a row, and that candidate's own
// candidates, have one of them.
func windowAmounts(rows []detectRow) []int64 {
	seen := make(map[int64]bool, len(rows))
	out := make([]int64, 0, len(rows))
	for _, r := range rows {
		if a := abs64(r.minor); !seen[a] {
			seen[a] = true
			out = append(out, a)
		}
	}
	return out
}

// readWindow reads the user's live, non-zero rows dated on days (days
// since 2000-01-01), a lateral range per day; when accts is not nil,
// only those of accts, a range of transactions_account_order_idx per
// account and day; when amounts is not nil, only those whose absolute
// amount in ten-thousandths is one of amounts (the others' text is never
// built nor sent). Each row comes with whether it is paired: two probes
// of the transfers' unique keys (scalar subqueries, which the planner
// cannot turn into a hash of every transfer of the user). The
// statement is planned with its arguments each time (an unnamed
// statement), so that the amounts are looked up in a hash table.
func readWindow(ctx context.Context, tx pgx.Tx, userID uuid.UUID, accts []uuid.UUID, days []int64, amounts []int64) ([]detectRow, error) {
	if len(days) == 0 {
		return nil, nil
	}
	from := `unnest($2::int8[]) AS d(day)`
	match := `x.user_id = $1 AND x.tx_date = DATE '2000-01-01' + d.day::int`
	if accts != nil {
		from = `unnest($4::uuid[]) AS a(id) CROSS JOIN unnest($2::int8[]) AS d(day)`
		match = `x.account_id = a.id AND x.tx_date = DATE '2000-01-01' + d.day::int AND x.user_id = $1`
	}
	q := `
		SELECT x.id, x.account_id, (x.amount * 10000)::bigint, (x.tx_date - DATE '2000-01-01')::bigint, x.currency,
			lower(concat_ws(' ', x.summary, x.original_description, x.merchant_name)),
			COALESCE((SELECT true FROM transfers z WHERE z.outflow_transaction_id = x.id AND z.user_id = $1 LIMIT 1),
				(SELECT true FROM transfers z WHERE z.inflow_transaction_id = x.id AND z.user_id = $1 LIMIT 1), false)
		FROM ` + from + `
		CROSS JOIN LATERAL (
			SELECT x.id, x.account_id, x.amount, x.tx_date, x.currency, x.summary, x.original_description, x.merchant_name
			FROM transactions x
			WHERE ` + match + ` AND x.status <> 'deleted' AND x.amount <> 0
				AND ($3::int8[] IS NULL OR (abs(x.amount) * 10000)::bigint = ANY ($3::int8[]))
			OFFSET 0
		) x`
	args := []any{pgx.QueryExecModeCacheDescribe, userID, days, amounts}
	if accts != nil {
		args = append(args, accts)
	}
	rows, err := tx.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("detect transfers: read window: %w", err)
	}
	var out []detectRow
	var w detectRow
	_, err = pgx.ForEachRow(rows, []any{&w.id, &w.accountID, &w.minor, &w.day, &w.currency, &w.text, &w.paired}, func() error {
		out = append(out, w)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("detect transfers: read window: %w", err)
	}
	return out, nil
}

// windowPair is a candidate pair of the window search: a row, its
// candidate, and how many days apart they are dated.
type windowPair struct {
	c, x uuid.UUID
	gap  int64
}

// pairedCheck is how freeCandidates tells which rows are paired: by
// their ids, or, for the rows a first sync's session copied in, by the
// pairs dated near the window.
type pairedCheck struct {
	// from and to bound the window's days (days since 2000-01-01).
	from, to int64
	// byID are the rows looked up by id; nil: every row is.
	byID map[[16]byte]bool
	// read are the rows whose pairing was read with them (readWindow):
	// whether each is paired; they are not looked up again.
	read map[[16]byte]bool
}

// noteRead notes the pairing of rows as they were read.
func (c *pairedCheck) noteRead(rows []detectRow) {
	if c.read == nil {
		c.read = make(map[[16]byte]bool, len(rows))
	}
	for i := range rows {
		c.read[rows[i].id] = rows[i].paired
	}
}

// lookUp notes rows to be looked up by id (every row is when byID is nil).
func (c *pairedCheck) lookUp(rows []detectRow) {
	if c.byID == nil {
		return
	}
	for i := range rows {
		c.byID[rows[i].id] = true
	}
}

// freeCandidates keeps the pairs whose rows are both unpaired and that
// the user did not reject. A row is looked up by its id (two unique-index
// probes: a pair made by hand may be dated anywhere), except, when
// check.byID is set, a row a first sync's session copied in: those are
// checked against the pairs whose outflow is dated within a transfer's
// window of the window's days, read once (on transfers_user_date_idx): a
// pair detection makes is dated by its outflow, within a transfer's window
// of either side. Caveat: a pair dated further from its row (made by hand,
// or a pending side's pair carried to a posted row dated days later)
// while a first sync runs is not seen there: its row stays a candidate,
// and a pair that would take it is skipped on insert (ON CONFLICT), so
// detection may miss a pair there but never stores a wrong one.
// Rejections are checked in SQL, and only when the user has any
// (rejections).
func freeCandidates(ctx context.Context, tx pgx.Tx, userID uuid.UUID, cands []windowPair, check pairedCheck, rejections bool) ([]windowPair, error) {
	if len(cands) == 0 {
		return nil, nil
	}
	paired, err := pairedRows(ctx, tx, userID, cands, check)
	if err != nil {
		return nil, err
	}
	free := slices.DeleteFunc(cands, func(p windowPair) bool { return paired[p.c] || paired[p.x] })
	if !rejections || len(free) == 0 {
		return free, nil
	}
	cs, xs := make([]uuid.UUID, len(free)), make([]uuid.UUID, len(free))
	for i, p := range free {
		cs[i], xs[i] = p.c, p.x
	}
	rows, err := tx.Query(ctx, `
		SELECT p.i FROM unnest($2::uuid[], $3::uuid[]) WITH ORDINALITY AS p(c, x, i)
		WHERE EXISTS (SELECT 1 FROM transfer_rejections r WHERE r.user_id = $1
				AND ((r.outflow_transaction_id = p.c AND r.inflow_transaction_id = p.x)
					OR (r.outflow_transaction_id = p.x AND r.inflow_transaction_id = p.c)))`, userID, cs, xs)
	if err != nil {
		return nil, fmt.Errorf("detect transfers: check candidates: %w", err)
	}
	rejected, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("detect transfers: check candidates: %w", err)
	}
	for _, i := range rejected {
		free[i-1].c = uuid.Nil // ordinality counts from 1
	}
	return slices.DeleteFunc(free, func(p windowPair) bool { return p.c == uuid.Nil }), nil
}

// pairedRows returns which rows of cands are paired, as check says to
// tell (freeCandidates).
func pairedRows(ctx context.Context, tx pgx.Tx, userID uuid.UUID, cands []windowPair, check pairedCheck) (map[[16]byte]bool, error) {
	paired := map[[16]byte]bool{}
	if check.byID != nil {
		if err := notePaired(ctx, tx, paired, `
			SELECT unnest(ARRAY[outflow_transaction_id, inflow_transaction_id]) FROM transfers
			WHERE user_id = $1 AND date BETWEEN DATE '2000-01-01' + $2::int AND DATE '2000-01-01' + $3::int`,
			userID, check.from-maxTransferLagDays-maxTransferLeadDays, check.to+maxTransferLagDays+maxTransferLeadDays); err != nil {
			return nil, err
		}
	}
	seen := make(map[[16]byte]bool, 2*len(cands))
	var ids []uuid.UUID
	for _, p := range cands {
		for _, id := range [2]uuid.UUID{p.c, p.x} {
			if was, ok := check.read[id]; ok {
				paired[id] = paired[id] || was
				continue
			}
			if !seen[id] && (check.byID == nil || check.byID[id]) {
				seen[id] = true
				ids = append(ids, id)
			}
		}
	}
	if len(ids) == 0 {
		return paired, nil
	}
	err := notePaired(ctx, tx, paired, `
		SELECT i.id FROM unnest($2::uuid[]) AS i(id)
		WHERE EXISTS (SELECT 1 FROM transfers t WHERE t.outflow_transaction_id = i.id AND t.user_id = $1)
			OR EXISTS (SELECT 1 FROM transfers t WHERE t.inflow_transaction_id = i.id AND t.user_id = $1)`,
		userID, ids)
	return paired, err
}

// notePaired marks paired the transaction ids query returns (one column).
func notePaired(ctx context.Context, tx pgx.Tx, paired map[[16]byte]bool, query string, args ...any) error {
	rows, err := tx.Query(ctx, query, args...)
	if err != nil {
		return fmt.Errorf("detect transfers: paired rows: %w", err)
	}
	var id uuid.UUID
	if _, err := pgx.ForEachRow(rows, []any{&id}, func() error {
		paired[id] = true
		return nil
	}); err != nil {
		return fmt.Errorf("detect transfers: paired rows: %w", err)
	}
	return nil
}

// boundCandidates keeps, per row, its maxTransferCandidates candidates
// closest in date (then by id), as pairs, and returns the rows that had
// more: crowded, which must not pair.
func boundCandidates(cands []windowPair) ([][2]uuid.UUID, map[[16]byte]bool) {
	slices.SortFunc(cands, func(a, b windowPair) int {
		if c := bytes.Compare(a.c[:], b.c[:]); c != 0 {
			return c
		}
		if a.gap != b.gap {
			return int(a.gap - b.gap)
		}
		return bytes.Compare(a.x[:], b.x[:])
	})
	crowded := map[[16]byte]bool{}
	out := make([][2]uuid.UUID, 0, len(cands))
	n := 0
	for i, p := range cands {
		if i == 0 || p.c != cands[i-1].c {
			n = 0
		}
		n++
		if n > maxTransferCandidates {
			crowded[p.c] = true
			continue
		}
		out = append(out, [2]uuid.UUID{p.c, p.x})
	}
	return out, crowded
}

// abs64 is |v|.
func abs64(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}
