package storage

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/rules"
)

// SyncSessionOptions configure a SyncSession.
type SyncSessionOptions struct {
	// ReadOnlyCategories marks the provider categories a sync copies for the
	// user read-only when they are created (a business bank's).
	ReadOnlyCategories bool
	// RuleCache compiles the user's rules the session applies to each
	// batch's new and changed rows, each rule version once across batches
	// and syncs; nil compiles them afresh for every batch. Caveat: one cache
	// a process, shared with whatever else applies rules there.
	RuleCache *rules.Cache
	// JobID is the River job running the sync, whose metadata receives each
	// committed batch's progress (addSyncProgress); zero records none.
	JobID int64
	// Now is the clock that dates a row the provider gives no creation
	// time; nil means time.Now.
	Now func() time.Time
	// SkipTransfers turns transfer detection off, for benchmarks that
	// measure its cost; a sync that serves users never sets it.
	SkipTransfers bool
}

// SyncSession writes one sync run of one connection, as its provider
// reports it: its accounts, its transaction pages with their cursor, and
// its investments, each call in one database transaction of its own. It
// maps the provider's account ids to stored accounts (matching re-issued
// ones after a re-link), decides between copying rows straight in (a
// fresh connection) and digest-compared upserts, copies the provider
// categories the rows name, carries a user's category from a pending
// transaction to the posted one, applies the user's rules to changed rows,
// pairs transfers, records the datasets stored, keeps the planner's
// statistics fresh, and, on Close, derives the daily balances the run may
// have moved. Caveat: a session is not safe for concurrent use, belongs to
// one run (it remembers what the run wrote: categories, accounts, whether
// rows are still all new), and must be closed.
type SyncSession struct {
	store *Store
	conn  domain.BankConnection
	opts  SyncSessionOptions
	// sealed are the credentials the run reads with: a batch is stored
	// only while they are still the connection's (ErrCredentialsChanged).
	sealed []byte
	// fresh is set while every row the run writes is new: the connection
	// had no transactions when it began and no page has met a stored row
	// since. Pages are then copied in rather than upserted.
	fresh bool
	// accounts are the connection's account ids by provider account id,
	// once ApplyAccounts stored them.
	accounts map[string]uuid.UUID
	// knownCategories are the provider categories copied in this run, by
	// provider id.
	knownCategories map[string]knownCategory
	// splitCompareAt is the least number of digests a batch compares in
	// two halves at once (transactionWriter.lookUp): splitCompareAt, or
	// less in tests.
	splitCompareAt int
	// halves counts the look-ups split in two (transactionWriter.lookUp).
	halves int
	// relinking is set while the connection has relink candidates: its
	// pages' unknown provider ids are matched to them (sync_identity.go).
	relinking bool
	// written are the rows the current batch inserted or changed, which
	// transfer detection pairs at the batch's end; copied are those it
	// copied in fresh, as detection reads them.
	written []uuid.UUID
	copied  []detectRow
	// copiedBefore are the rows the batches of a fresh run copied in
	// (the current one's too, once its window match noted them), which
	// detection matches later batches against; windowFrom is the batch
	// size from which it does so (windowDetectRows).
	copiedBefore *sessionRows
	windowFrom   int
	// matching is the current batch's in-memory window match, started
	// while its rows are copied in (nil when there is none), which notes
	// the batch in copiedBefore as it starts; every batch waits for it
	// before it returns, and nothing else changes copiedBefore meanwhile.
	// noted is closed once a committed small batch's rows are in
	// copiedBefore (nil: nothing pending): they are noted while the next
	// batch is fetched and copied in, and everything that reads
	// copiedBefore waits for it first.
	matching *windowMatch
	noted    chan struct{}
	// copiedKept is set when the batch's window match notes its copied
	// rows in copiedBefore itself (noteCopied then has nothing to do).
	copiedKept bool
	// today is the date ApplyAccounts stored balances for, and the last day
	// Close derives; firstSync is set when the run began as its
	// connection's first sync (every account's balances are derived).
	today     domain.Date
	firstSync bool
	// balanceSince is, by account, the earliest date of a posted
	// transaction the run stored (noteBalanceChanges).
	balanceSince map[uuid.UUID]domain.Date
	// stats keeps the planner's statistics fresh as the run's rows grow;
	// statsErr is the first refresh that failed after its batch committed.
	stats    statsRefresh
	statsErr error
	// storedPending are the provider ids of the pending rows the run
	// stored, kept only when the connection had no transaction when the
	// run began (nil otherwise): no other row of the connection can then
	// be the pending row a posted one replaces, so carrying its transfers
	// looks up these alone (transactionWriter.pendingStored).
	storedPending map[string]struct{}
	// ruled, when set (tests), sees the rows each rules run is given.
	ruled func([]uuid.UUID)
}

