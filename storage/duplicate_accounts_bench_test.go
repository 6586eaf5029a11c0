package storage_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/storage"
	"github.com/finsync/finsync/storage/storagetest"
)

// dupBenchRows is the history of the double-link benchmarks: one user,
// one bank linked twice, three accounts a link, each link holding half.
const dupBenchRows = 1_000_000

// seedDoubleLink stores the benchmarks' user: two connections a day
// apart, three accounts each of one institution, type and mask, and the
// same dupBenchRows/2 posted transactions on each link (about a hundred
// a day and account, over four and a half years). It returns the user
// and the newer link's accounts.
func seedDoubleLink(b *testing.B, pool *pgxpool.Pool) (uuid.UUID, []uuid.UUID) {
	b.Helper()
	ctx := context.Background()
	f := storagetest.NewFixtures(b, pool)
	u := f.User(domain.PlanPro, true)
	var newer []uuid.UUID
	for c := range 2 {
		conn := f.Connection(u.ID, "plaid", domain.ConnectionActive)
		if _, err := pool.Exec(ctx, `UPDATE bank_connections SET created_at = now() - make_interval(days => $2) WHERE id = $1`,
			conn, 2-c); err != nil {
			b.Fatal(err)
		}
		var accts []uuid.UUID
		for range 3 {
			accts = append(accts, f.Account(u.ID, conn, "plaid", "Checking"))
		}
		if c == 1 {
			newer = accts
		}
		// In chunks: each statement stays within the pool's timeout.
		for lo := 1; lo <= dupBenchRows/2; lo += 50_000 {
			_, err := pool.Exec(ctx, `
				INSERT INTO transactions (user_id, bank_connection_id, account_id, provider, provider_id, status, summary,
					amount, currency, authorized_date, posted_date)
				SELECT $1, $2, ($3::uuid[])[i % 3 + 1], 'plaid', 'p' || i, 'posted', 'purchase',
					-((i::bigint * 7919) % 100000) / 100.0 - 1, 'USD', date '2021-01-01' + i / 300, date '2021-01-01' + i / 300
				FROM generate_series($4::int, $5::int) i`, u.ID, conn, accts, lo, min(lo+49_999, dupBenchRows/2))
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	if _, err := pool.Exec(ctx, `ANALYZE transactions`); err != nil {
		b.Fatal(err)
	}
	return u.ID, newer
}

// errRollback ends a benchmark's transaction without keeping its writes.
var errRollback = errors.New("rolled back")

// BenchmarkDoubleLinkDetection is the detection a sync's end runs, on a
// user with 1,000,000 transactions: "pairs" with the three unmarked
// copies to confirm (each iteration marks them in a transaction rolled
// back), "settled" once they are marked (what every later sync pays); and
// the default listing of 250 rows with and without the duplicates'
// filter, before the marks (it hides nothing) and after (it hides half
// the rows).
func BenchmarkDoubleLinkDetection(b *testing.B) {
	pool, _ := storagetest.NewDB(b)
	user, newer := seedDoubleLink(b, pool)
	st := storage.New(pool)
	ctx := context.Background()
	b.Run("pairs", func(b *testing.B) {
		for b.Loop() {
			err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
				ids, err := storage.MarkDuplicateAccountsIn(ctx, tx, user)
				if err == nil && len(ids) != len(newer) {
					b.Fatalf("marked %d, want %d", len(ids), len(newer))
				}
				return errRollback
			})
			if !errors.Is(err, errRollback) {
				b.Fatal(err)
			}
		}
	})
	sc := storage.Scope{UserID: user}
	list("no-marks", b, st, sc)
	if ids, err := st.MarkDuplicateAccounts(ctx, user); err != nil || len(ids) != len(newer) {
		b.Fatalf("marked %v, %v", ids, err)
	}
	b.Run("settled", func(b *testing.B) {
		for b.Loop() {
			if ids, err := st.MarkDuplicateAccounts(ctx, user); err != nil || len(ids) != 0 {
				b.Fatalf("marked %v, %v", ids, err)
			}
		}
	})
	list("marked", b, st, sc)
}

// list measures the default listing of 250 rows with includeDuplicates
// (no filter) and without (the filter), alternating twice in the run.
func list(stage string, b *testing.B, st *storage.Store, sc storage.Scope) {
	for _, mode := range []struct {
		name    string
		include bool
	}{{"include", true}, {"default", false}, {"include-again", true}, {"default-again", false}} {
		b.Run(stage+"/list-250-"+mode.name, func(b *testing.B) {
			f := storage.TransactionFilter{Statuses: []string{domain.TxPosted}, IncludeDuplicates: mode.include}
			for b.Loop() {
				rows, _, err := st.ListTransactions(context.Background(), sc, f, storage.Keyset{}, 251)
				if err != nil || len(rows) != 251 {
					b.Fatalf("%d rows, %v", len(rows), err)
				}
			}
		})
	}
}
