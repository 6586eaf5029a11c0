package storage

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/finsync/finsync/domain"
)

// A sync writes a page of transactions in one of two ways:
//
//   - transactionWriter.Upsert first asks which rows' digests (sync_hash,
//     carried in the unique index) differ from the stored ones; only those
//     rows are copied into a temporary staging table with binary COPY and
//     merged into transactions with one INSERT … ON CONFLICT that compares
//     every provider column. Rows the provider sends again unchanged cost
//     one index look-up and are never sent whole.
//   - transactionWriter.InsertNew copies the page straight into
//     transactions, for a connection's first sync, when no row can exist
//     yet. It is the fastest path; should a row exist after all, it undoes
//     itself and reports so, and the caller upserts instead.

// ErrAccountGone is returned when transactions are written for an account
// that has been deleted.
var ErrAccountGone = errors.New("account no longer exists")

// syncColumns are the transaction columns a sync writes, in the order
// encodeSyncRow writes them.
func syncColumns() []string {
	return []string{"id", "user_id", "bank_connection_id", "provider", "source", "account_id", "provider_id",
		"status", "summary", "amount", "currency", "authorized_date", "posted_date", "merchant_name",
		"provider_merchant_name", "category_id", "provider_category_id", "category_source", "fees", "fee_type",
		"net_amount", "sub_account", "payment_channel", "check_number", "original_description", "type",
		"pending_provider_id", "created_at", "posted_at", "sync_hash"}
}

// transactionWriter writes a connection's synced transactions inside one
// database transaction (a batch of pages).
type transactionWriter struct {
	tx   pgx.Tx
	conn domain.BankConnection
	// staged counts the pages staged in this transaction (the session's
	// staging table exists once it is non-zero); each page's rows carry
	// their page number, so no page needs deleting before the next.
	staged int32
	// locked are the accounts locked against deletion in this transaction.
	locked map[uuid.UUID]bool
	// userCategories records, once looked up, whether any transaction of
	// the connection has a user's category: without one there is nothing
	// to carry from a pending transaction to the posted one.
	userCategories *bool
	// pendingStored, when not nil, holds every provider id under which
	// the connection has a pending row stored (a run that began on a
	// connection with none keeps them: SyncSession.storedPending); only
	// posted rows naming one of them can carry a transfer. Nil: unknown.
	pendingStored map[string]struct{}
	// changes counts the rows this writer added, modified and removed.
	changes RowChanges
	// writes counts the statements that wrote to transactions in this
	// transaction, so that a comparison made before knows whether it
	// still holds (pageWrite.compared).
	writes int
	// spare, when set, lends an idle connection of the pool (nil when
	// there is none) to compare the second half of a large batch's
	// digests at the same time as the first (compare); splitAt is the
	// least number of digests split so.
	spare   func(context.Context) *pgxpool.Conn
	splitAt int
}

// RowChanges counts a sync's effect on stored transactions: rows inserted,
// rows whose stored values changed, and rows marked deleted. Rows the
// provider sent again unchanged count nowhere.
type RowChanges struct {
	Added, Modified, Removed int64
}

// Add returns the sum of c and o.
func (c RowChanges) Add(o RowChanges) RowChanges {
	return RowChanges{Added: c.Added + o.Added, Modified: c.Modified + o.Modified, Removed: c.Removed + o.Removed}
}

// Changes returns what the writer's calls wrote so far. Caveat: the counts
// are of statements run in the caller's transaction; they hold only once it
// commits.
func (w *transactionWriter) Changes() RowChanges { return w.changes }

// NoteRemoved adds n rows marked deleted outside the writer's own calls
// (markTransactionsDeleted, replacePending) to Changes.
func (w *transactionWriter) NoteRemoved(n int64) { w.noteRemoved(n) }

// noteRemoved counts n rows marked deleted, and the write when n > 0.
func (w *transactionWriter) noteRemoved(n int64) {
	w.changes.Removed += n
	if n > 0 {
		w.writes++
	}
}

// newTransactionWriter returns a writer for conn's transactions in tx.
func newTransactionWriter(tx pgx.Tx, conn domain.BankConnection) *transactionWriter {
	return &transactionWriter{tx: tx, conn: conn, locked: map[uuid.UUID]bool{}}
}

