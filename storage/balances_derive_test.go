package storage_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/storage"
	"github.com/finsync/finsync/storage/storagetest"
)

// dailyBalances reads an account's balance history: balance text and
// derived flag by date.
func dailyBalances(t *testing.T, fx *storagetest.Fixtures, account any) map[string]string {
	t.Helper()
	rows, err := fx.Pool.Query(context.Background(), `SELECT date::text, balance::numeric(19,2)::text || CASE WHEN derived THEN ' d' ELSE ' r' END
		FROM balance_history WHERE account_id = $1`, account)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var d, v string
		if err := rows.Scan(&d, &v); err != nil {
			t.Fatal(err)
		}
		out[d] = v
	}
	return out
}

// TestDeriveBalancesRules checks the derivation on hand-made rows: net
// amounts (fees) move the balance, pending and deleted rows do not, a
// credit card's balance is the amount owed, the anchor day's transactions
// are in the anchor, every day of the span is derived, a recorded day is
// never overwritten but becomes the anchor, and an account
// the sync did not touch is not derived.
func TestDeriveBalancesRules(t *testing.T) {
	ctx := context.Background()
	pool, _ := storagetest.NewDB(t)
	fx := storagetest.NewFixtures(t, pool)
	user := fx.User(domain.PlanPro, true).ID
	conn := fx.Connection(user, "stripe", "active")
	checking := fx.Account(user, conn, "stripe", "Balance")
	card := fx.Account(user, conn, "plaid", "Card")
	if _, err := pool.Exec(ctx, `UPDATE accounts SET type = 'credit' WHERE id = $1`, card); err != nil {
		t.Fatal(err)
	}
	day := func(d int) time.Time { return time.Date(2026, 3, d, 0, 0, 0, 0, time.UTC) }
	fx.Transactions(user, conn, checking, "stripe", []storagetest.Tx{
		{Amount: "100.00", Date: day(1)},
		{Amount: "-30.25", Date: day(3)},
		{Amount: "50.00", Date: day(3)},
		{Amount: "-999.00", Date: day(4), Status: domain.TxPending},
		{Amount: "-500.00", Date: day(4), Status: domain.TxDeleted},
		{Amount: "-10.10", Date: day(5)}, // on the anchor day: in the anchor
	})
	// The payout of the 3rd carries a fee: 50.00 gross, 48.50 net.
	if _, err := pool.Exec(ctx, `UPDATE transactions SET net_amount = 48.50 WHERE account_id = $1 AND amount = 50`, checking); err != nil {
		t.Fatal(err)
	}
	fx.Transactions(user, conn, card, "plaid", []storagetest.Tx{
		{Amount: "-40.00", Date: day(2)}, // a purchase raises the amount owed
		{Amount: "25.00", Date: day(4)},  // a payment lowers it
	})
	fx.Balance(user, checking, day(5), "1000.00")
	fx.Balance(user, card, day(5), "300.00")
	today := domain.DateOf(day(5))
	all := []storage.BalanceChange{{AccountID: checking}, {AccountID: card}}
	if _, err := storage.DeriveBalances(ctx, pool, user, all, today); err != nil {
		t.Fatal(err)
	}
	wantChecking := map[string]string{
		"2026-03-01": "991.85 d", // 1010.10 - (-30.25 + 48.50 net)
		"2026-03-02": "991.85 d",
		"2026-03-03": "1010.10 d", // 1000 - (-10.10); pending and deleted rows of the 4th do not count
		"2026-03-04": "1010.10 d",
		"2026-03-05": "1000.00 r",
	}
	requireBalances(t, "checking", dailyBalances(t, fx, checking), wantChecking)
	requireBalances(t, "card", dailyBalances(t, fx, card), map[string]string{
		"2026-03-02": "325.00 d", // 300 + 25 (the payment after it had not yet lowered it)
		"2026-03-03": "325.00 d",
		"2026-03-04": "300.00 d",
		"2026-03-05": "300.00 r",
	})

	// An older transaction arrives, and the 4th, derived so far, is now a
	// recorded day: it becomes the anchor and keeps its recorded balance.
	fx.Transactions(user, conn, checking, "stripe", []storagetest.Tx{{Amount: "-5.00", Date: day(2)}})
	if _, err := pool.Exec(ctx, `UPDATE balance_history SET derived = false, balance = 1234.56 WHERE account_id = $1 AND date = '2026-03-04'`, checking); err != nil {
		t.Fatal(err)
	}
	n, err := storage.DeriveBalances(ctx, pool, user, []storage.BalanceChange{{AccountID: checking, Since: domain.DateOf(day(2))},
		{AccountID: card, Since: domain.DateOf(time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC))}}, domain.DateOf(day(6)))
	if err != nil {
		t.Fatal(err)
	}
	// The first recorded day is now the 4th: the span ends on the 3rd.
	requireBalances(t, "checking after", dailyBalances(t, fx, checking), map[string]string{
		"2026-03-01": "1221.31 d", // 1216.31 - (-5)
		"2026-03-02": "1216.31 d", // 1234.56 - (-30.25 + 48.50)
		"2026-03-03": "1234.56 d",
		"2026-03-04": "1234.56 r",
		"2026-03-05": "1000.00 r",
	})
	if n != 3 {
		t.Fatalf("%d derived rows written, want 3 (the card was not touched)", n)
	}

	// A later day is recorded with a balance the transactions do not
	// explain, and a sync stores a transaction after the anchor: the anchor
	// stays the earliest recorded day, so no derived day moves.
	fx.Balance(user, card, day(7), "900.00")
	fx.Transactions(user, conn, card, "plaid", []storagetest.Tx{{Amount: "-1.00", Date: day(7)}})
	before := dailyBalances(t, fx, card)
	n, err = storage.DeriveBalances(ctx, pool, user, []storage.BalanceChange{{AccountID: card, Since: domain.DateOf(day(7))}}, domain.DateOf(day(7)))
	if err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("%d derived rows written after a change past the anchor, want 0", n)
	}
	requireBalances(t, "card after a later recorded day", dailyBalances(t, fx, card), before)
}

