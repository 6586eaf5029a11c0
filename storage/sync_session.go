package storage

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/rules"
)

// SyncRules runs a user's rules on the transactions a sync batch inserted
// or changed, inside the batch's database transaction. ApplyRulesIn is the
// one a worker uses. Caveat: it runs once per stored page (once per batch
// on a fresh copy), and tx is valid only during the call.
type SyncRules func(ctx context.Context, tx *Tx, userID uuid.UUID, transactionIDs []uuid.UUID) error

// ApplyRulesIn is applyRulesTx inside a *Tx, compiling the user's rules
// afresh on every call; ApplyRulesCached is the one a worker uses.
func ApplyRulesIn(ctx context.Context, tx *Tx, userID uuid.UUID, transactionIDs []uuid.UUID) error {
	return applyRulesTx(ctx, tx.tx, userID, transactionIDs, nil)
}

// ApplyRulesCached returns the SyncRules a worker uses: ApplyRulesIn with
// the user's stored rules compiled through cache, so that a rule is
// compiled once per version however many pages and syncs run it. Caveat:
// the cache is the caller's, one per process; it holds at most its size in
// compiled rules.
func ApplyRulesCached(cache *rules.Cache) SyncRules {
	return func(ctx context.Context, tx *Tx, userID uuid.UUID, transactionIDs []uuid.UUID) error {
		return applyRulesTx(ctx, tx.tx, userID, transactionIDs, cache)
	}
}

// SyncSessionOptions configure a SyncSession.
type SyncSessionOptions struct {
	// ReadOnlyCategories marks the provider categories a sync copies for the
	// user read-only when they are created (a business bank's).
	ReadOnlyCategories bool
	// Rules runs the user's rules on each stored page's new and changed
	// rows; nil runs none.
	Rules SyncRules
	// JobID is the River job running the sync, whose metadata receives each
	// committed batch's progress (addSyncProgress); zero records none.
	JobID int64
	// SkipTransfers turns transfer detection off, for benchmarks that
	// measure its cost; a sync that serves users never sets it.
	SkipTransfers bool
}

// SyncSession writes one sync run of one connection: its accounts, its
// transaction pages with their cursor, and its investments, each call in
// one database transaction of its own. It decides between copying rows
// straight in (a fresh connection) and digest-compared upserts, copies the
// provider categories the rows name, carries a user's category from a
// pending transaction to the posted one, applies the user's rules to
// changed rows and records the datasets stored. Caveat: a session is not
// safe for concurrent use, and belongs to one run (it remembers what the
// run wrote: categories, accounts, whether rows are still all new).
type SyncSession struct {
	store *Store
	conn  domain.BankConnection
	opts  SyncSessionOptions
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
	// relinking is set while the connection has relink candidates: its
	// pages' unknown provider ids are matched to them (sync_identity.go).
	relinking bool
	// written are the rows the current batch inserted or changed, which
	// transfer detection pairs at the batch's end; copied are those it
	// copied in fresh, as detection reads them.
	written []uuid.UUID
	copied  []detectRow
	// copiedBefore are the rows earlier batches of a fresh run copied in,
	// which detection matches later batches against; windowFrom is the
	// batch size from which it does so (windowDetectRows).
	copiedBefore *sessionRows
	windowFrom   int
}

// knownCategory is a provider category copied for the user in a run: its
// id and what was written.
type knownCategory struct {
	id uuid.UUID
	as ProviderCategory
}

// FirstSync reports whether a sync of the target is its connection's first:
// no transaction is stored yet, or no sync has finished (a first sync that
// an earlier slice, or a killed worker, left half done is still first: the
// pages after its cursor only add rows).
func (t SyncTarget) FirstSync() bool {
	return !t.HasTransactions || t.Connection.LastSyncedAt == nil
}

