package worker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/providers"
	"github.com/finsync/finsync/storage"
)

// syncRun is one sync of one connection.
type syncRun struct {
	*Syncer
	conn     domain.BankConnection
	pc       providers.Connection
	p        providers.Provider
	today    domain.Date
	accounts map[string]uuid.UUID
	// dataset names what was being fetched when a failure happened.
	dataset       string
	nextAllowedAt time.Time
	// session stores what the run fetched.
	session *storage.SyncSession
	// end is when the sync stops after a committed batch (errSliceEnded).
	end sliceEnd
	// stored counts the transaction rows this run stored (starting at
	// analyzeEvery when the connection had rows before), unanalyzed those
	// stored since it last refreshed the planner's statistics.
	stored, unanalyzed int
	// stats refreshes the statistics beside the writer.
	stats statsRefresher
	// tally counts the pages and rows this run's committed batches stored.
	tally syncTally
	// firstSync is set when the run began as its connection's first sync:
	// every account's balances are derived at its end.
	firstSync bool
	// balanceSince is, by account, the earliest date of a posted
	// transaction this run stored (noteBalanceChange).
	balanceSince map[uuid.UUID]domain.Date
}

func (r *syncRun) all(ctx context.Context, cursor string) (storage.SyncOutcome, error) {
	var o storage.SyncOutcome
	r.dataset = "accounts"
	set, err := r.p.Accounts(ctx, r.pc)
	if err != nil {
		return o, err
	}
	o.HasInvestments = set.HasInvestments
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
	ids, err := r.session.ApplyAccounts(ctx, set.Institution.Name, set.Accounts, r.today)
	if err != nil {
		return err
	}
	r.accounts = ids
	return nil
}

// fetched is one page from the prefetcher, or the error that ended it.
type fetched struct {
	page providers.TransactionPage
	err  error
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
		if pending, err = r.Store.PendingProviderIDs(ctx, r.conn.ID); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	r.stats.analyze = r.Store.QuickAnalyzeTransactions
	defer r.stats.wait() //nolint:errcheck // only an early return skips the final wait, with its own error
	pages := make(chan fetched, prefetchPages)
	go r.prefetch(ctx, providers.TransactionRequest{Cursor: cursor, PendingIDs: pending, Today: r.today}, pages)
	limit := 1
	for {
		batch, more, err := nextBatch(pages, limit)
		if len(batch) > 0 {
			if ok, err := r.pace(ctx, batch); err != nil || !ok {
				return cmp.Or(err, errSliceEnded)
			}
			stored, err := r.storeBatch(ctx, batch)
			if err != nil {
				return err
			}
			if err := r.refreshStats(ctx, stored.Added+stored.Modified, !more); err != nil {
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
			return ctx.Err()
		}
		limit = min(2*limit, r.maxBatchPages(batch))
	}
}

// When a sync refreshes the planner's statistics: once the rows stored
// since the last refresh reach half of all it has stored (at least
// analyzeFirst, at most analyzeEvery), and at its end when at least
// analyzeFirst are new. Refreshes come early while a user's rows double
// quickly, then every analyzeEvery rows.
const (
	analyzeFirst = 5_000
	analyzeEvery = 100_000
)

// refreshStats refreshes the planner's statistics of transactions when
// the rows just written (added or changed; a page of unchanged rows writes
// nothing) call for it: a user's row count can grow from
// nothing to millions within one sync, far faster than autovacuum
// notices, and a plan made for a few rows reads them all to list 50.
// Refreshes between batches run beside the writer (a due one is put off
// while the previous one runs) and sample a tenth as many rows
// (QuickAnalyzeTransactions: what a plan needs is the user's growing row
// count); the one after the last batch is a full refresh and is waited
// for, so that the sync ends with statistics that count all its rows.
func (r *syncRun) refreshStats(ctx context.Context, written int64, last bool) error {
	r.unanalyzed += int(written)
	r.stored += int(written)
	due := max(analyzeFirst, min(r.stored/2, analyzeEvery))
	if last {
		if err := r.stats.wait(); err != nil {
			return err
		}
		if r.unanalyzed < analyzeFirst {
			return nil
		}
		r.unanalyzed = 0
		return r.Store.AnalyzeTransactions(ctx)
	}
	if r.unanalyzed < due {
		return nil
	}
	began, err := r.stats.start(ctx)
	if began {
		r.unanalyzed = 0
	}
	return err
}

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
	rows := 0
	for i := range stored {
		rows += len(stored[i].Upserts)
	}
	perPage := max(1, rows/len(stored))
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
	rows := 0
	for i := range batch {
		rows += len(batch[i].Upserts)
	}
	wait, err := r.Store.ReserveSyncRows(ctx, rows, r.WriteRate, int(r.WriteRate))
	if err != nil || wait <= 0 {
		return err == nil, err
	}
	if !r.end.deadline.IsZero() {
		wait = min(wait, time.Until(r.end.deadline)+pacedGrace)
	}
	return r.end.sleep(ctx, wait)
}