// requireBalances fails unless got holds exactly want.
func requireBalances(t *testing.T, name string, got, want map[string]string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %v, want %v", name, got, want)
	}
	for d, v := range want {
		if got[d] != v {
			t.Fatalf("%s: %s is %q, want %q (all: %v)", name, d, got[d], v, got)
		}
	}
}

// countingQuerier counts the statements sent through it: each is one round
// trip.
type countingQuerier struct {
	storage.Querier
	statements int
}

func (c *countingQuerier) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	c.statements++
	return c.Querier.Exec(ctx, sql, args...)
}

func (c *countingQuerier) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	c.statements++
	return c.Querier.Query(ctx, sql, args...)
}

func (c *countingQuerier) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	c.statements++
	return c.Querier.QueryRow(ctx, sql, args...)
}

// rowVersions reads the xmin of each balance_history row of the account by
// date: a row rewritten, even to the same values, gets a new one.
func rowVersions(t *testing.T, fx *storagetest.Fixtures, account any) map[string]string {
	t.Helper()
	rows, err := fx.Pool.Query(context.Background(), `SELECT date::text, xmin::text FROM balance_history WHERE account_id = $1`, account)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (kv [2]string, err error) {
		err = r.Scan(&kv[0], &kv[1])
		return kv, err
	})
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, kv := range out {
		m[kv[0]] = kv[1]
	}
	return m
}