// OpenSyncSession returns a session for one sync run of target's
// connection. It runs no statement. Caveat: the connection is the one
// target loaded; changes made elsewhere during the run are not seen.
func (s *Store) OpenSyncSession(target SyncTarget, opts SyncSessionOptions) *SyncSession {
	ss := &SyncSession{store: s, conn: target.Connection, opts: opts, fresh: target.FirstSync(), windowFrom: windowDetectRows}
	if ss.fresh && !target.HasTransactions {
		ss.copiedBefore = &sessionRows{}
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

// SyncPage is one provider page of transactions as a sync stores it.
type SyncPage struct {
	// Upserts are the page's new and changed transactions, converted to
	// domain records; their CategoryID is set by the session from
	// Categories (the slice is written to).
	Upserts []domain.Transaction
	// Categories are the provider's categories of Upserts, by index; one
	// with an empty ProviderID (or past the end) is none.
	Categories []ProviderCategory
	// Removed are provider ids the provider deleted.
	Removed []string
	// ReplacePendingFor are provider account ids whose whole pending set
	// this page and the earlier pages of the same sync list: their stored
	// pending transactions not among those pages' pending rows are
	// removed. The pending rows of a sync's pages are kept (in the
	// database, so across batches and slices) until its Last page.
	ReplacePendingFor []string
	// Next is the cursor after the page.
	Next string
	// Last marks the sync's last page: after it, the pending rows its
	// pages listed are forgotten, and the next sync's pages start afresh.
	Last bool
}

// SyncResult is what a committed batch wrote.
type SyncResult struct {
	Changes RowChanges
}

// ApplyBatch stores pages in order, then the cursor after the last one, in
// one database transaction: rows, removals, pending sets, categories, the
// user's rules on changed rows, transfers (changed rows paired with the
// user's other accounts: detectSynced),
// the transactions dataset mark and the job's progress. While the run is fresh, a batch that only adds rows is
// copied in with one COPY; should one of its rows be stored already,
// the copy is undone (a savepoint) and the batch is upserted page by page,
// as every later batch is. The result counts only once it returns without
// error; on error nothing of the batch is stored.
func (ss *SyncSession) ApplyBatch(ctx context.Context, batch []SyncPage) (SyncResult, error) {
	if len(batch) == 0 {
		return SyncResult{}, nil
	}
	var changes RowChanges
	err := ss.store.inTx(ctx, func(tx pgx.Tx) error {
		ss.written, ss.copied = ss.written[:0], nil // copied rows may be kept by copiedBefore
		w := newTransactionWriter(tx, ss.conn)
		defer func() { changes = w.Changes() }()
		stored, err := ss.storeFresh(ctx, tx, w, batch)
		if err != nil {
			return err
		}
		if !stored {
			for i := range batch {
				if err := ss.storePage(ctx, tx, w, &batch[i]); err != nil {
					return err
				}
			}
		}
		if err := ss.transfers(ctx, tx); err != nil {
			return err
		}
		if err := markDataset(ctx, tx, ss.conn.ID, "transactions", true, ""); err != nil {
			return err
		}
		if err := ss.recordProgress(ctx, tx, batch); err != nil {
			return err
		}
		last := batch[len(batch)-1]
		return saveCursor(ctx, tx, ss.conn.ID, last.Next, last.Last)
	})
	if err != nil {
		return SyncResult{}, err
	}
	ss.noteCopied()
	return SyncResult{Changes: changes}, nil
}

// noteCopied keeps a committed batch's copied rows for the detection of
// later batches, while the run is fresh.
func (ss *SyncSession) noteCopied() {
	switch {
	case !ss.fresh:
		ss.copiedBefore = nil
	case ss.copiedBefore != nil && len(ss.copied) > 0:
		ss.copiedBefore.add(ss.copied)
	}
}

// recordProgress adds a batch to the progress of the job running the sync,
// in the batch's transaction; a sync run outside a job records nothing.
func (ss *SyncSession) recordProgress(ctx context.Context, tx pgx.Tx, batch []SyncPage) error {
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
func (ss *SyncSession) storeFresh(ctx context.Context, tx pgx.Tx, w *transactionWriter, batch []SyncPage) (bool, error) {
	if !ss.fresh || !onlyAdds(batch) {
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
	ids, ok, err := ss.insertFresh(ctx, tx, w, rows, removed)
	if err != nil || !ok {
		return false, err
	}
	if err := notePendingSeen(ctx, tx, ss.conn.ID, pending); err != nil {
		return false, err
	}
	ss.copied = freshDetectRows(rows, ids)
	return true, ss.runRules(ctx, tx, ids)
}

// insertFresh copies rows none of which should be stored yet straight in,
// then marks the removed ones deleted, and returns the new rows' ids. If a
// row is stored after all, nothing is written, ok is false and the run is
// no longer fresh.
func (ss *SyncSession) insertFresh(ctx context.Context, tx pgx.Tx, w *transactionWriter, rows []domain.Transaction, removed []string) (ids []uuid.UUID, ok bool, err error) {
	ids, ok, err = w.InsertNew(ctx, rows)
	if err != nil || !ok {
		ss.fresh = false
		return nil, false, err
	}
	n, err := markTransactionsDeleted(ctx, tx, ss.conn.ID, removed)
	w.NoteRemoved(n)
	return ids, true, err
}

// onlyAdds reports whether a batch's pages replace no pending set and
// remove no id they also add.
func onlyAdds(batch []SyncPage) bool {
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
func (ss *SyncSession) rows(ctx context.Context, tx pgx.Tx, page *SyncPage) ([]domain.Transaction, []string, error) {
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
	if ss.opts.Rules == nil || len(changed) == 0 {
		return nil
	}
	if err := ss.opts.Rules(ctx, &Tx{tx: tx}, ss.conn.UserID, changed); err != nil {
		return fmt.Errorf("apply rules: %w", err)
	}
	return nil
}

// transfers pairs the rows the batch wrote, inside the batch's
// transaction: those it copied in fresh as they were copied (no read
// back), the others as stored. (A removed row's transfer is dropped by
// the database as the row is marked deleted: migration 00023.)
func (ss *SyncSession) transfers(ctx context.Context, tx pgx.Tx) error {
	if ss.opts.SkipTransfers || len(ss.written)+len(ss.copied) == 0 {
		return nil
	}
	return detectSynced(ctx, tx, ss.conn, ss.copied, ss.written, ss.windowFrom, ss.copiedBefore)
}

// storePage writes one page inside the batch's transaction.
func (ss *SyncSession) storePage(ctx context.Context, tx pgx.Tx, w *transactionWriter, page *SyncPage) error {
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
	if err := notePendingSeen(ctx, tx, ss.conn.ID, keepPending); err != nil {
		return err
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
		ids, ok, err := ss.insertFresh(ctx, tx, w, rows, removed)
		if err != nil || ok {
			return ids, err
		}
	}
	return w.Upsert(ctx, rows, removed)
}

// categories copies the page's provider categories for the user into
// ss.knownCategories. Categories already copied earlier in this run with
// the same name, group and description are not written again.
func (ss *SyncSession) categories(ctx context.Context, tx pgx.Tx, named []ProviderCategory) error {
	var cats []ProviderCategory
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

// SyncedHolding is a position as a sync stores it: the provider's account
// and security ids, and the position (whose AccountID and SecurityID the
// session fills in).
type SyncedHolding struct {
	ProviderAccountID  string
	ProviderSecurityID string
	domain.Holding
}

// SyncedInvestmentTransaction is an investment event as a sync stores it:
// the provider's account and security ids (nil: none), and the event
// (whose AccountID and SecurityID the session fills in).
type SyncedInvestmentTransaction struct {
	ProviderAccountID  string
	ProviderSecurityID *string
	domain.InvestmentTransaction
}

// SyncInvestments is what a sync stores of a connection's investments.
type SyncInvestments struct {
	// Securities may name a provider security id twice; the first wins.
	Securities   []domain.ReportedSecurity
	Holdings     []SyncedHolding
	Transactions []SyncedInvestmentTransaction
}

// ApplyInvestments stores the securities, makes the connection's holdings
// exactly inv.Holdings, stores the investment transactions, and marks both
// datasets stored, in one database transaction. Holdings and events of an
// account ApplyAccounts did not store (or a holding of an unknown
// security) are skipped. Caveat: call ApplyAccounts first.
func (ss *SyncSession) ApplyInvestments(ctx context.Context, inv SyncInvestments) error {
	return ss.store.inTx(ctx, func(tx pgx.Tx) error {
		secs, err := upsertSecurities(ctx, tx, ss.conn.UserID, ss.conn.Provider, firstOfEachSecurity(inv.Securities))
		if err != nil {
			return err
		}
		holdings := make([]domain.Holding, 0, len(inv.Holdings))
		for _, x := range inv.Holdings {
			acct, ok1 := ss.accounts[x.ProviderAccountID]
			sec, ok2 := secs[x.ProviderSecurityID]
			if !ok1 || !ok2 {
				continue
			}
			h := x.Holding
			h.AccountID, h.SecurityID = acct, sec
			holdings = append(holdings, h)
		}
		if err := replaceHoldings(ctx, tx, ss.conn, holdings); err != nil {
			return err
		}
		if err := markDataset(ctx, tx, ss.conn.ID, "holdings", true, ""); err != nil {
			return err
		}
		events := make([]domain.InvestmentTransaction, 0, len(inv.Transactions))
		for _, x := range inv.Transactions {
			acct, ok := ss.accounts[x.ProviderAccountID]
			if !ok {
				continue
			}
			e := x.InvestmentTransaction
			e.AccountID, e.SecurityID = acct, nil
			if x.ProviderSecurityID != nil {
				if id, ok := secs[*x.ProviderSecurityID]; ok {
					e.SecurityID = &id
				}
			}
			events = append(events, e)
		}
		if err := upsertInvestmentTransactions(ctx, tx, ss.conn, events); err != nil {
			return err
		}
		return markDataset(ctx, tx, ss.conn.ID, "investment_transactions", true, "")
	})
}

// firstOfEachSecurity drops every security whose provider id an earlier
// one has.
func firstOfEachSecurity(in []domain.ReportedSecurity) []domain.ReportedSecurity {
	return oneOfEach(in, func(s *domain.ReportedSecurity) string { return s.ProviderSecurityID }, false)
}

// MarkDatasetFailed records that fetching one of a connection's datasets
// failed with errorClass, keeping when it was last stored. Caveat: it runs
// outside any sync batch, so it records the attempt even when the
// connection's failure itself cannot be recorded.
func (s *Store) MarkDatasetFailed(ctx context.Context, connectionID uuid.UUID, dataset, errorClass string) error {
	return markDataset(ctx, s.pool, connectionID, dataset, false, errorClass)
}
