package worker_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/finsync/finsync/providers/all/allsim"
	"github.com/finsync/finsync/providers/sim/simkit"
	"github.com/finsync/finsync/storage"
)

// transferPairs returns the user's transfers as "outflow>inflow" ids.
func (e *benchEnv) transferPairs() []string {
	e.tb.Helper()
	trs, err := e.st.ListTransfers(context.Background(), storage.Scope{UserID: e.user.ID}, storage.TransferFilter{}, storage.Keyset{}, 1000)
	if err != nil {
		e.tb.Fatal(err)
	}
	out := make([]string, 0, len(trs))
	for _, tr := range trs {
		out = append(out, tr.OutflowTransactionID.String()+">"+tr.InflowTransactionID.String())
	}
	slices.Sort(out)
	return out
}

// TestRejectedTransferStaysRejectedAcrossSyncs syncs a simulated Plaid
// connection through the worker's Syncer, unpairs a detected transfer,
// then runs ten syncs of the following days (new rows, pending rows
// posting), a detection pass over every stored row and a re-link of the
// bank: the unpaired pair never comes back, and the other pairs stay.
func TestRejectedTransferStaysRejectedAcrossSyncs(t *testing.T) {
	e := newBenchEnv(t)
	ctx := context.Background()
	c := e.connect("plaid", "rejected-transfer", 3000, 60)
	e.sync(c)
	before := e.transferPairs()
	if len(before) < 2 {
		t.Fatalf("only %d transfers detected in the first sync", len(before))
	}
	trs, err := e.st.ListTransfers(ctx, storage.Scope{UserID: e.user.ID}, storage.TransferFilter{}, storage.Keyset{}, 1)
	if err != nil {
		t.Fatal(err)
	}
	rejected := trs[0].OutflowTransactionID.String() + ">" + trs[0].InflowTransactionID.String()
	if err := e.st.DeleteTransfer(ctx, storage.Scope{UserID: e.user.ID}, trs[0].ID); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if err := e.sim.Advance(1); err != nil {
			t.Fatal(err)
		}
		e.sync(c)
		got := e.transferPairs()
		if slices.Contains(got, rejected) {
			t.Fatalf("sync %d: the unpaired transfer %s is back", i+1, rejected)
		}
		for _, p := range before {
			if p != rejected && !slices.Contains(got, p) {
				t.Fatalf("sync %d: transfer %s is gone", i+1, p)
			}
		}
	}
	var all []uuid.UUID
	if err := e.pool.QueryRow(ctx, `SELECT array_agg(id) FROM transactions WHERE user_id = $1`, e.user.ID).Scan(&all); err != nil {
		t.Fatal(err)
	}
	if _, err := e.st.DetectTransfers(ctx, e.user.ID, all); err != nil {
		t.Fatal(err)
	}
	if slices.Contains(e.transferPairs(), rejected) {
		t.Fatalf("a detection pass over every row paired the unpaired transfer %s again", rejected)
	}

	// The bank is linked again (new account and transaction ids for the
	// same data, a day later): the re-issued rows keep their stored ids,
	// so every pair whose two rows were matched stays, and the unpaired
	// one is not paired again.
	pairs := e.transferPairs()
	if err := e.sim.Advance(1); err != nil {
		t.Fatal(err)
	}
	sealed, err := e.box.Seal(allsim.Credentials("plaid", "rejected-transfer"+simkit.RelinkSeparator+"1"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.st.ReauthConnection(ctx, c.ID, sealed, ""); err != nil {
		t.Fatal(err)
	}
	e.sync(c)
	after := e.transferPairs()
	if slices.Contains(after, rejected) {
		t.Fatalf("the re-link paired the unpaired transfer %s again", rejected)
	}
	kept := 0
	for _, p := range pairs {
		out, in, _ := strings.Cut(p, ">")
		switch {
		case slices.Contains(after, p):
			kept++
		case e.live(out) && e.live(in):
			t.Fatalf("transfer %s lost across the re-link though both its rows kept their ids", p)
		}
	}
	if kept < len(pairs)*9/10 {
		t.Fatalf("only %d of %d transfers kept across the re-link", kept, len(pairs))
	}
	t.Logf("rejected transfer: not paired again over ten syncs, a detection pass and a re-link; %d of %d other transfers kept across the re-link (the rest lost a row matched to nothing)",
		kept, len(pairs))
}

// live reports whether the transaction id (a string) is stored and not
// deleted.
func (e *benchEnv) live(id string) bool {
	e.tb.Helper()
	var n int
	if err := e.pool.QueryRow(context.Background(), `SELECT count(*) FROM transactions WHERE id = $1 AND status <> 'deleted'`, id).Scan(&n); err != nil {
		e.tb.Fatal(err)
	}
	return n == 1
}

// BenchmarkSyncFirstPlaidTransfers measures what transfer detection costs
// a first sync: first syncs of the same Plaid history with detection on
// and off, alternating (on, off, then off, on, ...), each in a database of
// its own, vacuumed and checkpointed after it (untimed). Off is the
// Syncer's benchmark knob; detection has no index of its own (its reads
// use the listings' indexes), so the difference is all that detection
// costs. It reports the median of each and their ratio; FINSYNC_BENCH_SYNC_ROUNDS
// sets the rounds (default 2).
func BenchmarkSyncFirstPlaidTransfers(b *testing.B) {
	size := benchSize(b)
	rounds := syncRounds(b)
	times := map[bool][]time.Duration{}
	for range b.N {
		for r := range rounds {
			for j := range 2 {
				skip := (r+j)%2 == 1
				d, n, pairs := firstSyncOnce(b, size, skip)
				times[skip] = append(times[skip], d)
				b.Logf("round %d, detection %s: %v, %d rows, %.0f tx/s, %d transfers", r+1, onOff(!skip), d, n, float64(n)/d.Seconds(), pairs)
			}
		}
	}
	on, off := median(times[false]), median(times[true])
	b.ReportMetric(on.Seconds(), "s-median-detection-on")
	b.ReportMetric(off.Seconds(), "s-median-detection-off")
	b.ReportMetric(100*(on.Seconds()/off.Seconds()-1), "%-more-with-detection")
}

// firstSyncOnce runs one first sync of size rows in a fresh database and
// returns its duration, the rows received and the transfers stored.
func firstSyncOnce(b *testing.B, size int, skip bool) (time.Duration, int64, int) {
	b.Helper()
	e := newBenchEnv(b)
	e.syncer.SkipTransfers = skip
	c := e.connect("plaid", fmt.Sprintf("first-%v", skip), size, 365)
	b.StartTimer()
	d, n := e.sync(c)
	b.StopTimer()
	e.tracer.report(b)
	var pairs int
	if err := e.pool.QueryRow(context.Background(), `SELECT count(*) FROM transfers`).Scan(&pairs); err != nil {
		b.Fatal(err)
	}
	if skip != (pairs == 0) {
		b.Fatalf("detection %s stored %d transfers", onOff(!skip), pairs)
	}
	// Untimed: vacuum and checkpoint now, so that neither falls on the
	// next sync (autovacuum would take this database's million new rows
	// in the middle of it).
	e.settle()
	return d, n, pairs
}

// onOff names a switch's state.
func onOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}

// median is the middle of xs (the mean of the two middle ones).
func median[T time.Duration | float64](xs []T) T {
	s := slices.Clone(xs)
	slices.Sort(s)
	return (s[(len(s)-1)/2] + s[len(s)/2]) / 2
}