// TestDeriveBalancesOnlyWhenDue checks when a derivation runs: a call that
// has nothing to derive is one statement and rewrites no row, while an
// account whose earliest recorded day is today and has no derived day, a
// change dated on the anchor day, and a first sync (zero Since) each run
// the derivation (two statements). Accounts without a recorded balance, and
// another user's, are never derived.
func TestDeriveBalancesOnlyWhenDue(t *testing.T) {
	ctx := context.Background()
	pool, _ := storagetest.NewDB(t)
	fx := storagetest.NewFixtures(t, pool)
	user := fx.User(domain.PlanPro, true).ID
	conn := fx.Connection(user, "plaid", "active")
	checking := fx.Account(user, conn, "plaid", "Checking")
	unrecorded := fx.Account(user, conn, "plaid", "No balance yet")
	day := func(d int) time.Time { return time.Date(2026, 4, d, 0, 0, 0, 0, time.UTC) }
	for _, acct := range []uuid.UUID{checking, unrecorded} {
		fx.Transactions(user, conn, acct, "plaid", []storagetest.Tx{
			{Amount: "-10.00", Date: day(1)},
			{Amount: "200.00", Date: day(2)},
			{Amount: "-0.01", Date: day(4)},
			{Amount: "-7.00", Date: day(5)},
		})
	}
	fx.Balance(user, checking, day(5), "500.00")
	// Another user's account, passed under the first user's id.
	other := fx.User(domain.PlanPro, true).ID
	otherConn := fx.Connection(other, "plaid", "active")
	foreign := fx.Account(other, otherConn, "plaid", "Not yours")
	fx.Transactions(other, otherConn, foreign, "plaid", []storagetest.Tx{{Amount: "-1.00", Date: day(1)}})
	fx.Balance(other, foreign, day(5), "5.00")

	never := domain.DateOf(time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC))
	derive := func(name string, today time.Time, wantStatements int, changes ...storage.BalanceChange) int64 {
		t.Helper()
		q := &countingQuerier{Querier: pool}
		n, err := storage.DeriveBalances(ctx, q, user, changes, domain.DateOf(today))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if q.statements != wantStatements {
			t.Fatalf("%s: %d statements, want %d", name, q.statements, wantStatements)
		}
		return n
	}
	untouched := []storage.BalanceChange{{AccountID: checking, Since: never}, {AccountID: unrecorded, Since: never},
		{AccountID: foreign, Since: never}}

	// The first balance was recorded today and there is no derived day yet:
	// derived although no transaction changed.
	if n := derive("first balance today", day(5), 2, untouched...); n != 4 {
		t.Fatalf("first balance today: %d rows derived, want 4", n)
	}
	want := map[string]string{
		"2026-04-01": "307.01 d", // 507.01 - 200 (the -10.00 of the 1st is in its own end of day)
		"2026-04-02": "507.01 d", // 507 - (-0.01)
		"2026-04-03": "507.01 d",
		"2026-04-04": "507.00 d", // 500 - (-7.00)
		"2026-04-05": "500.00 r",
	}
	requireBalances(t, "checking", dailyBalances(t, fx, checking), want)
	requireBalances(t, "no balance yet", dailyBalances(t, fx, unrecorded), map[string]string{})
	requireBalances(t, "another user's", dailyBalances(t, fx, foreign), map[string]string{"2026-04-05": "5.00 r"})

	// Nothing to derive: the same day again (derived days now exist), a
	// later day, a change after the anchor, another user's account even
	// from the whole history. One statement, no row rewritten.
	before := rowVersions(t, fx, checking)
	for _, c := range []struct {
		name    string
		today   time.Time
		changes []storage.BalanceChange
	}{
		{"same day again", day(5), untouched},
		{"a later day", day(9), untouched},
		{"a change after the anchor", day(9), []storage.BalanceChange{{AccountID: checking, Since: domain.DateOf(day(6))}}},
		{"another user's account", day(5), []storage.BalanceChange{{AccountID: foreign}}},
		{"no recorded balance", day(5), []storage.BalanceChange{{AccountID: unrecorded}}},
	} {
		if n := derive(c.name, c.today, 1, c.changes...); n != 0 {
			t.Fatalf("%s: %d rows derived, want 0", c.name, n)
		}
	}
	requireBalances(t, "checking after no-ops", dailyBalances(t, fx, checking), want)
	requireBalances(t, "another user's after no-ops", dailyBalances(t, fx, foreign), map[string]string{"2026-04-05": "5.00 r"})
	if after := rowVersions(t, fx, checking); len(after) != len(before) {
		t.Fatalf("rows %v, before %v", after, before)
	} else {
		for d, v := range before {
			if after[d] != v {
				t.Fatalf("%s rewritten by a derivation with nothing to derive", d)
			}
		}
	}

	// A derived day made wrong shows which calls derive: a change after the
	// anchor leaves it, a change dated on the anchor day re-derives it, and
	// so does a first sync (the zero Since).
	spoil := func() {
		t.Helper()
		if _, err := pool.Exec(ctx, `UPDATE balance_history SET balance = 0 WHERE account_id = $1 AND date = '2026-04-02'`, checking); err != nil {
			t.Fatal(err)
		}
	}
	spoil()
	if n := derive("a change after the anchor", day(9), 1, storage.BalanceChange{AccountID: checking, Since: domain.DateOf(day(6))}); n != 0 {
		t.Fatalf("a change after the anchor: %d rows derived, want 0", n)
	}
	if got := dailyBalances(t, fx, checking)["2026-04-02"]; got != "0.00 d" {
		t.Fatalf("the spoiled day is %q after a no-op, want it left", got)
	}
	if n := derive("a change on the anchor day", day(9), 2, storage.BalanceChange{AccountID: checking, Since: domain.DateOf(day(5))}); n != 1 {
		t.Fatalf("a change on the anchor day: %d rows derived, want 1", n)
	}
	requireBalances(t, "checking after a change on the anchor day", dailyBalances(t, fx, checking), want)
	spoil()
	if n := derive("first sync", day(9), 2, storage.BalanceChange{AccountID: checking}, storage.BalanceChange{AccountID: foreign}); n != 1 {
		t.Fatalf("first sync: %d rows derived, want 1", n)
	}
	requireBalances(t, "checking after a first sync", dailyBalances(t, fx, checking), want)
	requireBalances(t, "another user's after a first sync", dailyBalances(t, fx, foreign), map[string]string{"2026-04-05": "5.00 r"})
}
