package storage_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/rules"
	"github.com/finsync/finsync/storage"
	"github.com/finsync/finsync/storage/storagetest"
)

// syncRuleWorld is one user with four stored transactions and a rule that
// files every outflow under a category: what a sync batch's rules run
// (the session's) starts from.
type syncRuleWorld struct {
	f    *storagetest.Fixtures
	user uuid.UUID
	txs  []uuid.UUID
	cat  uuid.UUID
	rule uuid.UUID
}

func newSyncRuleWorld(t *testing.T) *syncRuleWorld {
	t.Helper()
	pool, _ := storagetest.NewDB(t)
	f := storagetest.NewFixtures(t, pool)
	w := &syncRuleWorld{f: f, user: f.User(domain.PlanPro, true).ID}
	conn := f.Connection(w.user, "plaid", "active")
	acct := f.Account(w.user, conn, "plaid", "one")
	w.cat = f.Category(w.user, "Spending", "Living")
	d := func(day int) time.Time { return time.Date(2026, 3, day, 0, 0, 0, 0, time.UTC) }
	w.txs = f.Transactions(w.user, conn, acct, "plaid", []storagetest.Tx{
		{Summary: "Coffee Shop", Amount: "-4.5", Date: d(5)},
		{Summary: "Grocery Store", Amount: "-120", Date: d(15)},
		{Summary: "Salary", Amount: "3000", Date: d(28)},
		{Summary: "coffee beans", Amount: "-15.25", Date: d(1)},
	})
	if err := pool.QueryRow(context.Background(), `INSERT INTO rules (user_id, conditions, outcomes, priority) VALUES ($1, $2, $3, 10) RETURNING id`,
		w.user, `[{"field":"Amount","operator":"lt","value":0}]`,
		`[{"action":"updateTransaction","field":"Category","value":{"id":"`+w.cat.String()+`"}}]`).Scan(&w.rule); err != nil {
		t.Fatal(err)
	}
	return w
}

// TestSyncRulesTouchOnlyTheGivenTransactions: a batch's rules run changes
// the rows it is given (as the rule decides, recording the rule), and no
// other row of the user.
func TestSyncRulesTouchOnlyTheGivenTransactions(t *testing.T) {
	w := newSyncRuleWorld(t)
	ctx := context.Background()
	if err := storage.ApplyRulesTo(ctx, w.f.St, w.user, []uuid.UUID{w.txs[1], w.txs[2]}, nil); err != nil {
		t.Fatal(err)
	}
	for i, want := range []bool{false, true, false, false} {
		var cat *uuid.UUID
		var source, ruleID *string
		if err := w.f.Pool.QueryRow(ctx, `SELECT category_id, category_source, category_rule_id::text FROM transactions WHERE id = $1`, w.txs[i]).
			Scan(&cat, &source, &ruleID); err != nil {
			t.Fatal(err)
		}
		if got := cat != nil && *cat == w.cat; got != want {
			t.Fatalf("transaction %d: categorised %v, want %v", i, got, want)
		}
		if want && (source == nil || *source != "rule" || ruleID == nil) {
			t.Fatalf("transaction %d: source %v rule %v", i, source, ruleID)
		}
	}
}

// TestSyncRulesCompileEachVersionOnceAcrossPages: with one cache, the
// rules runs of a sync's batches and of the next sync compile a rule
// version once, and a new version once more.
func TestSyncRulesCompileEachVersionOnceAcrossPages(t *testing.T) {
	w := newSyncRuleWorld(t)
	ctx := context.Background()
	cache := rules.NewCache(rules.DefaultCacheSize)
	page := func(ids ...uuid.UUID) {
		t.Helper()
		if err := storage.ApplyRulesTo(ctx, w.f.St, w.user, ids, cache); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 5; i++ {
		page(w.txs[i%len(w.txs)])
	}
	if got := cache.Compilations(); got != 1 {
		t.Fatalf("compilations over five pages: %d, want 1", got)
	}
	if _, err := w.f.Pool.Exec(ctx, `UPDATE rules SET updated_at = updated_at + interval '1 second' WHERE id = $1`, w.rule); err != nil {
		t.Fatal(err)
	}
	page(w.txs[1])
	page(w.txs[2])
	if got := cache.Compilations(); got != 2 {
		t.Fatalf("compilations after a new version: %d, want 2", got)
	}
}