// Upsert stores new and changed transactions, then marks the removed
// provider ids deleted (a page's upserts and removals), and returns the ids
// of rows inserted or actually changed (unchanged rows are skipped). Each
// transaction's CategoryID is the provider's category; a category chosen by
// the user or a rule is kept, and a user's choice on a pending transaction
// carries over to the posted one that replaces it. When txs names a
// provider id twice, the last one wins.
func (w *transactionWriter) Upsert(ctx context.Context, txs []domain.Transaction, removed []string) ([]uuid.UUID, error) {
	pages, err := w.ComparePages(ctx, [][]domain.Transaction{txs}, [][]string{removed})
	if err != nil {
		return nil, err
	}
	return w.WritePage(ctx, pages[0])
}

// pageWrite is one page's upserts and removals as Upsert writes them: the
// last row of each provider id with its digest, the removals looked up with
// the digests, and those of rows the page also upserts, which must wait for
// the upsert. Once compared, it holds the rows whose digest differs from
// the stored one and the stored, not yet deleted rows among the removals,
// as of the writer's count of writes then.
type pageWrite struct {
	txs                   []domain.Transaction
	hashes                [][]byte
	removed, removedLater []string

	compared bool
	at       int // the writer's writes when compared
	merge    []int
	gone     []uuid.UUID
}

// ComparePages prepares the pages' writes (pages[i] upserting txs[i] and
// removing removed[i]) and compares all their digests in one statement:
// one round trip for a batch whose rows are sent again unchanged. Each
// comparison holds for WritePage as long as nothing is written before it;
// WritePage compares again otherwise. It locks the rows' accounts
// (lockAccounts) and returns nil for a page with nothing to write.
func (w *transactionWriter) ComparePages(ctx context.Context, txs [][]domain.Transaction, removed [][]string) ([]*pageWrite, error) {
	pages := make([]*pageWrite, len(txs))
	var todo []*pageWrite
	for i := range txs {
		p := &pageWrite{txs: lastOfEachProviderID(txs[i])}
		if len(p.txs) == 0 && len(removed[i]) == 0 {
			continue
		}
		if err := w.lockAccounts(ctx, p.txs); err != nil {
			return nil, err
		}
		p.hashes = syncHashes(p.txs)
		p.removed, p.removedLater = splitRemovals(p.txs, removed[i])
		pages[i] = p
		todo = append(todo, p)
	}
	if err := w.compare(ctx, todo); err != nil {
		return nil, err
	}
	return pages, nil
}

// WritePage writes a page ComparePages prepared (nil writes nothing), as
// Upsert describes, comparing its digests again when something was
// written since they were.
func (w *transactionWriter) WritePage(ctx context.Context, p *pageWrite) ([]uuid.UUID, error) {
	if p == nil {
		return nil, nil
	}
	if !p.compared || p.at != w.writes {
		if err := w.compare(ctx, []*pageWrite{p}); err != nil {
			return nil, err
		}
	}
	txs, hashes := p.txs, p.hashes
	if len(p.merge) < len(p.txs) {
		txs, hashes = make([]domain.Transaction, len(p.merge)), make([][]byte, len(p.merge))
		for k, i := range p.merge {
			txs[k], hashes[k] = p.txs[i], p.hashes[i]
		}
	}
	changed, err := w.merge(ctx, txs, hashes)
	if err != nil {
		return nil, err
	}
	if len(p.gone) > 0 {
		tag, err := w.tx.Exec(ctx, `UPDATE transactions SET status = 'deleted', updated_at = now()
			WHERE id = ANY($1) AND status <> 'deleted'`, p.gone)
		if err != nil {
			return nil, fmt.Errorf("mark removed transactions deleted: %w", err)
		}
		w.noteRemoved(tag.RowsAffected())
	}
	n, err := markTransactionsDeleted(ctx, w.tx, w.conn.ID, p.removedLater)
	if err != nil {
		return nil, err
	}
	w.noteRemoved(n)
	return changed, nil
}

// splitRemovals returns the removed ids the page does not upsert, and
// those it does.
func splitRemovals(txs []domain.Transaction, removed []string) (others, upserted []string) {
	if len(removed) == 0 {
		return nil, nil
	}
	pids := make(map[string]bool, len(txs))
	for i := range txs {
		pids[txs[i].ProviderID] = true
	}
	for _, pid := range removed {
		if pids[pid] {
			upserted = append(upserted, pid)
		} else {
			others = append(others, pid)
		}
	}
	return others, upserted
}

