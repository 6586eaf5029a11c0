package worker_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/storage"
	"github.com/finsync/finsync/storage/storagetest"
)

// ruleWorld is one user with two accounts and four varied transactions.
type ruleWorld struct {
	pool        *pgxpool.Pool
	fx          *storagetest.Fixtures
	user        uuid.UUID
	acct1, acc2 uuid.UUID
	txs         []uuid.UUID
	cat         uuid.UUID
}

func newRuleWorld(t testing.TB) *ruleWorld {
	t.Helper()
	pool, _ := storagetest.NewDB(t)
	fx := storagetest.NewFixtures(t, pool)
	w := &ruleWorld{pool: pool, fx: fx}
	w.user = fx.User(domain.PlanPro, true).ID
	conn := fx.Connection(w.user, "plaid", "active")
	w.acct1 = fx.Account(w.user, conn, "plaid", "one")
	w.acc2 = fx.Account(w.user, conn, "plaid", "two")
	w.cat = fx.Category(w.user, "Coffee", "Food")
	d := func(day int) time.Time { return time.Date(2026, 3, day, 0, 0, 0, 0, time.UTC) }
	w.txs = append(fx.Transactions(w.user, conn, w.acct1, "plaid", []storagetest.Tx{
		{Summary: "Coffee Shop", Amount: "-4.5", Date: d(5)},
		{Summary: "Grocery Store", Amount: "-120", Date: d(15)},
	}), fx.Transactions(w.user, conn, w.acc2, "plaid", []storagetest.Tx{
		{Summary: "Salary", Amount: "3000", Date: d(28)},
		{Summary: "coffee beans", Amount: "-15.25", Date: d(1)},
	})...)
	w.exec(t, `UPDATE transactions SET merchant_name = 'Blue Bottle', original_description = 'POS COFFEE 123' WHERE id = $1`, w.txs[0])
	w.exec(t, `UPDATE transactions SET merchant_name = 'ACME', provider_merchant_name = 'ACME' WHERE id = $1`, w.txs[2])
	return w
}

func (w *ruleWorld) exec(t testing.TB, sql string, args ...any) {
	t.Helper()
	if _, err := w.pool.Exec(context.Background(), sql, args...); err != nil {
		t.Fatal(err)
	}
}

// rule stores an active rule and returns its id.
func (w *ruleWorld) rule(t testing.TB, conditions, outcomes string, priority int) uuid.UUID {
	t.Helper()
	var id uuid.UUID
	if err := w.pool.QueryRow(context.Background(), `INSERT INTO rules (user_id, conditions, outcomes, priority)
		VALUES ($1, $2, $3, $4) RETURNING id`, w.user, conditions, outcomes, priority).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}

