package storage_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/storage"
)

func TestOnlyAdds(t *testing.T) {
	page := func(added []string, removed []string, replace ...string) domain.ReportedPage {
		p := domain.ReportedPage{Removed: removed, ReplacePendingFor: replace}
		for _, id := range added {
			p.Upserts = append(p.Upserts, domain.ReportedTransaction{ProviderID: id})
		}
		return p
	}
	for _, tt := range []struct {
		name  string
		batch []domain.ReportedPage
		want  bool
	}{
		{"adds only", []domain.ReportedPage{page([]string{"a", "b"}, nil), page([]string{"c"}, nil)}, true},
		{"removes ids it does not add", []domain.ReportedPage{page([]string{"a"}, []string{"x"}), page([]string{"b"}, []string{"y"})}, true},
		{"removes an id a later page adds", []domain.ReportedPage{page(nil, []string{"b"}), page([]string{"b"}, nil)}, false},
		{"removes an id an earlier page adds", []domain.ReportedPage{page([]string{"a"}, nil), page(nil, []string{"a"})}, false},
		{"replaces a pending set", []domain.ReportedPage{page([]string{"a"}, nil, "acct")}, false},
	} {
		if got := storage.OnlyAdds(tt.batch); got != tt.want {
			t.Errorf("%s: onlyAdds = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestSyncSessionCopiesThenUpserts stores a first batch with COPY, then a
// batch of a run that began fresh but meets stored rows: the copy falls
// back to upserts, only the new rows count and reach the rules, and each
// batch leaves its cursor and the provider's category on its rows.
func TestSyncSessionCopiesThenUpserts(t *testing.T) {
	e := newWriterEnv(t)
	ctx := context.Background()
	var ruled []int
	open := func() (*storage.SyncSession, uuid.UUID) {
		s := e.f.St.OpenSyncSession(storage.SyncTarget{Connection: e.conn}, storage.SyncSessionOptions{})
		s.ObserveRules(func(ids []uuid.UUID) { ruled = append(ruled, len(ids)) })
		ids, err := s.ApplyAccounts(ctx, "", []domain.ReportedAccount{{ProviderAccountID: "a1", Name: "Checking", Currency: "USD", BalancesUnknown: true}},
			domain.DateOf(time.Now()))
		if err != nil {
			t.Fatal(err)
		}
		if ids["a1"] == uuid.Nil {
			t.Fatalf("account ids %v", ids)
		}
		return s, ids["a1"]
	}
	food := domain.ReportedCategory{ProviderID: "food", Name: "Food", Group: "Living"}
	pages := func(from, n int, cursor string) []domain.ReportedPage {
		rows := e.reported(from + n)[from:]
		for i := range rows {
			rows[i].Category = &food
		}
		half := len(rows) / 2
		return []domain.ReportedPage{{Upserts: rows[:half]}, {Upserts: rows[half:], Next: cursor}}
	}
	cursor := func() string {
		var c string
		if err := e.f.Pool.QueryRow(ctx, `SELECT coalesce(sync_cursor, '') FROM bank_connections WHERE id = $1`, e.conn.ID).Scan(&c); err != nil {
			t.Fatal(err)
		}
		return c
	}
	s, _ := open()
	res, err := s.ApplyBatch(ctx, pages(0, 10, "c1"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Changes != (storage.RowChanges{Added: 10}) || cursor() != "c1" || len(ruled) != 1 || ruled[0] != 10 {
		t.Fatalf("first batch: changes %+v, cursor %q, rules ran on %v", res.Changes, cursor(), ruled)
	}
	if n := e.count(t, `category_id IS NOT NULL AND category_source = 'provider'`); n != 10 {
		t.Fatalf("%d rows carry the provider's category, want 10", n)
	}

	// A run that began fresh (no sync finished yet) gets rows 5..14 again.
	ruled = nil
	s, _ = open()
	res, err = s.ApplyBatch(ctx, pages(5, 10, "c2"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Changes != (storage.RowChanges{Added: 5}) || cursor() != "c2" || e.count(t, `true`) != 15 {
		t.Fatalf("overlapping batch: changes %+v, cursor %q, %d rows", res.Changes, cursor(), e.count(t, `true`))
	}
	if sum := func() int {
		n := 0
		for _, k := range ruled {
			n += k
		}
		return n
	}(); sum != 5 {
		t.Fatalf("rules ran on %v, want the 5 new rows", ruled)
	}
	if n := e.count(t, `category_id IS NOT NULL`); n != 15 {
		t.Fatalf("%d rows have a category, want 15", n)
	}
}

// TestApplyInvestmentsUpsertsInOneGoAndRemovesSoldHoldings stores
// securities, holdings and events that list some keys twice (the last
// holding and event listing wins, the first security listing), then a
// second time without one holding: it is removed, the rest updated in
// place.
func TestApplyInvestmentsUpsertsInOneGoAndRemovesSoldHoldings(t *testing.T) {
	e := newWriterEnv(t)
	ctx := context.Background()
	s := e.f.St.OpenSyncSession(storage.SyncTarget{Connection: e.conn}, storage.SyncSessionOptions{})
	if _, err := s.ApplyAccounts(ctx, "", []domain.ReportedAccount{{ProviderAccountID: "inv", Name: "Brokerage", Currency: "USD", BalancesUnknown: true}},
		domain.DateOf(time.Now())); err != nil {
		t.Fatal(err)
	}
	sym := "ACME"
	price := domain.MustMoney("12.5")
	secs := []domain.ReportedSecurity{
		{ProviderSecurityID: "s1", Symbol: &sym, Name: "Acme", Type: "equity", ClosePrice: &price, Currency: "USD"},
		{ProviderSecurityID: "s2", Name: "Bond fund", Type: "mutual fund", Currency: ""},
		{ProviderSecurityID: "s1", Name: "Acme listed again", Type: "equity", Currency: "USD"},
	}
	holding := func(sec, qty string) domain.ReportedHolding {
		return domain.ReportedHolding{ProviderAccountID: "inv", ProviderSecurityID: sec,
			Quantity: domain.MustMoney(qty), InstitutionPrice: price, InstitutionValue: domain.MustMoney("1"), Currency: "USD"}
	}
	event := func(id, amount string) domain.ReportedInvestmentTransaction {
		return domain.ReportedInvestmentTransaction{ProviderAccountID: "inv",
			ProviderID: id, Date: domain.DateOf(time.Now()), Type: "buy", Quantity: domain.MustMoney("1"), Price: price,
			Amount: domain.MustMoney(amount), Currency: "USD", Description: id}
	}
	err := s.ApplyInvestments(ctx, secs,
		[]domain.ReportedHolding{holding("s1", "1"), holding("s2", "2"), holding("s1", "3")},
		[]domain.ReportedInvestmentTransaction{event("e1", "10"), event("e2", "20"), event("e1", "11")})
	if err != nil {
		t.Fatal(err)
	}
	q := func(sql string) string {
		t.Helper()
		var out string
		if err := e.f.Pool.QueryRow(ctx, sql, e.conn.ID).Scan(&out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	const holdings = `SELECT string_agg(s.provider_security_id || '=' || trim_scale(h.quantity)::text, ',' ORDER BY s.provider_security_id)
		FROM holdings h JOIN securities s ON s.id = h.security_id JOIN accounts a ON a.id = h.account_id WHERE a.bank_connection_id = $1`
	if got := q(holdings); got != "s1=3,s2=2" {
		t.Fatalf("holdings %s, want the last listing of s1 and s2", got)
	}
	if got := q(`SELECT string_agg(provider_security_id || ':' || name || ':' || COALESCE(trim_scale(close_price)::text, '-'), ',' ORDER BY provider_security_id) FROM securities WHERE user_id = (SELECT user_id FROM bank_connections WHERE id = $1)`); got != "s1:Acme:12.5,s2:Bond fund:-" {
		t.Fatalf("securities %s, want the first listing of s1", got)
	}
	if got := q(`SELECT string_agg(provider_id || '=' || trim_scale(amount)::text, ',' ORDER BY provider_id) FROM investment_transactions WHERE bank_connection_id = $1`); got != "e1=11,e2=20" {
		t.Fatalf("events %s, want the last listing of e1", got)
	}
	err = s.ApplyInvestments(ctx, secs[:2], []domain.ReportedHolding{holding("s2", "5")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := q(holdings); got != "s2=5" {
		t.Fatalf("holdings after s1 was sold: %s, want s2=5", got)
	}
}

// TestPendingSetSpansPages stores an account's pending set over pages of
// different batches and sessions (a sync resumed in a later slice): the
// page replacing the set keeps the pending rows of the sync's earlier
// pages and removes only those no page of the sync listed; the next sync
// starts afresh.
func TestPendingSetSpansPages(t *testing.T) {
	e := newWriterEnv(t)
	ctx := context.Background()
	open := func() *storage.SyncSession {
		s := e.f.St.OpenSyncSession(storage.SyncTarget{Connection: e.conn}, storage.SyncSessionOptions{})
		if _, err := s.ApplyAccounts(ctx, "", []domain.ReportedAccount{{ProviderAccountID: "a1", Name: "Checking", Currency: "USD", BalancesUnknown: true}},
			domain.DateOf(time.Now())); err != nil {
			t.Fatal(err)
		}
		return s
	}
	pending := func(ids ...string) []domain.ReportedTransaction {
		day := domain.DateOf(time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC))
		out := make([]domain.ReportedTransaction, len(ids))
		for i, id := range ids {
			out[i] = domain.ReportedTransaction{ProviderAccountID: "a1", ProviderID: id, Status: domain.TxPending, Summary: "Card",
				Amount: domain.MustMoney("-3.50"), Currency: "USD", AuthorizedDate: &day, CreatedAt: day.Time}
		}
		return out
	}
	apply := func(s *storage.SyncSession, pages ...domain.ReportedPage) {
		t.Helper()
		if _, err := s.ApplyBatch(ctx, pages); err != nil {
			t.Fatal(err)
		}
	}
	pendingNow := func() []string {
		t.Helper()
		rows, err := e.f.Pool.Query(ctx, `SELECT provider_id FROM transactions WHERE bank_connection_id = $1 AND status = 'pending' ORDER BY 1`, e.conn.ID)
		if err != nil {
			t.Fatal(err)
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		return ids
	}

	// First sync: x1 and x2 on a first page (copied in), x3 and the
	// replacement on the last page, stored by a second session.
	apply(open(), domain.ReportedPage{Upserts: pending("x1", "x2"), Next: "c1"})
	apply(open(), domain.ReportedPage{Upserts: pending("x3"), ReplacePendingFor: []string{"a1"}, Next: "c2", Done: true})
	if got := pendingNow(); !slices.Equal(got, []string{"x1", "x2", "x3"}) {
		t.Fatalf("after the first sync pending %v, want x1 x2 x3 (the set spans its pages)", got)
	}
	var seen []string
	if err := e.f.Pool.QueryRow(ctx, `SELECT sync_pending_seen FROM bank_connections WHERE id = $1`, e.conn.ID).Scan(&seen); err != nil || len(seen) != 0 {
		t.Fatalf("pending seen after the last page %v, %v; want none", seen, err)
	}

	// Second sync, one batch of two pages: x2 still pending, x4 new; x1
	// and x3 vanished.
	apply(open(), domain.ReportedPage{Upserts: pending("x2"), Next: "c3"},
		domain.ReportedPage{Upserts: pending("x4"), ReplacePendingFor: []string{"a1"}, Next: "c4", Done: true})
	if got := pendingNow(); !slices.Equal(got, []string{"x2", "x4"}) {
		t.Fatalf("after the second sync pending %v, want x2 x4", got)
	}
	if n := e.count(t, `status = 'deleted' AND provider_id IN ('x1', 'x3')`); n != 2 {
		t.Errorf("%d of x1, x3 deleted, want 2", n)
	}
}

// TestBatchComparisonSeesWhatEarlierPagesWrote stores batches of several
// pages in a sync that is not a connection's first, whose digests are
// compared for the whole batch at once: a page that comes after one that
// wrote must be compared with what that page wrote, not with what was
// stored before the batch.
func TestBatchComparisonSeesWhatEarlierPagesWrote(t *testing.T) {
	testBatchComparison(t, 0)
}

// TestBatchComparisonInTwoHalves is TestBatchComparisonSeesWhatEarlierPagesWrote
// with every batch of two rows or more compared in two halves, the second
// on another connection of the pool.
func TestBatchComparisonInTwoHalves(t *testing.T) {
	if halves := testBatchComparison(t, 2); halves == 0 {
		t.Fatal("no batch was compared in two halves")
	}
}

// testBatchComparison runs the batches of TestBatchComparisonSeesWhatEarlierPagesWrote,
// comparing batches of at least split rows in two halves when split > 0,
// and returns how many batches were.
func testBatchComparison(t *testing.T, split int) (halves int) {
	e := newWriterEnv(t)
	ctx := context.Background()
	open := func(first bool) *storage.SyncSession {
		target := storage.SyncTarget{Connection: e.conn, HasTransactions: !first}
		if !first {
			now := time.Now()
			target.Connection.LastSyncedAt = &now
		}
		s := e.f.St.OpenSyncSession(target, storage.SyncSessionOptions{})
		if split > 0 {
			s.SplitComparesAt(split)
		}
		if _, err := s.ApplyAccounts(ctx, "", []domain.ReportedAccount{{ProviderAccountID: "a1", Name: "Checking", Currency: "USD", BalancesUnknown: true}},
			domain.DateOf(time.Now())); err != nil {
			t.Fatal(err)
		}
		return s
	}
	rows := e.reported(6) // p0..p5
	rows[5].Status, rows[5].AuthorizedDate, rows[5].PostedDate = domain.TxPending, rows[5].PostedDate, nil
	row := func(i int, amount string) domain.ReportedTransaction {
		r := rows[i]
		if amount != "" {
			r.Amount = domain.MustMoney(amount)
		}
		return r
	}
	apply := func(pages ...domain.ReportedPage) storage.RowChanges { // a whole sync
		t.Helper()
		pages[len(pages)-1].Done = true
		s := open(false)
		res, err := s.ApplyBatch(ctx, pages)
		if err != nil {
			t.Fatal(err)
		}
		halves += s.ComparedInHalves()
		return res.Changes
	}
	if _, err := open(true).ApplyBatch(ctx, []domain.ReportedPage{{Upserts: rows, Done: true}}); err != nil {
		t.Fatal(err)
	}

	if got := apply(domain.ReportedPage{Upserts: rows[:3]}, domain.ReportedPage{Upserts: rows[3:]}); got != (storage.RowChanges{}) {
		t.Fatalf("unchanged batch: changes %+v, want none", got)
	}
	// p1 changed by the first page, and sent as stored before the batch by
	// the second: the second wins.
	got := apply(domain.ReportedPage{Upserts: []domain.ReportedTransaction{row(0, ""), row(1, "-7.00")}},
		domain.ReportedPage{Upserts: []domain.ReportedTransaction{row(1, ""), row(2, "")}})
	if got != (storage.RowChanges{Modified: 2}) || e.count(t, `provider_id = 'p1' AND amount = -1.25`) != 1 {
		t.Fatalf("p1 changed then sent as before: changes %+v, p1 at -1.25: %d", got, e.count(t, `provider_id = 'p1' AND amount = -1.25`))
	}
	// p2 removed by the first page and sent as before by the second: it
	// is stored again; p3, removed by a later page, is marked deleted.
	got = apply(domain.ReportedPage{Removed: []string{"p2"}},
		domain.ReportedPage{Upserts: []domain.ReportedTransaction{row(2, "")}},
		domain.ReportedPage{Removed: []string{"p3"}})
	if got.Removed != 2 || e.count(t, `provider_id = 'p2' AND status = 'posted'`) != 1 || e.count(t, `provider_id = 'p3' AND status = 'deleted'`) != 1 {
		t.Fatalf("p2 removed then sent again, p3 removed: changes %+v, p2 posted %d, p3 deleted %d", got,
			e.count(t, `provider_id = 'p2' AND status = 'posted'`), e.count(t, `provider_id = 'p3' AND status = 'deleted'`))
	}
	// The pending p5 removed by the first page's pending set, and listed
	// by the second: it is stored again.
	got = apply(domain.ReportedPage{Upserts: rows[:1], ReplacePendingFor: []string{"a1"}},
		domain.ReportedPage{Upserts: []domain.ReportedTransaction{row(5, "")}})
	if got != (storage.RowChanges{Modified: 1, Removed: 1}) || e.count(t, `provider_id = 'p5' AND status = 'pending'`) != 1 {
		t.Fatalf("pending p5 replaced then listed: changes %+v", got)
	}
	// A removal found by the batch's comparison, with nothing written
	// before it.
	if got := apply(domain.ReportedPage{Upserts: rows[:1]}, domain.ReportedPage{Removed: []string{"p4", "unknown"}}); got != (storage.RowChanges{Removed: 1}) ||
		e.count(t, `provider_id = 'p4' AND status = 'deleted'`) != 1 {
		t.Fatalf("p4 removed: changes %+v", got)
	}
	// A change to the row whose id sorts last in the batch (the second
	// half, when compared in two).
	if got := apply(domain.ReportedPage{Upserts: []domain.ReportedTransaction{row(2, "-9.99")}}, domain.ReportedPage{Upserts: rows[:2]}); got != (storage.RowChanges{Modified: 1}) ||
		e.count(t, `provider_id = 'p2' AND amount = -9.99`) != 1 {
		t.Fatalf("p2 changed: changes %+v", got)
	}
	// New rows among unchanged ones take ids in the provider's order,
	// whatever order their provider ids sort in.
	zz, aa := rows[0], rows[0]
	zz.ProviderID, aa.ProviderID = "zz-new", "aa-new"
	if got := apply(domain.ReportedPage{Upserts: rows[:1]}, domain.ReportedPage{Upserts: []domain.ReportedTransaction{rows[1], zz, aa}}); got != (storage.RowChanges{Added: 2}) {
		t.Fatalf("two new rows: changes %+v", got)
	}
	var order []string
	if err := e.f.Pool.QueryRow(ctx, `SELECT array_agg(provider_id ORDER BY id) FROM transactions
		WHERE provider_id IN ('zz-new', 'aa-new')`).Scan(&order); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(order, []string{"zz-new", "aa-new"}) {
		t.Fatalf("new rows in id order %v, want the provider's order [zz-new aa-new]", order)
	}
	return halves
}

// TestWindowMatchOfABatchNotCopied runs a fresh session's window search on
// a batch whose copy meets a stored row: the rows its match kept are let
// go, the batch is upserted instead, and its inflow pairs with the stored
// outflow by the ids both rows are stored under.
func TestWindowMatchOfABatchNotCopied(t *testing.T) {
	e, s := newTransferSession(t)
	ctx := context.Background()
	s.SetWindowFrom(1)
	day := domain.DateOf(time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC))
	next := domain.DateOf(time.Date(2026, 3, 3, 0, 0, 0, 0, time.UTC))
	row := func(pid, acct, amount string, d domain.Date) domain.ReportedTransaction {
		return domain.ReportedTransaction{ProviderID: pid, ProviderAccountID: acct, Status: domain.TxPosted,
			Summary: "Transfer", Amount: domain.MustMoney(amount), Currency: "USD", PostedDate: &d}
	}
	if _, err := s.ApplyBatch(ctx, []domain.ReportedPage{{Upserts: []domain.ReportedTransaction{
		row("out", "chk", "-250.00", day), row("coffee", "chk", "-4.50", day)}}}); err != nil {
		t.Fatal(err)
	}
	// "coffee" again: the copy fails, and the batch is upserted.
	res, err := s.ApplyBatch(ctx, []domain.ReportedPage{{Upserts: []domain.ReportedTransaction{
		row("coffee", "chk", "-4.50", day), row("in", "sav", "250.00", next)}, Done: true}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Changes.Added != 1 {
		t.Fatalf("second batch: changes %+v, want the inflow added", res.Changes)
	}
	var pairs, stored int
	if err := e.f.Pool.QueryRow(ctx, `
		SELECT count(*), count(o.id) + count(i.id) FROM transfers tr
		LEFT JOIN transactions o ON o.id = tr.outflow_transaction_id AND o.provider_id = 'out'
		LEFT JOIN transactions i ON i.id = tr.inflow_transaction_id AND i.provider_id = 'in'
		WHERE tr.user_id = $1`, e.conn.UserID).Scan(&pairs, &stored); err != nil {
		t.Fatal(err)
	}
	if pairs != 1 || stored != 2 {
		t.Fatalf("%d transfers naming %d stored sides of out>in, want 1 naming 2", pairs, stored)
	}
	if n := e.count(t, `true`); n != 3 {
		t.Fatalf("%d rows stored, want 3", n)
	}
}

// TestFreshRunCarriesAPendingPairToItsPostedRow pairs a pending outflow in
// a connection's first batch and posts it in the same run's next batch
// (the pending row removed, the posted one naming it): the pair moves to
// the posted row although the run looks up only the pending rows it stored
// itself. A posted row naming a pending row the run never received is
// stored with nothing to carry.
func TestFreshRunCarriesAPendingPairToItsPostedRow(t *testing.T) {
	e, s := newTransferSession(t)
	ctx := context.Background()
	day := domain.DateOf(time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC))
	next := domain.DateOf(time.Date(2026, 3, 3, 0, 0, 0, 0, time.UTC))
	row := func(pid, acct, amount, status string, d domain.Date) domain.ReportedTransaction {
		r := domain.ReportedTransaction{ProviderID: pid, ProviderAccountID: acct, Status: status,
			Summary: "Transfer", Amount: domain.MustMoney(amount), Currency: "USD"}
		if status == domain.TxPending {
			r.AuthorizedDate = &d
		} else {
			r.PostedDate = &d
		}
		return r
	}
	if _, err := s.ApplyBatch(ctx, []domain.ReportedPage{{Upserts: []domain.ReportedTransaction{
		row("p1", "chk", "-250.00", domain.TxPending, day), row("in", "sav", "250.00", domain.TxPosted, next)}}}); err != nil {
		t.Fatal(err)
	}
	pair := func() (transfer uuid.UUID, outflow string) {
		t.Helper()
		if err := e.f.Pool.QueryRow(ctx, `SELECT tr.id, o.provider_id FROM transfers tr
			JOIN transactions o ON o.id = tr.outflow_transaction_id WHERE tr.user_id = $1`, e.conn.UserID).Scan(&transfer, &outflow); err != nil {
			t.Fatalf("the one transfer: %v", err)
		}
		return transfer, outflow
	}
	before, out := pair()
	if out != "p1" {
		t.Fatalf("first batch paired %s, want the pending p1", out)
	}
	posted := row("t1", "chk", "-250.00", domain.TxPosted, next)
	posted.PendingProviderID = new("p1")
	stray := row("t2", "chk", "-9.99", domain.TxPosted, next)
	stray.PendingProviderID = new("never-received")
	if _, err := s.ApplyBatch(ctx, []domain.ReportedPage{{Upserts: []domain.ReportedTransaction{posted, stray},
		Removed: []string{"p1"}, Done: true}}); err != nil {
		t.Fatal(err)
	}
	if after, out := pair(); after != before || out != "t1" {
		t.Fatalf("after posting: transfer %s from %s, want %s from t1", after, out, before)
	}
}

// TestFreshRunKeepsItsRowsPastRemovalsOfRowsNeverStored: a first sync's
// batch that removes a transaction the run never stored (one cancelled
// before the first sync) still has its rows copied and the run keeps
// them for later batches' window searches; a batch that removes a row
// the run stored lets them go, and the removed row pairs with nothing.
func TestFreshRunKeepsItsRowsPastRemovalsOfRowsNeverStored(t *testing.T) {
	e, s := newTransferSession(t)
	ctx := context.Background()
	s.SetWindowFrom(1)
	day := domain.DateOf(time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC))
	row := func(pid, acct, amount string) domain.ReportedTransaction {
		return domain.ReportedTransaction{ProviderID: pid, ProviderAccountID: acct, Status: domain.TxPosted,
			Summary: "Transfer", Amount: domain.MustMoney(amount), Currency: "USD", PostedDate: &day}
	}
	batch := func(removed []string, rows ...domain.ReportedTransaction) storage.SyncResult {
		t.Helper()
		res, err := s.ApplyBatch(ctx, []domain.ReportedPage{{Upserts: rows, Removed: removed}})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	batch(nil, row("out1", "chk", "-250.00"), row("out2", "chk", "-75.00"))
	if res := batch([]string{"cancelled-before"}, row("coffee", "chk", "-4.50")); res.Changes.Added != 1 || res.Changes.Removed != 0 {
		t.Fatalf("batch removing a row never stored: %+v", res.Changes)
	}
	if !s.KeepsCopied() {
		t.Fatal("the run let its rows go for a removal of a row it never stored")
	}
	if res := batch([]string{"out2"}, row("in1", "sav", "250.00")); res.Changes.Removed != 1 {
		t.Fatalf("batch removing out2: %+v", res.Changes)
	}
	if s.KeepsCopied() {
		t.Fatal("the run kept its rows after a batch removed one of them")
	}
	batch(nil, row("in2", "sav", "75.00"))
	var pairs []string
	if err := e.f.Pool.QueryRow(ctx, `SELECT coalesce(array_agg(o.provider_id || '>' || i.provider_id ORDER BY o.provider_id), '{}') FROM transfers tr
		JOIN transactions o ON o.id = tr.outflow_transaction_id JOIN transactions i ON i.id = tr.inflow_transaction_id
		WHERE tr.user_id = $1`, e.conn.UserID).Scan(&pairs); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(pairs, []string{"out1>in1"}) {
		t.Fatalf("pairs %v, want only out1>in1 (out2 is removed)", pairs)
	}
}

// newTransferSession opens a first sync's session on a connection with no
// rows and stores its two accounts, "chk" (checking) and "sav" (savings),
// both in USD.
func newTransferSession(t *testing.T) (*writerEnv, *storage.SyncSession) {
	t.Helper()
	e := newWriterEnv(t)
	s := e.f.St.OpenSyncSession(storage.SyncTarget{Connection: e.conn}, storage.SyncSessionOptions{})
	if _, err := s.ApplyAccounts(context.Background(), "", []domain.ReportedAccount{
		{ProviderAccountID: "chk", Name: "Checking", Currency: "USD", BalancesUnknown: true},
		{ProviderAccountID: "sav", Name: "Savings", Currency: "USD", BalancesUnknown: true},
	}, domain.DateOf(time.Now())); err != nil {
		t.Fatal(err)
	}
	return e, s
}
