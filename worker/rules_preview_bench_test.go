package worker_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/storage"
	"github.com/finsync/finsync/storage/storagetest"
)

// BenchmarkRulePreviewMillion measures storage.PreviewRule (what POST
// /v2/rules/preview runs: count the certain changes in the database, let
// the rule engine decide the rest, one page of 50) for one user with FINSYNC_BENCH_TRANSACTIONS stored transactions
// (default 1,000,000, seeded with COPY as for BenchmarkApplyRulesMillion)
// and the same ten active rules, already applied. Each sub-benchmark is one
// kind of rule; its "changes" metric is the count the preview answers.
//
//	go test ./worker -run '^$' -bench RulePreviewMillion -benchtime 3x -timeout 30m
func BenchmarkRulePreviewMillion(b *testing.B) {
	n := 1_000_000
	if s := os.Getenv("FINSYNC_BENCH_TRANSACTIONS"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil {
			b.Fatal(err)
		}
	}
	pool, dbURL := storagetest.NewDB(b)
	fx := storagetest.NewFixtures(b, pool)
	user := fx.User(domain.PlanPro, true).ID
	conn := fx.Connection(user, "plaid", "active")
	accts := []uuid.UUID{fx.Account(user, conn, "plaid", "a"), fx.Account(user, conn, "plaid", "b"), fx.Account(user, conn, "plaid", "c")}
	seedMillion(b, pool, user, conn, accts, n)
	cat := fx.Category(user, "Coffee", "Food")
	other := fx.Category(user, "Other", "Food")
	ctx := context.Background()
	setCat := func(c uuid.UUID) string {
		return `[{"action":"updateTransaction","field":"Category","value":{"id":"` + c.String() + `"}}]`
	}
	for i := 0; i < 10; i++ {
		cond, out := fmt.Sprintf(`[{"field":"Summary","operator":"contains","value":"merchant %d "}]`, i*7), setCat(cat)
		if i == 9 {
			cond, out = `[{"field":"Amount","operator":"lt","value":-990}]`, hide
		}
		if _, err := pool.Exec(ctx, `INSERT INTO rules (user_id, conditions, outcomes, priority) VALUES ($1, $2, $3, $4)`,
			user, cond, out, 10+i); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := storage.New(pool).ApplyRulesToUser(ctx, user, 0); err != nil {
		b.Fatal(err)
	}
	// The service's statement timeout (10 s by default) would cut the
	// whole-history case short; measure it whole.
	long, err := storage.Open(ctx, dbURL, storage.Options{StatementTimeout: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	defer long.Close()
	st := storage.New(long)
	cases := []struct{ name, conditions string }{
		{"text-1pct", `[{"field":"Summary","operator":"contains","value":"merchant 41 "}]`},
		{"text-regex-1pct", `[{"field":"Summary","operator":"contains","value":"purchase merchant 43 "}]`},
		{"amount-10pct", `[{"field":"Amount","operator":"lt","value":-900}]`},
		{"merchant-1pct", `[{"field":"MerchantName","operator":"is","value":"merchant 5"}]`},
		{"everything", `[{"field":"Summary","operator":"contains","value":"card"}]`},
		// A matches condition: its exact form is a PostgreSQL regular expression.
		{"everything-matches", `[{"field":"Summary","operator":"matches","value":"(?i)card"}]`},
	}
	for _, c := range cases {
		def := []byte(`{"conditions":` + c.conditions + `,"outcomes":` + setCat(other) + `,"priority":15}`)
		b.Run(c.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				start := time.Now()
				pv, err := previewDef(ctx, st, storage.Scope{UserID: user}, def)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(pv.Count), "changes")
				if i == 0 {
					b.Logf("%s: %d changes, %d listed, %s", c.name, pv.Count, len(pv.Changes), time.Since(start))
				}
			}
		})
	}
}