func (w *ruleWorld) apply(t *testing.T, batch int) storage.ApplyStats {
	t.Helper()
	st, err := storage.New(w.pool).ApplyRulesToUser(context.Background(), w.user, batch)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// hidden returns the indexes of the hidden transactions.
func (w *ruleWorld) hidden(t *testing.T) []int {
	t.Helper()
	var out []int
	for i, id := range w.txs {
		var h bool
		if err := w.pool.QueryRow(context.Background(), `SELECT hidden FROM transactions WHERE id = $1`, id).Scan(&h); err != nil {
			t.Fatal(err)
		}
		if h {
			out = append(out, i)
		}
	}
	return out
}

const hide = `[{"action":"hideTransaction","value":true}]`

func TestEveryOperatorOnStoredTransactions(t *testing.T) {
	w := newRuleWorld(t)
	tests := []struct {
		cond string
		want []int
	}{
		{`{"field":"Summary","operator":"is","value":"coffee shop"}`, []int{0}},
		{`{"field":"Summary","operator":"isNot","value":"salary"}`, []int{0, 1, 3}},
		{`{"field":"Summary","operator":"contains","value":"COFFEE"}`, []int{0, 3}},
		{`{"field":"Summary","operator":"doesNotContain","value":"coffee"}`, []int{1, 2}},
		{`{"field":"Summary","operator":"startsWith","value":"gro"}`, []int{1}},
		{`{"field":"Summary","operator":"endsWith","value":"beans"}`, []int{3}},
		{`{"field":"Summary","operator":"oneOf","value":["salary","coffee beans"]}`, []int{2, 3}},
		{`{"field":"Summary","operator":"matches","value":"^[A-Z]"}`, []int{0, 1, 2}},
		{`{"field":"OriginalDescription","operator":"contains","value":"pos"}`, []int{0}},
		{`{"field":"MerchantName","operator":"is","value":"blue bottle"}`, []int{0}},
		{`{"field":"MerchantName","operator":"is","value":"acme"}`, []int{2}},
		{`{"field":"Account","operator":"is","value":"` + w.acc2.String() + `"}`, []int{2, 3}},
		{`{"field":"Account","operator":"isNot","value":"` + w.acc2.String() + `"}`, []int{0, 1}},
		{`{"field":"Account","operator":"oneOf","value":["` + w.acct1.String() + `"]}`, []int{0, 1}},
		{`{"field":"Amount","operator":"is","value":-4.50}`, []int{0}},
		{`{"field":"Amount","operator":"gt","value":-15.25}`, []int{0, 2}},
		{`{"field":"Amount","operator":"gte","value":-15.25}`, []int{0, 2, 3}},
		{`{"field":"Amount","operator":"lt","value":0}`, []int{0, 1, 3}},
		{`{"field":"Amount","operator":"lte","value":-120}`, []int{1}},
		{`{"field":"Amount","operator":"between","value":[-20, -4.5]}`, []int{0, 3}},
		{`{"field":"transactionDay","operator":"is","value":15}`, []int{1}},
		{`{"field":"transactionDay","operator":"gt","value":15}`, []int{2}},
		{`{"field":"transactionDay","operator":"gte","value":15}`, []int{1, 2}},
		{`{"field":"transactionDay","operator":"lt","value":5}`, []int{3}},
		{`{"field":"transactionDay","operator":"lte","value":5}`, []int{0, 3}},
		{`{"field":"transactionDay","operator":"between","value":[2, 20]}`, []int{0, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.cond, func(t *testing.T) {
			w.exec(t, `DELETE FROM rules`)
			w.rule(t, "["+tt.cond+"]", hide, 10)
			w.apply(t, 0)
			if got := w.hidden(t); !slices.Equal(got, tt.want) {
				t.Fatalf("hidden %v, want %v", got, tt.want)
			}
		})
	}
}

func TestMerchantNameFallsBackToTheProvidersName(t *testing.T) {
	w := newRuleWorld(t)
	rename := w.rule(t, `[{"field":"MerchantName","operator":"contains","value":"bottle"}]`,
		`[{"action":"updateTransaction","field":"MerchantName","value":"Blue Bottle Coffee"}]`, 10)
	merchant := func() (string, *string) {
		var name string
		var provider *string
		if err := w.pool.QueryRow(context.Background(), `SELECT merchant_name, provider_merchant_name FROM transactions WHERE id = $1`, w.txs[0]).Scan(&name, &provider); err != nil {
			t.Fatal(err)
		}
		return name, provider
	}
	if st := w.apply(t, 0); st.Changed != 1 || st.Seen != 4 {
		t.Fatalf("first run: %+v", st)
	}
	if name, provider := merchant(); name != "Blue Bottle Coffee" || provider == nil || *provider != "Blue Bottle" {
		t.Fatalf("renamed: %q %v", name, provider)
	}
	// The rule still matches on the provider's name, so a re-run changes nothing.
	if st := w.apply(t, 0); st.Changed != 0 {
		t.Fatalf("re-run changed %d rows", st.Changed)
	}
	w.exec(t, `UPDATE rules SET archived_at = now() WHERE id = $1`, rename)
	w.apply(t, 0)
	if name, _ := merchant(); name != "Blue Bottle" {
		t.Fatalf("archived rule's name should be undone: %q", name)
	}
}

func TestBatchesWalkEveryTransaction(t *testing.T) {
	w := newRuleWorld(t)
	conn := w.fx.Connection(w.user, "plaid", "active")
	same := time.Date(2026, 3, 5, 0, 0, 0, 0, time.UTC)
	more := make([]storagetest.Tx, 9)
	for i := range more {
		more[i] = storagetest.Tx{Date: same, Amount: "-1"}
	}
	w.fx.Transactions(w.user, conn, w.acct1, "plaid", more)
	w.rule(t, `[{"field":"Amount","operator":"lt","value":0}]`, hide, 10)
	for _, batch := range []int{1, 2, 3, 13, 100} {
		w.exec(t, `UPDATE transactions SET hidden = false, hidden_rule_id = NULL`)
		st := w.apply(t, batch)
		if st.Seen != 13 || st.Changed != 12 {
			t.Fatalf("batch %d: %+v", batch, st)
		}
	}
}

func TestPriorityOrderAndUserChoice(t *testing.T) {
	w := newRuleWorld(t)
	other := w.fx.Category(w.user, "Treats", "Food")
	set := func(cat uuid.UUID) string {
		return `[{"action":"updateTransaction","field":"Category","value":{"id":"` + cat.String() + `"}}]`
	}
	coffee := `[{"field":"Summary","operator":"contains","value":"coffee"}]`
	w.rule(t, coffee, set(other), 50)
	w.rule(t, coffee, set(w.cat), 50) // same priority, created later: wins
	w.exec(t, `UPDATE transactions SET category_id = NULL, category_source = 'user' WHERE id = $1`, w.txs[3])
	w.apply(t, 0)
	var c0 *uuid.UUID
	var c3 *uuid.UUID
	if err := w.pool.QueryRow(context.Background(), `SELECT (SELECT category_id FROM transactions WHERE id = $1), (SELECT category_id FROM transactions WHERE id = $2)`,
		w.txs[0], w.txs[3]).Scan(&c0, &c3); err != nil {
		t.Fatal(err)
	}
	if c0 == nil || *c0 != w.cat || c3 != nil {
		t.Fatalf("later rule should win and the user's choice stay: %v %v", c0, c3)
	}
}

// BenchmarkApplyRulesMillion measures the rule job end to end over
// FINSYNC_BENCH_TRANSACTIONS stored transactions (default 1,000,000) of one
// user, seeded with COPY, with ten active rules: the first run after the
// rules appear (many rows change), then a re-run in which nothing changes.
//
//	go test ./worker -run '^$' -bench ApplyRulesMillion -benchtime 1x -timeout 30m
func BenchmarkApplyRulesMillion(b *testing.B) {
	n := 1_000_000
	if s := os.Getenv("FINSYNC_BENCH_TRANSACTIONS"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil {
			b.Fatal(err)
		}
	}
	pool, _ := storagetest.NewDB(b)
	fx := storagetest.NewFixtures(b, pool)
	user := fx.User(domain.PlanPro, true).ID
	conn := fx.Connection(user, "plaid", "active")
	accts := []uuid.UUID{fx.Account(user, conn, "plaid", "a"), fx.Account(user, conn, "plaid", "b"), fx.Account(user, conn, "plaid", "c")}
	seedStart := time.Now()
	seedMillion(b, pool, user, conn, accts, n)
	b.Logf("seeded %d transactions in %s", n, time.Since(seedStart))
	cat := fx.Category(user, "Coffee", "Food")
	ctx := context.Background()
	for i := 0; i < 10; i++ {
		cond := fmt.Sprintf(`[{"field":"Summary","operator":"contains","value":"merchant %d "}]`, i*7)
		out := `[{"action":"updateTransaction","field":"Category","value":{"id":"` + cat.String() + `"}}]`
		if i == 9 {
			cond, out = `[{"field":"Amount","operator":"lt","value":-990}]`, hide
		}
		if _, err := pool.Exec(ctx, `INSERT INTO rules (user_id, conditions, outcomes, priority) VALUES ($1, $2, $3, $4)`,
			user, cond, out, 10+i); err != nil {
			b.Fatal(err)
		}
	}
	for _, phase := range []string{"first-run", "rerun-unchanged"} {
		b.Run(phase, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				start := time.Now()
				st, err := storage.New(pool).ApplyRulesToUser(ctx, user, 0)
				if err != nil {
					b.Fatal(err)
				}
				secs := time.Since(start).Seconds()
				b.ReportMetric(float64(st.Seen)/secs, "rows/s")
				b.ReportMetric(float64(st.Changed), "changed")
				b.Logf("%s: %d transactions, %d changed, %.2fs, %.0f rows/s", phase, st.Seen, st.Changed, secs, float64(st.Seen)/secs)
			}
		})
	}
}