// knownCategory is a provider category copied for the user in a run: its
// id and what was written.
type knownCategory struct {
	id uuid.UUID
	as domain.ReportedCategory
}

// FirstSync reports whether a sync of the target is its connection's first:
// no transaction is stored yet, or no sync has finished (a first sync that
// an earlier slice, or a killed worker, left half done is still first: the
// pages after its cursor only add rows).
func (t SyncTarget) FirstSync() bool {
	return !t.HasTransactions || t.Connection.LastSyncedAt == nil
}

// splitCompareAt is the least number of digests a batch compares in two
// halves on two connections: a batch of a few pages, whose look-ups take
// tens of milliseconds, enough to be worth a second backend.
const splitCompareAt = 4000

// borrowConn returns a connection of the pool when one is idle or the pool
// has room for a new one, or nil: it does not queue behind other users of
// a full pool (a sync that waited for a second connection while holding
// its first could wait on other syncs doing the same), and waits at most
// spareConnWait (a new connection, or another user taking the last room
// first). It acquires as any user does, so the pool's health checks and
// connection lifetimes apply.
func (s *Store) borrowConn(ctx context.Context) *pgxpool.Conn {
	if st := s.pool.Stat(); st.IdleConns() == 0 && st.TotalConns() >= st.MaxConns() {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, spareConnWait)
	defer cancel()
	c, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil
	}
	return c
}

// spareConnWait bounds the wait for a new connection in borrowConn.
const spareConnWait = 100 * time.Millisecond

// spareConn is Store.borrowConn for the session's writers, counting the
// connections lent.
func (ss *SyncSession) spareConn(ctx context.Context) *pgxpool.Conn {
	c := ss.store.borrowConn(ctx)
	if c != nil {
		ss.halves++
	}
	return c
}

// OpenSyncSession returns a session for one sync run of target's
// connection. It runs no statement. Caveat: the connection is the one
// target loaded; changes made elsewhere during the run are not seen.
func (s *Store) OpenSyncSession(target SyncTarget, opts SyncSessionOptions) *SyncSession {
	ss := &SyncSession{store: s, conn: target.Connection, opts: opts, sealed: target.SealedCredentials,
		fresh: target.FirstSync(), windowFrom: windowDetectRows, splitCompareAt: splitCompareAt,
		firstSync: target.FirstSync(), stats: newStatsRefresh(s, target.HasTransactions)}
	if ss.fresh && !target.HasTransactions {
		ss.copiedBefore = &sessionRows{}
	}
	if !target.HasTransactions {
		ss.storedPending = map[string]struct{}{}
	}
	return ss
}

// ApplyAccounts stores the connection's accounts (with today's balances,
// and institution as their institution name when not empty) and marks the
// accounts dataset stored, in one database transaction, and returns the
// account ids by provider account id, which later calls use too.
func (ss *SyncSession) ApplyAccounts(ctx context.Context, institution string, accounts []domain.ReportedAccount, today domain.Date) (map[string]uuid.UUID, error) {
	if institution != "" {
		ss.conn.InstitutionName = institution
	}
	ss.today = today
	var ids map[string]uuid.UUID
	err := ss.store.inTx(ctx, func(tx pgx.Tx) error {
		unrecorded, err := ss.applyAccountIdentities(ctx, tx, accounts)
		if err != nil {
			return err
		}
		if ids, err = upsertAccounts(ctx, tx, ss.conn, accounts, today); err != nil {
			return err
		}
		if err := recordPersistentIDs(ctx, tx, ss.conn, unrecorded); err != nil {
			return err
		}
		return markDataset(ctx, tx, ss.conn.ID, "accounts", true, "")
	})
	if err != nil {
		return nil, err
	}
	ss.accounts = ids
	return ids, nil
}

// SyncResult is what a committed batch wrote.
type SyncResult struct {
	Changes RowChanges
}

