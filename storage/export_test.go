package storage

import (
	"context"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/rules"
)

// PreviewRuleInGo is PreviewRule evaluated in Go on every transaction of
// the scope, without a prefilter or the database's count: the reference
// the tests compare PreviewRule with.
func PreviewRuleInGo(ctx context.Context, st *Store, sc Scope, def []byte, allowed []uuid.UUID, after Keyset, limit int) (Preview, error) {
	compiled, err := rules.CompileJSON(def, rules.Meta{})
	if err != nil {
		return Preview{}, err
	}
	set, rule, err := previewSet(ctx, st, sc, compiled, allowed, nil)
	if err != nil {
		return Preview{}, err
	}
	return previewOnce(ctx, st, sc, set, rule, after, limit, false)
}

// ActiveRulesSQL is the statement that loads a user's active rules, for
// the test that reads its plan.
const ActiveRulesSQL = activeRulesSQL

// MarkTimeout exposes markTimeout to the external tests.
var MarkTimeout = markTimeout

// OnlyAdds is onlyAdds of the provider's pages, for the external tests.
func OnlyAdds(batch []domain.ReportedPage) bool {
	pages := make([]storedPage, len(batch))
	for i, p := range batch {
		pages[i] = storedPage{Removed: p.Removed, ReplacePendingFor: p.ReplacePendingFor}
		for _, t := range p.Upserts {
			pages[i].Upserts = append(pages[i].Upserts, domain.Transaction{ProviderID: t.ProviderID})
		}
	}
	return onlyAdds(pages)
}

// ObserveRules has fn see the rows each of the session's rules runs is
// given.
func (ss *SyncSession) ObserveRules(fn func([]uuid.UUID)) { ss.ruled = fn }

// ApplyRulesTo applies the user's rules to the given transactions in one
// database transaction, as a sync batch does with the rows it wrote.
func ApplyRulesTo(ctx context.Context, st *Store, userID uuid.UUID, ids []uuid.UUID, cache *rules.Cache) error {
	return st.inTx(ctx, func(tx pgx.Tx) error { return applyRulesTx(ctx, tx, userID, ids, cache) })
}

// RuleCandidates exposes ruleCandidates on the store's reader, so that the
// tests check the database's prefilter against the rule engine.
func (s *Store) RuleCandidates(ctx context.Context, sc Scope, pf rules.Prefilter, columns string, each func(pgx.Rows) error) error {
	return ruleCandidates(ctx, s.reader(ctx), sc, pf, nil, columns, each)
}

// Pool exposes the store's primary pool to the external tests, for the
// SQL they check results with.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// InTx exposes inTx to the external tests.
func (s *Store) InTx(ctx context.Context, fn func(tx pgx.Tx) error) error { return s.inTx(ctx, fn) }

// Querier is querier, for the external tests.
type Querier = querier

// TransactionWriter is transactionWriter, for the external tests.
type TransactionWriter = transactionWriter

// The package functions the external tests drive inside their own
// transactions.
var (
	DeriveBalances          = deriveBalances
	DrainDone               = drainDone
	EnqueueAccountEvent     = enqueueAccountEvent
	MarkTransactionsDeleted = markTransactionsDeleted
	NewTransactionWriter    = newTransactionWriter
	UpsertAccounts          = upsertAccounts
)

// SetWindowFrom sets from how many copied rows a batch is matched against
// the rows its session keeps, so that tests of small scenarios exercise it.
func (ss *SyncSession) SetWindowFrom(n int) { ss.windowFrom = n }

// InsertNewRows is InsertNew with new ids, which it returns.
func (w *transactionWriter) InsertNewRows(ctx context.Context, txs []domain.Transaction) ([]uuid.UUID, bool, error) {
	ids, err := newOrderedIDs(len(txs))
	if err != nil {
		return nil, false, err
	}
	ok, err := w.InsertNew(ctx, txs, ids)
	if !ok {
		ids = nil
	}
	return ids, ok, err
}

// FreeCandidatePairs is freeCandidates in a transaction of its own: the
// pairs (row, candidate) whose rows are unpaired and that the user did not
// reject.
func FreeCandidatePairs(ctx context.Context, pool *pgxpool.Pool, userID uuid.UUID, pairs [][2]uuid.UUID) ([][2]uuid.UUID, error) {
	cands := make([]windowPair, len(pairs))
	for i, p := range pairs {
		cands[i] = windowPair{c: p[0], x: p[1]}
	}
	var out [][2]uuid.UUID
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		free, err := freeCandidates(ctx, tx, userID, cands, pairedCheck{}, true)
		for _, p := range free {
			out = append(out, [2]uuid.UUID{p.c, p.x})
		}
		return err
	})
	return out, err
}

// KeepsCopied reports whether the session still holds the rows its fresh
// batches copied in, for the window searches of later batches.
func (ss *SyncSession) KeepsCopied() bool {
	ss.waitNoted()
	return ss.copiedBefore != nil
}

// SplitComparesAt makes the session compare the digests of any batch of
// at least n rows in two halves on two connections (splitCompareAt).
func (ss *SyncSession) SplitComparesAt(n int) { ss.splitCompareAt = n }

// ComparedInHalves is how many of the session's digest look-ups were
// split over two connections.
func (ss *SyncSession) ComparedInHalves() int { return ss.halves }
