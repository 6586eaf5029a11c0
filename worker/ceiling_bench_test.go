package worker_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/finsync/finsync/providers/mercury"
)

// BenchmarkSyncCeilings measures the syncs against their ceilings in the
// same run: the database's own cost of writing the very rows a sync
// stores, with nothing of finsync around it.
//
//   - First sync: a Plaid first sync of the history into a fresh database,
//     then its rows (dumped with COPY) written into another fresh database
//     by the ceiling: COPY into a staging table plus one INSERT ... ON
//     CONFLICT DO UPDATE into transactions, with every index and trigger
//     the schema has. Rounds alternate sync and ceiling.
//   - Whole-window re-sync of unchanged data: a Mercury re-sync that gets
//     every stored row back, against the skip-unchanged ceiling on the same
//     database: the same COPY plus an upsert whose WHERE skips every
//     unchanged row (no write). Rounds alternate.
//
// It reports each side's median rows a second and the ratios; run it as
// the other sync benchmarks (FINSYNC_BENCH_SYNC=1, -benchtime 1x);
// FINSYNC_BENCH_SYNC_ROUNDS sets the rounds (default 2).
func BenchmarkSyncCeilings(b *testing.B) {
	b.Run("first", benchFirstSyncCeiling)
	b.Run("resync", benchResyncCeiling)
}

// benchFirstSyncCeiling is BenchmarkSyncCeilings' first sync
// (-bench 'BenchmarkSyncCeilings/first' runs it alone).
func benchFirstSyncCeiling(b *testing.B) {
	size := benchSize(b)
	rounds := syncRounds(b)
	for range b.N {
		var syncRate, ceilRate []float64
		for r := range rounds {
			e := newBenchEnv(b)
			c := e.connect("plaid", "ceiling", size, 365)
			d, n := e.sync(c)
			stored := e.stored(c)
			syncRate = append(syncRate, float64(n)/d.Seconds())
			dump, cols := dumpTransactions(b, e.pool, c.ID)
			fresh := newBenchEnv(b)
			cd := copyUpsert(b, fresh.pool, dump, cols)
			if got := fresh.stored(c); got != stored {
				b.Fatalf("ceiling stored %d rows, the sync %d", got, stored)
			}
			ceilRate = append(ceilRate, float64(n)/cd.Seconds())
			b.Logf("round %d, first sync: %v (%.0f tx/s), ceiling: %v (%.0f tx/s), %d rows", r+1, d, float64(n)/d.Seconds(), cd, float64(n)/cd.Seconds(), stored)
		}
		reportRatio(b, "first", syncRate, ceilRate)
	}
}

// benchResyncCeiling is BenchmarkSyncCeilings' whole-window re-sync
// (-bench 'BenchmarkSyncCeilings/resync' runs it alone).
func benchResyncCeiling(b *testing.B) {
	size := benchSize(b)
	rounds := syncRounds(b)
	for range b.N {
		const days = 90
		m := newBenchEnv(b, mercury.WithHistoryDays(days+10), mercury.WithOverlapDays(days+10))
		mc := m.connect("mercury", "ceiling-resync", size, days)
		m.sync(mc)
		m.settle()
		stored := m.stored(mc)
		dump, cols := dumpTransactions(b, m.pool, mc.ID)
		var syncRate, ceilRate []float64
		for r := range rounds {
			d, n := m.sync(mc)
			cd := copyUpsert(b, m.pool, dump, cols)
			if got := m.stored(mc); got != stored {
				b.Fatalf("re-sync or ceiling changed the stored count: %d -> %d", stored, got)
			}
			syncRate = append(syncRate, float64(n)/d.Seconds())
			ceilRate = append(ceilRate, float64(stored)/cd.Seconds())
			b.Logf("round %d, re-sync: %v (%.0f tx/s), skip-unchanged ceiling: %v (%.0f tx/s)", r+1, d, float64(n)/d.Seconds(), cd, float64(stored)/cd.Seconds())
		}
		reportRatio(b, "resync", syncRate, ceilRate)
	}
}

