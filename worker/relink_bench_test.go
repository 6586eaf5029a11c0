package worker_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/finsync/finsync/providers/all/allsim"
	"github.com/finsync/finsync/providers/sim/simkit"
)

// BenchmarkSyncRelinkPlaid measures the first sync after a Plaid re-link
// (a new Item: every account and transaction id re-issued) of a connection
// whose whole history is stored, against a whole re-read of the same
// history under the old ids (the cursor dropped, every row known and
// unchanged) in the same run: the re-link's sync matches every row to a
// stored one and rewrites its provider id. The first sync that stores the
// history, and the vacuum after it, are not timed.
func BenchmarkSyncRelinkPlaid(b *testing.B) {
	size := benchSize(b)
	ctx := context.Background()
	for range b.N {
		b.StopTimer()
		e := newBenchEnv(b)
		c := e.connect("plaid", "relink", size, size/newPerDay)
		first, _ := e.sync(c)
		e.settle()
		if _, err := e.pool.Exec(ctx, `UPDATE bank_connections SET sync_cursor = '' WHERE id = $1`, c.ID); err != nil {
			b.Fatal(err)
		}
		e.tracer.report(b)
		reread, rows := e.sync(c)
		e.settle()
		e.tracer.report(b)
		sealed, err := e.box.Seal(allsim.Credentials("plaid", "relink"+simkit.RelinkSeparator+"1"))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := e.st.ReauthConnection(ctx, c.ID, sealed, ""); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		relink, _ := e.sync(c)
		b.StopTimer()
		e.tracer.report(b)
		var kept, live int
		if err := e.pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE status <> 'deleted'), count(*) FROM transactions WHERE bank_connection_id = $1`,
			c.ID).Scan(&kept, &live); err != nil {
			b.Fatal(err)
		}
		// Ordinary syncs after it: what the re-link's checks cost them.
		clear(e.tracer.times)
		var incr []time.Duration
		for range 10 {
			if err := e.sim.Advance(1); err != nil {
				b.Fatal(err)
			}
			d, _ := e.sync(c)
			incr = append(incr, d)
		}
		var checks, total time.Duration
		for k, v := range e.tracer.times {
			total += v
			if strings.HasPrefix(k, "SELECT EXISTS (SELECT FROM") || strings.HasPrefix(k, "SELECT id, provider_account_id,") ||
				strings.HasPrefix(k, "UPDATE accounts a SET") || strings.HasPrefix(k, "UPDATE bank_connections SET relinking") {
				checks += v
			}
		}
		slices.Sort(incr)
		b.ReportMetric(float64(incr[len(incr)/2].Microseconds())/1000, "ms-incremental-median")
		b.ReportMetric(float64(checks.Microseconds())/1000/float64(len(incr)), "ms-relink-checks/sync")
		b.ReportMetric(100*checks.Seconds()/total.Seconds(), "%-of-statement-time")
		b.ReportMetric(first.Seconds(), "s-first-sync")
		b.ReportMetric(reread.Seconds(), "s-whole-reread")
		b.ReportMetric(relink.Seconds(), "s-relink-sync")
		b.ReportMetric(relink.Seconds()/reread.Seconds(), "relink/reread")
		b.Logf("%d rows returned by a whole re-read; after the re-link %d rows stored, %d not deleted; first sync %v, re-read %v, re-link %v",
			rows, live, kept, first.Round(time.Millisecond), reread.Round(time.Millisecond), relink.Round(time.Millisecond))
	}
}