// ApplyBatch stores the provider's pages in order, then the cursor after
// the last one, in one database transaction: rows, removals, pending sets,
// categories, the user's rules on changed rows, transfers (changed rows
// paired with the user's other accounts: detectSynced), the transactions
// dataset mark and the job's progress. While the run is fresh, a batch
// that only adds rows is copied in with one COPY; should one of its rows
// be stored already, the copy is undone (a savepoint) and the batch is
// upserted page by page, as every later batch is. After the commit it
// notes the days whose balances moved and refreshes the planner's
// statistics when the rows stored call for it (in the background; fully,
// and waited for, after the sync's last page; a failed refresh is
// reported by Close). The result counts only once it returns without
// error; on error nothing of the batch is stored. A
// transaction of an account ApplyAccounts did not store is an error
// (ErrUnknownAccount), and stores nothing of the batch.
func (ss *SyncSession) ApplyBatch(ctx context.Context, reported []domain.ReportedPage) (SyncResult, error) {
	if len(reported) == 0 {
		return SyncResult{}, nil
	}
	batch, err := ss.pages(reported)
	if err != nil {
		return SyncResult{}, err
	}
	var changes RowChanges
	err = ss.store.inTx(ctx, func(tx pgx.Tx) error {
		ss.written, ss.copied, ss.copiedKept = ss.written[:0], nil, false // copied rows may be kept by copiedBefore
		w := newTransactionWriter(tx, ss.conn)
		w.pendingStored = ss.storedPending
		if !ss.relinking {
			// A re-link renames rows before it compares them: only the
			// transaction sees that.
			w.spare, w.splitAt = ss.spareConn, ss.splitCompareAt
		}
		defer func() { changes = w.Changes() }()
		stored, err := ss.storeFresh(ctx, tx, w, batch)
		if err != nil {
			return err
		}
		if !stored {
			if err := ss.storePages(ctx, tx, w, batch); err != nil {
				return err
			}
		}
		if err := ss.transfers(ctx, tx); err != nil {
			return err
		}
		if err := ss.recordProgress(ctx, tx, batch); err != nil {
			return err
		}
		last := batch[len(batch)-1]
		return saveCursor(ctx, tx, ss.conn.ID, last.Next, last.Last, ss.sealed)
	})
	ss.stopMatching()
	if err != nil {
		if ss.copiedKept {
			ss.forgetCopied() // it holds the rows of a batch not stored
		}
		return SyncResult{}, err
	}
	ss.noteCopied()
	if changes.Added+changes.Modified > 0 {
		ss.noteBalanceChanges(batch)
	}
	if err := ss.stats.afterBatch(ctx, changes.Added+changes.Modified, batch[len(batch)-1].Last); err != nil && ss.statsErr == nil {
		ss.statsErr = err // the batch is stored: Close reports it
	}
	return SyncResult{Changes: changes}, nil
}

// stopMatching waits for the batch's window match, if any, and drops it.
func (ss *SyncSession) stopMatching() {
	ss.matching.wait()
	ss.matching = nil
}

// noteCopied keeps a committed batch's copied rows for the detection of
// later batches, while the run is fresh, in a goroutine of its own
// (after the batch before it's); ss.noted is closed once they are kept.
func (ss *SyncSession) noteCopied() {
	switch {
	case !ss.fresh:
		ss.forgetCopied()
	case ss.copiedBefore != nil && len(ss.copied) > 0 && !ss.copiedKept:
		before, mem, rows, done := ss.noted, ss.copiedBefore, ss.copied, make(chan struct{})
		go func() {
			defer close(done)
			if before != nil {
				<-before
			}
			mem.add(rows)
		}()
		ss.noted = done
	}
}

// forgetCopied stops keeping copied rows for the rest of the run: a batch
// removes rows (some may be kept), is stored page by page (its rows are
// not kept), or fails after its window match kept its rows. Later
// batches' window searches read their days from the database instead.
func (ss *SyncSession) forgetCopied() {
	ss.waitNoted()
	ss.copiedBefore = nil
}

// waitNoted returns once the committed batches' rows are in copiedBefore.
func (ss *SyncSession) waitNoted() {
	if ss.noted != nil {
		<-ss.noted
		ss.noted = nil
	}
}

// recordProgress adds a batch to the progress of the job running the sync,
// in the batch's transaction; a sync run outside a job records nothing.
func (ss *SyncSession) recordProgress(ctx context.Context, tx pgx.Tx, batch []storedPage) error {
	if ss.opts.JobID == 0 {
		return nil
	}
	rows := 0
	for i := range batch {
		rows += len(batch[i].Upserts)
	}
	return addSyncProgress(ctx, tx, ss.opts.JobID, len(batch), rows)
}