// seedMillion stores n transactions of the user with COPY.
func seedMillion(b *testing.B, pool *pgxpool.Pool, user, conn uuid.UUID, accts []uuid.UUID, n int) {
	b.Helper()
	base := time.Date(2023, 1, 1, 0, 0, 0, 0, time.UTC)
	i := 0
	src := pgx.CopyFromFunc(func() ([]any, error) {
		if i == n {
			return nil, nil
		}
		id := uuid.New()
		day := base.AddDate(0, 0, i%1100)
		row := []any{id, user, conn, accts[i%len(accts)], "plaid", id.String(), "posted",
			fmt.Sprintf("Card purchase merchant %d #%d", i%100, i), fmt.Sprintf("-%d.%02d", i%1000, i%100), "USD", day, day,
			fmt.Sprintf("Merchant %d", i%100)}
		i++
		return row, nil
	})
	ctx := context.Background()
	db, err := pool.Acquire(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Release()
	// One COPY of a million rows outlasts the pool's statement timeout.
	if _, err := db.Exec(ctx, `SET statement_timeout = 0`); err != nil {
		b.Fatal(err)
	}
	defer db.Exec(ctx, `RESET statement_timeout`) //nolint:errcheck
	_, err = db.CopyFrom(ctx, pgx.Identifier{"transactions"},
		[]string{"id", "user_id", "bank_connection_id", "account_id", "provider", "provider_id", "status",
			"summary", "amount", "currency", "authorized_date", "posted_date", "merchant_name"}, src)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := db.Exec(ctx, `VACUUM ANALYZE transactions`); err != nil {
		b.Fatal(err)
	}
}

func TestRuleAppliesOnlyToItsAllowedAccounts(t *testing.T) {
	w := newRuleWorld(t)
	w.exec(t, `INSERT INTO rules (user_id, conditions, outcomes, priority, allowed_account_ids) VALUES ($1, $2, $3, 10, $4)`,
		w.user, `[{"field":"Summary","operator":"contains","value":"o"}]`, hide, []uuid.UUID{w.acc2})
	w.apply(t, 0)
	if got := w.hidden(t); !slices.Equal(got, []int{3}) {
		t.Fatalf("hidden %v, want only the allowed account's match", got)
	}
}