// merge stages the rows unmatched found and merges them into transactions.
func (w *transactionWriter) merge(ctx context.Context, txs []domain.Transaction, hashes [][]byte) ([]uuid.UUID, error) {
	if len(txs) == 0 {
		return nil, nil
	}
	if w.staged == 0 {
		if _, err := w.tx.Exec(ctx, createStageSQL()); err != nil {
			return nil, fmt.Errorf("upsert transactions: staging table: %w", err)
		}
	}
	w.staged++
	w.writes++
	ids, err := newOrderedIDs(len(txs))
	if err != nil {
		return nil, err
	}
	if err := w.copy(ctx, w.tx, "transactions_stage", txs, ids, hashes, w.staged); err != nil {
		return nil, fmt.Errorf("upsert transactions: stage: %w", err)
	}
	rows, err := w.tx.Query(ctx, mergeStageSQL(), w.staged)
	if err != nil {
		return nil, fmt.Errorf("upsert transactions: %w", err)
	}
	var changed, carryIDs []uuid.UUID
	var carryPending []string
	var id uuid.UUID
	var pending *string
	var inserted bool
	_, err = pgx.ForEachRow(rows, []any{&id, &pending, &inserted}, func() error {
		changed = append(changed, id)
		if inserted {
			w.changes.Added++
		} else {
			w.changes.Modified++
		}
		if pending != nil {
			carryIDs, carryPending = append(carryIDs, id), append(carryPending, *pending)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("upsert transactions: %w", err)
	}
	if len(changed) < len(txs) {
		// Some staged rows were equal to the stored ones but stored without
		// their digest (or with an outdated one): record it, so that the
		// next sync recognises them from the index.
		if _, err := w.tx.Exec(ctx, refreshHashSQL, w.staged); err != nil {
			return nil, fmt.Errorf("upsert transactions: record digests: %w", err)
		}
	}
	if err := w.carryUserCategories(ctx, carryIDs, carryPending); err != nil {
		return nil, err
	}
	if err := w.carryTransfers(ctx, carryIDs, carryPending); err != nil {
		return nil, err
	}
	return changed, nil
}

// compare finds, for each page, the transactions whose digest is not the
// one stored with the connection's row of that provider id (new rows,
// changed rows and rows stored without a digest: the rest are stored
// exactly as given and need no writing) and the ids of stored, not yet
// deleted rows among its removed provider ids, all pages in one statement.
// Each row is one look-up in the unique index, which carries the digest,
// so unchanged rows never leave the index and are never sent whole.
func (w *transactionWriter) compare(ctx context.Context, pages []*pageWrite) error {
	if len(pages) == 0 {
		return nil
	}
	var upserts, removals int
	for _, p := range pages {
		upserts, removals = upserts+len(p.txs), removals+len(p.removed)
	}
	pids, hashes, removed := make([]string, 0, upserts), make([][]byte, 0, upserts), make([]string, 0, removals)
	txStarts, removedStarts := make([]int, len(pages)), make([]int, len(pages))
	for k, p := range pages {
		txStarts[k], removedStarts[k] = len(pids), len(removed)
		for i := range p.txs {
			pids = append(pids, p.txs[i].ProviderID)
		}
		hashes = append(hashes, p.hashes...)
		removed = append(removed, p.removed...)
	}
	order := inKeyOrder(pids)
	sortedPIDs, sortedHashes := make([]string, len(order)), make([][]byte, len(order))
	for k, i := range order {
		sortedPIDs[k], sortedHashes[k] = pids[i], hashes[i]
	}
	differ, gone, err := w.lookUp(ctx, sortedPIDs, sortedHashes, removed)
	if err != nil {
		return err
	}
	for _, p := range pages {
		p.compared, p.at, p.merge, p.gone = true, w.writes, p.merge[:0], p.gone[:0]
	}
	for _, i := range differ {
		k, j := locate(txStarts, order[i])
		pages[k].merge = append(pages[k].merge, j)
	}
	for _, p := range pages {
		// In the page's order: new rows get ids in the order they are
		// merged, and a day's rows list in the provider's order.
		slices.Sort(p.merge)
	}
	for _, g := range gone {
		k, _ := locate(removedStarts, g.i)
		pages[k].gone = append(pages[k].gone, g.id)
	}
	return nil
}

// compareSQL returns, for each provider id of $2 whose stored digest is
// not its digest in $3, its position (from 1), and for each id of $4
// stored and not deleted, minus its position and the row's id.
const compareSQL = `
		SELECT u.i, NULL::uuid FROM unnest($2::text[], $3::bytea[]) WITH ORDINALITY AS u(pid, h, i)
		WHERE (SELECT t.sync_hash FROM transactions t WHERE t.bank_connection_id = $1 AND t.provider_id = u.pid)
			IS DISTINCT FROM u.h
		UNION ALL
		SELECT -d.i, d.id FROM (SELECT r.i, (SELECT t.id FROM transactions t
				WHERE t.bank_connection_id = $1 AND t.provider_id = r.pid AND t.status <> 'deleted') AS id
			FROM unnest($4::text[]) WITH ORDINALITY AS r(pid, i)) d
		WHERE d.id IS NOT NULL`

// storedRemoval is a removed provider id found stored: its index among
// the batch's removals and the row's id.
type storedRemoval struct {
	i  int
	id uuid.UUID
}

// lookUp runs compareSQL: the indexes of pids whose digests differ from
// the stored ones, and the removals stored. A batch of at least splitAt
// digests, when the pool lends a connection (spare), is looked up in two
// halves at once, the second on that connection: before the transaction
// writes to transactions (writes is 0, and a re-link, which renames rows
// first, lends none), a statement outside it sees what one inside would
// (both read the committed rows at read committed), and the two halves use
// two backends. Should the spare connection fail, the transaction looks
// its half up again.
func (w *transactionWriter) lookUp(ctx context.Context, pids []string, hashes [][]byte, removed []string) ([]int, []storedRemoval, error) {
	half := len(pids)
	var side *pgxpool.Conn
	if w.spare != nil && w.writes == 0 && w.splitAt > 0 && len(pids) >= w.splitAt {
		if side = w.spare(ctx); side != nil {
			half = len(pids) / 2
		}
	}
	// secondHalf looks up pids[half:] on q, its indexes counted from 0.
	secondHalf := func(q querier) ([]int, error) {
		differ, _, err := runCompare(ctx, q, w.conn.ID, pids[half:], hashes[half:], nil)
		for k := range differ {
			differ[k] += half
		}
		return differ, err
	}
	type result struct {
		differ []int
		err    error
	}
	var second chan result
	if side != nil {
		second = make(chan result, 1)
		go func() {
			defer side.Release()
			differ, err := secondHalf(side)
			second <- result{differ, err}
		}()
	}
	differ, gone, err := runCompare(ctx, w.tx, w.conn.ID, pids[:half], hashes[:half], removed)
	if second != nil {
		r := <-second
		if r.err != nil && err == nil && ctx.Err() == nil {
			// The spare connection failed (a dropped connection, say):
			// the transaction looks the second half up itself.
			r.differ, r.err = secondHalf(w.tx)
		}
		differ = append(differ, r.differ...)
		err = cmp.Or(err, r.err)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("compare stored transactions: %w", err)
	}
	return differ, gone, nil
}

// runCompare runs compareSQL on q and returns the indexes (from 0) of the
// ids whose digests differ and the stored removals.
func runCompare(ctx context.Context, q querier, connectionID uuid.UUID, pids []string, hashes [][]byte, removed []string) ([]int, []storedRemoval, error) {
	rows, err := q.Query(ctx, compareSQL, connectionID, pids, hashes, removed)
	if err != nil {
		return nil, nil, err
	}
	var differ []int
	var gone []storedRemoval
	var i int64
	var id pgtype.UUID
	_, err = pgx.ForEachRow(rows, []any{&i, &id}, func() error {
		if id.Valid {
			gone = append(gone, storedRemoval{int(-i - 1), id.Bytes})
		} else {
			differ = append(differ, int(i-1))
		}
		return nil
	})
	return differ, gone, err
}

// inKeyOrder returns the indexes of pids in the order of the bytes of
// the ids they index: the unique index's order when the database collates
// bytewise (C or C.UTF-8), so that a batch's look-ups walk its leaf pages
// in order rather than at random (about a fifth less of the statement's
// time on a whole-window re-sync). Under another collation the look-ups
// are as correct, only less local.
func inKeyOrder(pids []string) []int {
	order := make([]int, len(pids))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return strings.Compare(pids[a], pids[b]) })
	return order
}