// storeFresh stores a fresh run's whole batch with one COPY when its pages
// only add rows: no page replaces a pending set, and no id the batch
// removes is one it also adds (removals are applied after the copy, which
// is then what page-by-page storing would give), with its pending ids noted
// as storePage notes a page's. It reports whether it stored the batch. When the batch meets a stored row, nothing is written,
// the run stops being fresh, and the caller stores the batch page by page.
func (ss *SyncSession) storeFresh(ctx context.Context, tx pgx.Tx, w *transactionWriter, batch []storedPage) (bool, error) {
	// A re-link's rows are matched to the stored ones page by page
	// (storePage), even in a first sync that an earlier run with the old
	// credentials left unfinished: copied in, they would all be new.
	if !ss.fresh || ss.relinking || !onlyAdds(batch) {
		return false, nil
	}
	var rows []domain.Transaction
	var removed, pending []string
	for i := range batch {
		pageRows, pagePending, err := ss.rows(ctx, tx, &batch[i])
		if err != nil {
			return false, err
		}
		rows, removed = append(rows, pageRows...), append(removed, batch[i].Removed...)
		pending = append(pending, pagePending...)
	}
	if len(rows) >= ss.windowFrom {
		inDateOrder(rows)
	}
	ids, err := newOrderedIDs(len(rows))
	if err != nil {
		return false, err
	}
	if len(removed) > 0 && ss.copiedBefore != nil {
		// The rows kept may be among those it removes: only then are
		// they let go. A first sync's removals mostly name rows it never
		// stored (a transaction cancelled before the first sync). They
		// are looked up here, and marked deleted only after the copy: a
		// posted row of the batch may carry a removed pending row's pair.
		stored, err := anyStored(ctx, tx, ss.conn.ID, removed)
		if err != nil {
			return false, err
		}
		if stored {
			ss.forgetCopied()
		}
	}
	var copied []detectRow
	if !ss.opts.SkipTransfers {
		copied = freshDetectRows(rows, ids)
	}
	if len(copied) > 0 && len(copied) >= ss.windowFrom {
		// The match notes the rows for later batches as it goes.
		ss.copiedKept = ss.copiedBefore != nil
		ss.matching = startWindowMatch(copied, ss.copiedBefore, ss.copiedKept, ss.noted)
	}
	ok, err := ss.insertFresh(ctx, tx, w, rows, ids, removed)
	if err != nil || !ok {
		// The rows the match kept are let go by storePages, or on the
		// error by ApplyBatch.
		ss.stopMatching()
		return false, err
	}
	if err := notePendingSeen(ctx, tx, ss.conn.ID, pending); err != nil {
		return false, err
	}
	ss.copied = copied
	return true, ss.runRules(ctx, tx, ids)
}

// inDateOrder sorts a large fresh batch's rows by date, keeping the
// provider's order within a day: copied in that order, each day's rows
// reach the listings' indexes, keyed by date after the user or account,
// together, on the same few leaves. A day's rows keep
// their order, and so their ids' (given after the sort), which is how a
// listing orders them.
func inDateOrder(rows []domain.Transaction) {
	type key struct {
		day int64
		at  int
	}
	keys := make([]key, len(rows))
	for i := range rows {
		k := key{at: i, day: math.MinInt64}
		if d := rows[i].Day(); d != nil {
			k.day = daysSinceZero(*d)
		}
		keys[i] = k
	}
	slices.SortStableFunc(keys, func(a, b key) int { return cmp.Compare(a.day, b.day) })
	sorted := make([]domain.Transaction, len(rows))
	for i, k := range keys {
		sorted[i] = rows[k.at]
	}
	copy(rows, sorted)
}

// insertFresh copies rows none of which should be stored yet straight in,
// with ids, then marks the removed ones deleted. If a row is stored after
// all, nothing is written, ok is false and the run is no longer fresh.
func (ss *SyncSession) insertFresh(ctx context.Context, tx pgx.Tx, w *transactionWriter, rows []domain.Transaction, ids []uuid.UUID, removed []string) (ok bool, err error) {
	ok, err = w.InsertNew(ctx, rows, ids)
	if err != nil || !ok {
		ss.fresh = false
		return false, err
	}
	n, err := markTransactionsDeleted(ctx, tx, ss.conn.ID, removed)
	w.NoteRemoved(n)
	return true, err
}

