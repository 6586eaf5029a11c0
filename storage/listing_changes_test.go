package storage_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/storage/storagetest"
)

// TestListingVersionMovesWithCommitsOnly: a committed change moves the
// user's version and no one else's; a rolled-back change, a statement that
// changes no row and compaction leave it as it was.
func TestListingVersionMovesWithCommitsOnly(t *testing.T) {
	ctx := context.Background()
	pool, _ := storagetest.NewDB(t)
	fx := storagetest.NewFixtures(t, pool)
	st := fx.St
	user, other := fx.User(domain.PlanPro, true), fx.User(domain.PlanPro, true)
	conn := fx.Connection(user.ID, "plaid", "active")
	acct := fx.Account(user.ID, conn, "plaid", "checking")
	version := func(u domain.User) int64 {
		t.Helper()
		v, err := st.GetListingVersion(ctx, u.ID)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := pool.Exec(ctx, sql, args...); err != nil {
			t.Fatal(err)
		}
	}
	day := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	v0, o0 := version(user), version(other)
	ids := fx.Transactions(user.ID, conn, acct, "plaid", []storagetest.Tx{{Date: day}, {Date: day}})
	v1 := version(user)
	if v1 <= v0 || version(other) != o0 {
		t.Fatalf("after new rows: version %d (was %d), other user's %d (was %d)", v1, v0, version(other), o0)
	}

	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `UPDATE transactions SET summary = 'rolled back' WHERE id = $1`, ids[0]); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	exec(`UPDATE transactions SET summary = 'nothing' WHERE id = $1 AND false`, ids[0])
	if v := version(user); v != v1 {
		t.Fatalf("a rolled-back change or one of no row moved the version: %d, was %d", v, v1)
	}

	// Many statements of one transaction note the user once.
	var before, after int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM listing_changes WHERE user_id = $1`, user.ID).Scan(&before); err != nil {
		t.Fatal(err)
	}
	if err := fx.St.InTx(ctx, func(tx pgx.Tx) error {
		for _, sql := range []string{`UPDATE transactions SET summary = 'one' WHERE id = $1`, `UPDATE transactions SET summary = 'two' WHERE id = $1`,
			`DELETE FROM transactions WHERE id = $1 AND false`} {
			if _, err := tx.Exec(ctx, sql, ids[0]); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM listing_changes WHERE user_id = $1`, user.ID).Scan(&after); err != nil || after != before+1 {
		t.Fatalf("a transaction of two updates added %d change rows (%v), want 1", after-before, err)
	}
	v1 = version(user)

	exec(`UPDATE accounts SET current_balance = 12.34 WHERE id = $1`, acct)
	if v := version(user); v != v1 {
		t.Fatalf("an account's balance, which no listing shows, moved the version: %d, was %d", v, v1)
	}
	for i := range 5 {
		exec(`UPDATE transactions SET summary = $1 WHERE id = $2`, string(rune('a'+i)), ids[1])
	}
	v2 := version(user)
	if v2 < v1+5 {
		t.Fatalf("five committed updates moved the version from %d to %d", v1, v2)
	}
	var rows int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM listing_changes WHERE user_id = $1`, user.ID).Scan(&rows); err != nil || rows < 6 {
		t.Fatalf("change rows of the user: %d (%v)", rows, err)
	}
	fx.Connection(other.ID, "plaid", "active")
	exec(`DELETE FROM users WHERE id = $1`, other.ID)
	if _, err := st.CompactListingChanges(ctx, 100); err != nil {
		t.Fatal(err)
	}
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM listing_changes WHERE user_id = $1`, user.ID).Scan(&rows); err != nil || rows != 1 {
		t.Fatalf("after compaction the user has %d change rows (%v), want 1", rows, err)
	}
	if v := version(user); v != v2 {
		t.Fatalf("compaction moved the version from %d to %d", v2, v)
	}
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM listing_changes WHERE user_id = $1`, other.ID).Scan(&rows); err != nil || rows != 0 {
		t.Fatalf("a deleted user keeps %d change rows (%v)", rows, err)
	}
}