// locate returns the page of item i of the pages' items laid end to end,
// starts[k] being the first of page k's, and the item's index in it.
func locate(starts []int, i int) (page, index int) {
	k := sort.SearchInts(starts, i+1) - 1
	// Pages without items share their start with the next page: the item
	// is in the last of them.
	return k, i - starts[k]
}

// InsertNew copies transactions none of which the connection has stored
// yet straight into the table, with ids (newOrderedIDs; one per
// transaction). If one of them is stored after all (or txs names a
// provider id twice), nothing is written and ok is false: the caller then
// upserts them.
func (w *transactionWriter) InsertNew(ctx context.Context, txs []domain.Transaction, ids []uuid.UUID) (ok bool, err error) {
	if len(txs) == 0 {
		return true, nil
	}
	if err := w.lockAccounts(ctx, txs); err != nil {
		return false, err
	}
	sp, err := w.tx.Begin(ctx)
	if err != nil {
		return false, fmt.Errorf("insert new transactions: savepoint: %w", err)
	}
	if err := w.copy(ctx, sp, "transactions", txs, ids, nil, 0); err != nil {
		if rbErr := sp.Rollback(ctx); rbErr != nil {
			return false, fmt.Errorf("insert new transactions: %w (roll back: %w)", err, rbErr)
		}
		if pgErr, isPg := errors.AsType[*pgconn.PgError](err); isPg && pgErr.Code == "23505" {
			return false, nil
		}
		return false, fmt.Errorf("insert new transactions: %w", err)
	}
	if err := sp.Commit(ctx); err != nil {
		return false, fmt.Errorf("insert new transactions: release savepoint: %w", err)
	}
	var carryIDs []uuid.UUID
	var carryPending []string
	for i := range txs {
		if p := txs[i].PendingProviderID; p != nil {
			carryIDs, carryPending = append(carryIDs, ids[i]), append(carryPending, *p)
		}
	}
	if err := w.carryUserCategories(ctx, carryIDs, carryPending); err != nil {
		return false, err
	}
	if err := w.carryTransfers(ctx, carryIDs, carryPending); err != nil {
		return false, err
	}
	w.changes.Added += int64(len(ids))
	w.writes++
	return true, nil
}