// onlyAdds reports whether a batch's pages replace no pending set and
// remove no id they also add.
func onlyAdds(batch []storedPage) bool {
	added := map[string]bool{}
	for i := range batch {
		if len(batch[i].ReplacePendingFor) > 0 {
			return false
		}
		for j := range batch[i].Upserts {
			added[batch[i].Upserts[j].ProviderID] = true
		}
	}
	for i := range batch {
		for _, pid := range batch[i].Removed {
			if added[pid] {
				return false
			}
		}
	}
	return true
}

// rows copies the page's categories, sets its upserts' categories, and
// returns them and the provider ids of the pending ones.
func (ss *SyncSession) rows(ctx context.Context, tx pgx.Tx, page *storedPage) ([]domain.Transaction, []string, error) {
	if err := ss.categories(ctx, tx, page.Categories); err != nil {
		return nil, nil, err
	}
	var keepPending []string
	for i := range page.Upserts {
		t := &page.Upserts[i]
		t.CategoryID = nil
		if i < len(page.Categories) {
			if known, ok := ss.knownCategories[page.Categories[i].ProviderID]; ok {
				id := known.id
				t.CategoryID = &id
			}
		}
		if t.Status == domain.TxPending {
			keepPending = append(keepPending, t.ProviderID)
			if ss.storedPending != nil {
				ss.storedPending[t.ProviderID] = struct{}{}
			}
		}
	}
	return page.Upserts, keepPending, nil
}

// applyRules runs the user's rules on the rows a page inserted or changed,
// and notes them for transfer detection at the batch's end.
func (ss *SyncSession) applyRules(ctx context.Context, tx pgx.Tx, changed []uuid.UUID) error {
	ss.written = append(ss.written, changed...)
	return ss.runRules(ctx, tx, changed)
}

// runRules runs the user's rules on changed rows.
func (ss *SyncSession) runRules(ctx context.Context, tx pgx.Tx, changed []uuid.UUID) error {
	if len(changed) == 0 {
		return nil
	}
	if ss.ruled != nil {
		ss.ruled(changed)
	}
	if err := applyRulesTx(ctx, tx, ss.conn.UserID, changed, ss.opts.RuleCache); err != nil {
		return fmt.Errorf("apply rules: %w", err)
	}
	return nil
}

// transfers pairs the rows the batch wrote, inside the batch's
// transaction: those it copied in fresh as they were copied (no read
// back), the others as stored. (A removed row's transfer is dropped by
// the database as the row is marked deleted: migrations 00023, 00036.)
func (ss *SyncSession) transfers(ctx context.Context, tx pgx.Tx) error {
	if ss.opts.SkipTransfers || len(ss.written)+len(ss.copied) == 0 {
		return nil
	}
	ss.waitNoted()
	return detectSynced(ctx, tx, ss.conn, ss.copied, ss.written, ss.windowFrom, ss.copiedBefore, ss.matching)
}

// storePages writes the batch's pages in order. Once the run is no longer
// fresh (and unless it is relinking), the digests of every page are
// compared in one statement before the first page is written
// (transactionWriter.ComparePages): a batch of rows sent again unchanged
// then costs one look-up statement, not one per page. The comparison of a
// page holds as long as no page before it wrote anything; from the first
// that does, each later page compares its own again, as page by page.
func (ss *SyncSession) storePages(ctx context.Context, tx pgx.Tx, w *transactionWriter, batch []storedPage) error {
	ss.forgetCopied()
	if ss.fresh || ss.relinking || len(batch) < 2 {
		for i := range batch {
			if err := ss.storePage(ctx, tx, w, &batch[i], i == len(batch)-1); err != nil {
				return err
			}
		}
		return nil
	}
	rows, removed, keepPending := make([][]domain.Transaction, len(batch)), make([][]string, len(batch)), make([][]string, len(batch))
	for i := range batch {
		var err error
		if rows[i], keepPending[i], err = ss.rows(ctx, tx, &batch[i]); err != nil {
			return err
		}
		removed[i] = batch[i].Removed
	}
	pages, err := w.ComparePages(ctx, rows, removed)
	if err != nil {
		return err
	}
	for i := range batch {
		changed, err := w.WritePage(ctx, pages[i])
		if err != nil {
			return err
		}
		if err := ss.afterPage(ctx, tx, w, &batch[i], i == len(batch)-1, changed, keepPending[i]); err != nil {
			return err
		}
	}
	return nil
}