// prefetch fetches pages from req on until the last one or an error.
func (r *syncRun) prefetch(ctx context.Context, req providers.TransactionRequest, pages chan<- fetched) {
	defer close(pages)
	for {
		page, err := r.p.Transactions(ctx, r.pc, req)
		select {
		case pages <- fetched{page, err}:
		case <-ctx.Done():
			return
		}
		if err != nil || page.Done {
			return
		}
		req = providers.TransactionRequest{Cursor: page.Next, Today: r.today}
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

// storeBatch converts the pages and hands them to the run's session, which
// stores them and the cursor after the last one in one database
// transaction. Once it commits, the batch's pages and row changes count
// toward the run's tally; it returns them.
func (r *syncRun) storeBatch(ctx context.Context, batch []providers.TransactionPage) (storage.RowChanges, error) {
	pages := make([]storage.SyncPage, len(batch))
	for i := range batch {
		var err error
		if pages[i], err = r.page(&batch[i]); err != nil {
			return storage.RowChanges{}, err
		}
		if batch[i].NextAllowedAt.After(r.nextAllowedAt) {
			r.nextAllowedAt = batch[i].NextAllowedAt
		}
	}
	res, err := r.session.ApplyBatch(ctx, pages)
	if err != nil {
		return storage.RowChanges{}, err
	}
	if res.Changes.Added+res.Changes.Modified > 0 {
		// A batch that wrote no row (a re-sync of unchanged data) moves no
		// balance; one that wrote some counts all its rows, to be safe.
		for i := range pages {
			for j := range pages[i].Upserts {
				r.noteBalanceChange(&pages[i].Upserts[j])
			}
		}
	}
	r.tally.Pages += int64(len(batch))
	r.tally.Changes = r.tally.Changes.Add(res.Changes)
	return res.Changes, nil
}

// page converts a provider page to what the session stores.
func (r *syncRun) page(p *providers.TransactionPage) (storage.SyncPage, error) {
	out := storage.SyncPage{Upserts: make([]domain.Transaction, 0, len(p.Upserts)), Removed: p.Removed,
		ReplacePendingFor: p.ReplacePendingFor, Next: p.Next, Last: p.Done}
	for i := range p.Upserts {
		t, err := r.convert(&p.Upserts[i])
		if err != nil {
			return storage.SyncPage{}, err
		}
		out.Upserts = append(out.Upserts, t)
		if c := p.Upserts[i].Category; c != nil && c.ProviderID != "" {
			if out.Categories == nil {
				out.Categories = make([]storage.ProviderCategory, len(p.Upserts))
			}
			out.Categories[i] = storage.ProviderCategory{ProviderID: c.ProviderID, Name: c.Name, Group: c.Group, Description: c.Description}
		}
	}
	return out, nil
}

// errUnknownAccount is a transaction whose account the provider did not list.
var errUnknownAccount = errors.New("transaction for an account the provider did not list")

func (r *syncRun) convert(t *providers.Transaction) (domain.Transaction, error) {
	acct, ok := r.accounts[t.ProviderAccountID]
	if !ok {
		return domain.Transaction{}, fmt.Errorf("%w: %s", errUnknownAccount, t.ProviderAccountID)
	}
	created := t.CreatedAt
	if created.IsZero() {
		created = r.now()
	}
	connID := r.conn.ID
	return domain.Transaction{
		UserID: r.conn.UserID, BankConnectionID: &connID, AccountID: acct, Provider: r.conn.Provider,
		ProviderID: t.ProviderID, Status: t.Status, Summary: t.Summary, Amount: t.Amount, Currency: t.Currency,
		AuthorizedDate: t.AuthorizedDate, PostedDate: t.PostedDate, MerchantName: t.MerchantName,
		Fees: t.Fees, FeeType: t.FeeType, NetAmount: t.NetAmount, SubAccount: t.SubAccount,
		PaymentChannel: t.PaymentChannel, CheckNumber: t.CheckNumber, OriginalDescription: t.OriginalDescription,
		Type: t.Type, CreatedAt: created, PostedAt: t.PostedAt, PendingProviderID: t.PendingProviderID,
	}, nil
}