// reportRatio reports the medians of a sync's and its ceiling's rates and
// the sync's share of the ceiling, in percent.
func reportRatio(b *testing.B, name string, syncRate, ceilRate []float64) {
	s, c := median(syncRate), median(ceilRate)
	b.ReportMetric(s, name+"-tx/s")
	b.ReportMetric(c, name+"-ceiling-tx/s")
	b.ReportMetric(100*s/c, name+"-%-of-ceiling")
}

// syncRounds is FINSYNC_BENCH_SYNC_ROUNDS (default 2).
func syncRounds(b *testing.B) int {
	b.Helper()
	v := os.Getenv("FINSYNC_BENCH_SYNC_ROUNDS")
	if v == "" {
		return 2
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		b.Fatalf("FINSYNC_BENCH_SYNC_ROUNDS=%q: want a positive integer", v)
	}
	return n
}

// dumpTransactions copies a connection's stored transactions out in
// PostgreSQL's binary COPY format, with the columns written (every column
// but the generated ones).
func dumpTransactions(b *testing.B, pool *pgxpool.Pool, connectionID uuid.UUID) ([]byte, string) {
	b.Helper()
	ctx := context.Background()
	rows, err := pool.Query(ctx, `SELECT quote_ident(column_name) FROM information_schema.columns
		WHERE table_name = 'transactions' AND table_schema = current_schema() AND is_generated = 'NEVER' ORDER BY ordinal_position`)
	if err != nil {
		b.Fatal(err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		b.Fatal(err)
	}
	cols := strings.Join(names, ", ")
	conn, err := pool.Acquire(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Release()
	var buf bytes.Buffer
	sql := fmt.Sprintf(`COPY (SELECT %s FROM transactions WHERE bank_connection_id = '%s') TO STDOUT (FORMAT binary)`, cols, connectionID)
	if _, err := conn.Conn().PgConn().CopyTo(ctx, &buf, sql); err != nil {
		b.Fatal(err)
	}
	return buf.Bytes(), cols
}

// copyUpsert is the ceiling: dump COPYed into a staging table and merged
// into transactions with one upsert that leaves unchanged rows out, in
// one transaction; it returns the time taken.
func copyUpsert(b *testing.B, pool *pgxpool.Pool, dump []byte, cols string) time.Duration {
	b.Helper()
	ctx := context.Background()
	conn, err := pool.Acquire(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Release()
	start := time.Now()
	tx, err := conn.Begin(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `CREATE TEMP TABLE staging AS SELECT `+cols+` FROM transactions WITH NO DATA`); err != nil {
		b.Fatal(err)
	}
	if _, err := tx.Conn().PgConn().CopyFrom(ctx, bytes.NewReader(dump), `COPY staging FROM STDIN (FORMAT binary)`); err != nil {
		b.Fatal(err)
	}
	// Unchanged rows (the same sync_hash, read from the unique index that
	// includes it) are left out before the insert, so that they take no
	// lock and no WAL; the rest are inserted or updated.
	if _, err := tx.Exec(ctx, `INSERT INTO transactions (`+cols+`) SELECT `+cols+` FROM staging s
		WHERE NOT EXISTS (SELECT 1 FROM transactions x WHERE x.bank_connection_id = s.bank_connection_id
			AND x.provider_id = s.provider_id AND x.user_id = s.user_id AND x.sync_hash IS NOT DISTINCT FROM s.sync_hash)
		ON CONFLICT (bank_connection_id, provider_id, user_id) DO UPDATE SET
			sync_hash = EXCLUDED.sync_hash, amount = EXCLUDED.amount, summary = EXCLUDED.summary,
			status = EXCLUDED.status, posted_date = EXCLUDED.posted_date
		WHERE transactions.sync_hash IS DISTINCT FROM EXCLUDED.sync_hash`); err != nil {
		b.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `DROP TABLE staging`); err != nil {
		b.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		b.Fatal(err)
	}
	return time.Since(start)
}
