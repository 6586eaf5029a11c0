package worker

import (
	"context"
	"time"

	"github.com/finsync/finsync/providers"
)

// pacedBatch is how much of the write budget one batch may take when a
// write rate is set: small batches spread a paced sync's writes evenly.
const pacedBatch = 200 * time.Millisecond

// maxBatchPages is the most pages one batch may hold: maxBatchPages, or,
// under a write rate, the pages that hold about pacedBatch of it (at least
// one), judged by the size of the pages just stored.
func (r *syncRun) maxBatchPages(stored []providers.TransactionPage) int {
	if r.WriteRate <= 0 {
		return maxBatchPages
	}
	perPage := max(1, batchRows(stored)/len(stored))
	return min(maxBatchPages, max(1, int(r.WriteRate*pacedBatch.Seconds())/perPage))
}

// pacedGrace is how long past its slice a paced sync may wait for the
// write budget. The batch is then written anyway: when more syncs share
// the budget than it can serve within a slice, each still makes progress
// (and the rate is exceeded) rather than none, and a slice stays within
// its job's timeout.
const pacedGrace = 10 * time.Second

// pace reserves the batch's rows of the shared write budget and waits
// until they may be written, or at most pacedGrace past the slice. It
// reports false, writing nothing, when the worker begins to stop: the
// sync then continues from its stored cursor.
func (r *syncRun) pace(ctx context.Context, batch []providers.TransactionPage) (bool, error) {
	if r.WriteRate <= 0 {
		return true, nil
	}
	wait, err := r.Store.ReserveSyncRows(ctx, batchRows(batch), r.WriteRate, int(r.WriteRate))
	if err != nil || wait <= 0 {
		return err == nil, err
	}
	if !r.end.deadline.IsZero() {
		wait = min(wait, time.Until(r.end.deadline)+pacedGrace)
	}
	return r.end.sleep(ctx, wait)
}

// batchRows counts the transactions a batch's pages report.
func batchRows(batch []providers.TransactionPage) int {
	rows := 0
	for i := range batch {
		rows += len(batch[i].Upserts)
	}
	return rows
}