// lockAccounts takes a key-share lock on each account txs reference that
// is not locked yet in this transaction, and fails if one no longer
// exists. This is the foreign key's guarantee (no transaction outlives its
// account, whose deletion removes its transactions) at one statement per
// batch instead of one check per row.
func (w *transactionWriter) lockAccounts(ctx context.Context, txs []domain.Transaction) error {
	var want []uuid.UUID
	for i := range txs {
		id := txs[i].AccountID
		if !w.locked[id] && !slices.Contains(want, id) {
			want = append(want, id)
		}
	}
	if len(want) == 0 {
		return nil
	}
	rows, err := w.tx.Query(ctx, `SELECT id FROM accounts WHERE id = ANY($1) FOR KEY SHARE`, want)
	if err != nil {
		return fmt.Errorf("lock accounts: %w", err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil {
		return fmt.Errorf("lock accounts: %w", err)
	}
	for _, id := range got {
		w.locked[id] = true
	}
	for _, id := range want {
		if !w.locked[id] {
			return fmt.Errorf("%w: transactions for account %s", ErrAccountGone, id)
		}
	}
	return nil
}

// lastOfEachProviderID drops every transaction that a later one with the
// same provider id supersedes (a provider should never send one twice in a
// page, but one statement cannot write a row twice).
func lastOfEachProviderID(txs []domain.Transaction) []domain.Transaction {
	return oneOfEach(txs, func(t *domain.Transaction) string { return t.ProviderID }, true)
}

// oneOfEach keeps one of the items sharing a key, the last when last is
// set and the first otherwise, each at its own position: a multi-row
// statement cannot write a row twice, where one statement per item let the
// last (or first) win. items is returned as is when no key repeats.
func oneOfEach[T any, K comparable](items []T, key func(*T) K, last bool) []T {
	kept := make(map[K]int, len(items))
	dup := false
	for i := range items {
		k := key(&items[i])
		if _, ok := kept[k]; ok {
			dup = true
			if !last {
				continue
			}
		}
		kept[k] = i
	}
	if !dup {
		return items
	}
	out := make([]T, 0, len(kept))
	for i := range items {
		if kept[key(&items[i])] == i {
			out = append(out, items[i])
		}
	}
	return out
}

// createStageSQL returns the statement that makes the session's staging
// table the first time it is needed: temporary, so it costs no WAL, and
// emptied at every commit. It holds the sync columns and the page number.
func createStageSQL() string {
	return `CREATE TEMP TABLE IF NOT EXISTS transactions_stage ON COMMIT DELETE ROWS AS
SELECT ` + strings.Join(syncColumns(), ", ") + `, 0 AS page
FROM transactions WITH NO DATA`
}

// refreshHashSQL records the digest of the staged page $1's rows where the
// stored row has another (the rows the merge wrote have theirs already).
const refreshHashSQL = `
UPDATE transactions t SET sync_hash = r.sync_hash
FROM transactions_stage r
WHERE r.page = $1 AND t.bank_connection_id = r.bank_connection_id AND t.provider_id = r.provider_id
	AND t.sync_hash IS DISTINCT FROM r.sync_hash`

// mergeStageSQL returns the statement that merges the staged page $1 into
// transactions. A category a rule or the user set outranks the provider's
// and is kept (category_kept, migration 00016, holds the precedence).
func mergeStageSQL() string {
	cols := syncColumns()
	staged := make([]string, len(cols))
	for i, c := range cols {
		staged[i] = "r." + c
	}
	return `INSERT INTO transactions AS t (` + strings.Join(cols, ", ") + `)
SELECT ` + strings.Join(staged, ", ") + mergeStageTail
}

// mergeStageTail is mergeStageSQL after its column lists.
const mergeStageTail = `
FROM transactions_stage r
-- Unchanged rows are left out before the insert: read by index, they
-- take neither a row lock nor WAL, as ON CONFLICT DO UPDATE ... WHERE
-- would. The scalar subquery keeps the look-up on the unique index
-- whatever the statistics say; the WHERE below still guards concurrent
-- writers.
WHERE (SELECT (x.account_id, x.status, x.summary, x.amount, x.currency, x.authorized_date, x.posted_date,
		x.provider_merchant_name, x.provider_category_id, x.fees, x.fee_type, x.net_amount, x.sub_account,
		x.payment_channel, x.check_number, x.original_description, x.type, x.pending_provider_id, x.posted_at)
		IS NOT DISTINCT FROM
		(r.account_id, r.status, r.summary, r.amount, r.currency, r.authorized_date, r.posted_date,
		r.provider_merchant_name, r.provider_category_id, r.fees, r.fee_type, r.net_amount, r.sub_account,
		r.payment_channel, r.check_number, r.original_description, r.type, r.pending_provider_id, r.posted_at)
	FROM transactions x WHERE x.bank_connection_id = r.bank_connection_id AND x.provider_id = r.provider_id) IS NOT TRUE
	AND r.page = $1
ON CONFLICT (bank_connection_id, provider_id, user_id) DO UPDATE SET
	account_id = excluded.account_id, status = excluded.status, summary = excluded.summary,
	amount = excluded.amount, currency = excluded.currency, authorized_date = excluded.authorized_date,
	posted_date = excluded.posted_date,
	provider_merchant_name = excluded.provider_merchant_name,
	merchant_name = CASE WHEN t.merchant_rule_id IS NULL THEN excluded.merchant_name ELSE t.merchant_name END,
	provider_category_id = excluded.provider_category_id,
	category_id = CASE WHEN category_kept(t.category_source, 'provider') THEN t.category_id ELSE excluded.category_id END,
	category_source = CASE WHEN category_kept(t.category_source, 'provider') THEN t.category_source ELSE excluded.category_source END,
	fees = excluded.fees, fee_type = excluded.fee_type, net_amount = excluded.net_amount,
	sub_account = excluded.sub_account, payment_channel = excluded.payment_channel,
	check_number = excluded.check_number, original_description = excluded.original_description,
	type = excluded.type, pending_provider_id = excluded.pending_provider_id, posted_at = excluded.posted_at,
	sync_hash = excluded.sync_hash, updated_at = now()
WHERE (t.account_id, t.status, t.summary, t.amount, t.currency, t.authorized_date, t.posted_date,
	t.provider_merchant_name, t.provider_category_id, t.fees, t.fee_type, t.net_amount, t.sub_account,
	t.payment_channel, t.check_number, t.original_description, t.type, t.pending_provider_id, t.posted_at)
	IS DISTINCT FROM
	(excluded.account_id, excluded.status, excluded.summary, excluded.amount, excluded.currency,
	excluded.authorized_date, excluded.posted_date, excluded.provider_merchant_name, excluded.provider_category_id,
	excluded.fees, excluded.fee_type, excluded.net_amount, excluded.sub_account, excluded.payment_channel,
	excluded.check_number, excluded.original_description, excluded.type, excluded.pending_provider_id,
	excluded.posted_at)
-- A row inserted here has no deleting transaction (xmax 0); an updated
-- one carries this transaction's id there.
RETURNING t.id, t.pending_provider_id, t.xmax = 0`

// copy copies txs into table (transactions, or the staging table with
// page number page) with binary COPY, with ids (newOrderedIDs). A row
// that turns out to exist keeps its own id.
// Version 7 ids make the primary key index grow at its right edge instead
// of at random places, which makes bulk inserts markedly cheaper. hashes
// are the rows' digests (computed here when nil). Rows are encoded while
// PostgreSQL ingests the ones before them.
func (w *transactionWriter) copy(ctx context.Context, tx pgx.Tx, table string, txs []domain.Transaction, ids []uuid.UUID, hashes [][]byte, page int32) error {
	cols := syncColumns()
	if page != 0 {
		cols = append(cols, "page")
	}
	pr, pw := io.Pipe()
	encoded := make(chan struct{})
	go func() {
		defer close(encoded)
		pw.CloseWithError(w.encodeRows(pw, txs, ids, hashes, page, len(cols)))
	}()
	sql := "COPY " + table + " (" + strings.Join(cols, ", ") + ") FROM STDIN (FORMAT binary)"
	_, err := tx.Conn().PgConn().CopyFrom(ctx, pr, sql)
	// Should the COPY stop reading early, this ends the encoder's write.
	pr.CloseWithError(io.ErrClosedPipe)
	<-encoded
	return err
}

// newOrderedIDs returns n new row ids (version 7: in time order, so that
// a batch's inserts land together in the primary key).
func newOrderedIDs(n int) ([]uuid.UUID, error) {
	ids := make([]uuid.UUID, n)
	for i := range ids {
		id, err := uuid.NewV7()
		if err != nil {
			return nil, fmt.Errorf("new id: %w", err)
		}
		ids[i] = id
	}
	return ids, nil
}

// copyChunk is how many bytes of COPY data are encoded before they are
// handed to the connection.
const copyChunk = 64 << 10

// encodeRows writes txs as a binary COPY stream to wr, in chunks.
func (w *transactionWriter) encodeRows(wr io.Writer, txs []domain.Transaction, ids []uuid.UUID, hashes [][]byte, page int32, ncols int) error {
	buf := newCopyBuf(copyChunk + 4<<10)
	for i := range txs {
		buf.row(ncols)
		var hash []byte
		if hashes != nil {
			hash = hashes[i]
		} else {
			hash = syncHash(&txs[i])
		}
		if err := encodeSyncRow(buf, w.conn, &txs[i], ids[i], hash); err != nil {
			return fmt.Errorf("transaction %s: %w", txs[i].ProviderID, err)
		}
		if page != 0 {
			buf.int4(page)
		}
		if len(buf.b) >= copyChunk {
			if _, err := wr.Write(buf.b); err != nil {
				return err
			}
			buf.b = buf.b[:0]
		}
	}
	_, err := wr.Write(buf.bytes())
	return err
}

// encodeSyncRow writes t's columns in the order of syncColumns.
func encodeSyncRow(buf *copyBuf, conn domain.BankConnection, t *domain.Transaction, id uuid.UUID, hash []byte) error {
	buf.uuid(id)
	buf.uuid(conn.UserID)
	buf.uuid(conn.ID)
	buf.text(conn.Provider)
	buf.text(conn.Provider)
	buf.uuid(t.AccountID)
	buf.text(t.ProviderID)
	buf.text(t.Status)
	buf.text(t.Summary)
	if err := buf.money(t.Amount); err != nil {
		return err
	}
	buf.text(t.Currency)
	buf.date(t.AuthorizedDate)
	buf.date(t.PostedDate)
	buf.nullText(t.MerchantName)
	buf.nullText(t.MerchantName)
	buf.nullUUID((*[16]byte)(t.CategoryID))
	buf.nullUUID((*[16]byte)(t.CategoryID))
	if t.CategoryID != nil {
		buf.text(domain.CategoryFromProvider)
	} else {
		buf.null()
	}
	if err := buf.nullMoney(t.Fees); err != nil {
		return err
	}
	buf.nullText(t.FeeType)
	if err := buf.nullMoney(t.NetAmount); err != nil {
		return err
	}
	buf.nullText(t.SubAccount)
	buf.nullText(t.PaymentChannel)
	buf.nullText(t.CheckNumber)
	buf.nullText(t.OriginalDescription)
	buf.nullText(t.Type)
	buf.nullText(t.PendingProviderID)
	buf.timestamptz(t.CreatedAt)
	buf.nullTimestamptz(t.PostedAt)
	buf.bytea(hash)
	return nil
}

// carryUserCategories gives posted transactions that replace a pending one
// the category the user chose for the pending one. ids are changed rows
// that name a pending transaction, pendingIDs the provider ids they name;
// each pair is looked up by index, so the cost follows the page, not the
// connection's history. Whether the connection has any user-categorised
// transaction at all is looked up once per database transaction (on a
// small partial index), and the look-ups are skipped when it has none.
func (w *transactionWriter) carryUserCategories(ctx context.Context, ids []uuid.UUID, pendingIDs []string) error {
	if len(ids) == 0 {
		return nil
	}
	if w.userCategories == nil {
		var found bool
		err := w.tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM transactions
			WHERE bank_connection_id = $1 AND category_source = 'user')`, w.conn.ID).Scan(&found)
		if err != nil {
			return fmt.Errorf("look for user categories: %w", err)
		}
		w.userCategories = &found
	}
	if !*w.userCategories {
		return nil
	}
	// A scalar subquery per posted row keeps the lookup on an index
	// whatever the table's statistics say; a join lets a stale estimate scan
	// the whole connection per page.
	_, err := w.tx.Exec(ctx, `
		UPDATE transactions p SET category_id = c.cat, category_source = 'user', category_rule_id = NULL,
			provider_category_id = CASE WHEN category_kept(p.category_source, 'provider')
				THEN p.provider_category_id ELSE COALESCE(p.provider_category_id, p.category_id) END,
			updated_at = now()
		FROM (SELECT c.id, (SELECT o.category_id FROM transactions o
				WHERE o.bank_connection_id = $1 AND o.provider_id = c.pending_pid AND o.category_source = 'user') AS cat
			FROM unnest($2::uuid[], $3::text[]) AS c(id, pending_pid)) c
		WHERE p.id = c.id AND c.cat IS NOT NULL AND p.category_source IS DISTINCT FROM 'user'`,
		w.conn.ID, ids, pendingIDs)
	if err != nil {
		return fmt.Errorf("carry user categories to posted transactions: %w", err)
	}
	return nil
}

// AnalyzeTransactions refreshes the planner's statistics of the
// transactions table, skipping the refresh when another process holds the
// table's maintenance lock (autovacuum or another worker's refresh). A
// large first sync calls it at its end: until statistics know that a user
// now has many rows, the planner reads all of them to list the newest 50.
// Caveat: it samples the table (about 30,000 rows), which takes a fraction
// of a second and some I/O however large the table is.
func (s *Store) AnalyzeTransactions(ctx context.Context) error {
	return s.analyzeTransactions(ctx, 0)
}

// quickStatisticsTarget is the statistics target of QuickAnalyzeTransactions:
// a sample of 300 times it, 3,000 rows.
const quickStatisticsTarget = 10

// QuickAnalyzeTransactions is AnalyzeTransactions on a tenth of the
// sample: it refreshes the table's row count and a coarser picture of its
// columns (the users holding most rows among them), which is what a plan
// needs while a large sync is growing a user's rows, for a tenth of the
// reads and CPU. Caveat: its histograms and common values are coarse until
// the next full AnalyzeTransactions (or autovacuum's) replaces them.
func (s *Store) QuickAnalyzeTransactions(ctx context.Context) error {
	return s.analyzeTransactions(ctx, quickStatisticsTarget)
}

// analyzeTransactions runs ANALYZE (SKIP_LOCKED) on transactions with the
// statistics target given, set for its own transaction only; zero keeps
// the server's.
func (s *Store) analyzeTransactions(ctx context.Context, target int) error {
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		if target > 0 {
			if _, err := tx.Exec(ctx, fmt.Sprintf(`SET LOCAL default_statistics_target = %d`, target)); err != nil {
				return err
			}
		}
		_, err := tx.Exec(ctx, `ANALYZE (SKIP_LOCKED) transactions`)
		return err
	})
	if err != nil {
		return fmt.Errorf("analyze transactions: %w", err)
	}
	return nil
}
