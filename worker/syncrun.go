package worker

import (
	"cmp"
	"context"
	"time"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/providers"
	"github.com/finsync/finsync/storage"
)

// syncRun is one sync of one connection.
type syncRun struct {
	*Syncer
	conn  domain.BankConnection
	pc    providers.Connection
	p     providers.Provider
	today domain.Date
	// dataset names what was being fetched when a failure happened.
	dataset       string
	nextAllowedAt time.Time
	// session stores what the run fetched.
	session *storage.SyncSession
	// end is when the sync stops after a committed batch (errSliceEnded).
	end sliceEnd
	// tally counts the pages and rows this run's committed batches stored.
	tally syncTally
}

func (r *syncRun) all(ctx context.Context, cursor string) (storage.SyncOutcome, error) {
	var o storage.SyncOutcome
	r.dataset = "accounts"
	set, err := r.p.Accounts(ctx, r.pc)
	if err != nil {
		return o, err
	}
	o.HasInvestments, o.LinkID = set.HasInvestments, set.LinkID
	if !set.ConsentExpiresAt.IsZero() {
		ends := set.ConsentExpiresAt
		o.ConsentExpiresAt = &ends
	}
	if set.NextAllowedAt.After(r.nextAllowedAt) {
		r.nextAllowedAt = set.NextAllowedAt
	}
	o.Institution, o.InstitutionID, o.LogoURL = set.Institution.Name, set.Institution.ID, set.Institution.LogoURL
	if err := r.storeAccounts(ctx, set); err != nil {
		return o, err
	}
	r.dataset = "transactions"
	if err := r.transactions(ctx, cursor); err != nil {
		return o, err
	}
	if set.HasInvestments {
		if err := r.investments(ctx); err != nil {
			return o, err
		}
	}
	r.dataset = ""
	return o, nil
}

func (r *syncRun) storeAccounts(ctx context.Context, set providers.AccountSet) error {
	_, err := r.session.ApplyAccounts(ctx, set.Institution.Name, set.Accounts, r.today)
	return err
}

// Pages fetched ahead of the writer, and the most pages one database
// transaction stores. A sync commits its first page alone, so that it shows
// at once, then doubles the pages per commit up to maxBatchPages: fewer
// commits, category look-ups and cursor writes per row, while every commit
// still holds whole pages and the cursor that follows the last of them.
const (
	prefetchPages = 16
	maxBatchPages = 16
)

// transactions walks the provider's pages from the cursor. Pages are
// fetched ahead while earlier ones are written.
func (r *syncRun) transactions(ctx context.Context, cursor string) error {
	var pending []string
	if r.p.Describe().RechecksPending {
		var err error
		if pending, err = r.Store.ListPendingProviderIDs(ctx, r.conn.ID); err != nil {
			return err
		}
	}
	// The fetcher stops when the walk returns; the session's writes use
	// ctx itself (a statistics refresh may outlive the walk until Close).
	fetchCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	pages := make(chan fetched, prefetchPages)
	go r.prefetch(fetchCtx, providers.TransactionRequest{Cursor: cursor, PendingIDs: pending, Today: r.today}, pages)
	limit := 1
	for {
		batch, more, err := nextBatch(pages, limit)
		if len(batch) > 0 {
			if ok, err := r.pace(ctx, batch); err != nil || !ok {
				return cmp.Or(err, errSliceEnded)
			}
			if err := r.storeBatch(ctx, batch); err != nil {
				return err
			}
		}
		if err != nil {
			return err
		}
		// A slice ends after a stored batch, unless that batch held the
		// last page (its continuation would only fetch the end again).
		if more && !batch[len(batch)-1].Done && r.end.over(time.Now()) {
			return errSliceEnded
		}
		if !more {
			// The fetcher also stops, without a page, when ctx ends.
			return fetchCtx.Err()
		}
		limit = min(2*limit, r.maxBatchPages(batch))
	}
}

// nextBatch waits for one page, then takes the pages already fetched, up to
// limit. It returns the pages, whether more pages may follow, and the error
// that ended fetching (after the pages before it).
func nextBatch(pages <-chan fetched, limit int) ([]providers.TransactionPage, bool, error) {
	f, ok := <-pages
	if !ok {
		return nil, false, nil
	}
	if f.err != nil {
		return nil, false, f.err
	}
	batch := []providers.TransactionPage{f.page}
	for len(batch) < limit {
		select {
		case f, ok := <-pages:
			if !ok {
				return batch, false, nil
			}
			if f.err != nil {
				return batch, false, f.err
			}
			batch = append(batch, f.page)
		default:
			return batch, true, nil
		}
	}
	return batch, true, nil
}

// storeBatch hands the pages to the run's session, which stores them and
// the cursor after the last one in one database transaction. Once it
// commits, the batch's pages and row changes count toward the run's tally.
func (r *syncRun) storeBatch(ctx context.Context, batch []providers.TransactionPage) error {
	for i := range batch {
		if batch[i].NextAllowedAt.After(r.nextAllowedAt) {
			r.nextAllowedAt = batch[i].NextAllowedAt
		}
	}
	res, err := r.session.ApplyBatch(ctx, batch)
	if err != nil {
		return err
	}
	r.tally.Pages += int64(len(batch))
	r.tally.Changes = r.tally.Changes.Add(res.Changes)
	return nil
}