// storePage writes one page inside the batch's transaction (final: the
// batch's last page).
func (ss *SyncSession) storePage(ctx context.Context, tx pgx.Tx, w *transactionWriter, page *storedPage, final bool) error {
	rows, keepPending, err := ss.rows(ctx, tx, page)
	if err != nil {
		return err
	}
	if ss.relinking {
		if err := ss.matchTransactions(ctx, tx, rows); err != nil {
			return err
		}
	}
	changed, err := ss.write(ctx, tx, w, rows, page.Removed)
	if err != nil {
		return err
	}
	return ss.afterPage(ctx, tx, w, page, final, changed, keepPending)
}

// afterPage notes the pending rows a written page listed, replaces the
// pending sets it completes and runs the user's rules on the rows it
// changed (final: the page is its batch's last).
func (ss *SyncSession) afterPage(ctx context.Context, tx pgx.Tx, w *transactionWriter, page *storedPage, final bool, changed []uuid.UUID, keepPending []string) error {
	// The sync's last page, last in its batch, that replaces no pending
	// set needs no note: the batch's cursor forgets the noted rows
	// (saveCursor) and nothing reads them before.
	if !page.Last || !final || len(page.ReplacePendingFor) > 0 {
		if err := notePendingSeen(ctx, tx, ss.conn.ID, keepPending); err != nil {
			return err
		}
	}
	if len(page.ReplacePendingFor) > 0 {
		ids := make([]uuid.UUID, 0, len(page.ReplacePendingFor))
		for _, pa := range page.ReplacePendingFor {
			if id, ok := ss.accounts[pa]; ok {
				ids = append(ids, id)
			}
		}
		n, err := replacePending(ctx, tx, ss.conn.ID, ids)
		if err != nil {
			return err
		}
		w.NoteRemoved(n)
	}
	return ss.applyRules(ctx, tx, changed)
}

// write stores a page's transactions, marks its removed ones deleted, and
// returns the ids of rows inserted or changed: copied straight in while the
// run is fresh, upserted otherwise (and from the first page that meets a
// stored row on).
func (ss *SyncSession) write(ctx context.Context, tx pgx.Tx, w *transactionWriter, rows []domain.Transaction, removed []string) ([]uuid.UUID, error) {
	if ss.fresh {
		ids, err := newOrderedIDs(len(rows))
		if err != nil {
			return nil, err
		}
		ok, err := ss.insertFresh(ctx, tx, w, rows, ids, removed)
		if err != nil || ok {
			return ids, err
		}
	}
	return w.Upsert(ctx, rows, removed)
}

// categories copies the page's provider categories for the user into
// ss.knownCategories. Categories already copied earlier in this run with
// the same name, group and description are not written again.
func (ss *SyncSession) categories(ctx context.Context, tx pgx.Tx, named []domain.ReportedCategory) error {
	var cats []domain.ReportedCategory
	var fresh map[string]bool
	for _, pc := range named {
		if pc.ProviderID == "" || fresh[pc.ProviderID] {
			continue
		}
		if known, ok := ss.knownCategories[pc.ProviderID]; ok && known.as == pc {
			continue
		}
		if fresh == nil {
			fresh = map[string]bool{}
		}
		fresh[pc.ProviderID] = true
		cats = append(cats, pc)
	}
	if len(cats) == 0 {
		return nil
	}
	ids, err := upsertProviderCategories(ctx, tx, ss.conn.UserID, ss.conn.Provider, ss.opts.ReadOnlyCategories, cats)
	if err != nil {
		return err
	}
	if ss.knownCategories == nil {
		ss.knownCategories = map[string]knownCategory{}
	}
	for _, c := range cats {
		if id, ok := ids[c.ProviderID]; ok {
			ss.knownCategories[c.ProviderID] = knownCategory{id: id, as: c}
		}
	}
	return nil
}

// MarkDatasetFailed records that fetching one of a connection's datasets
// failed with errorClass, keeping when it was last stored. Caveat: it runs
// outside any sync batch, so it records the attempt even when the
// connection's failure itself cannot be recorded.
func (s *Store) MarkDatasetFailed(ctx context.Context, connectionID uuid.UUID, dataset, errorClass string) error {
	return markDataset(ctx, s.pool, connectionID, dataset, false, errorClass)
}
