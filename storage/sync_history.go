package storage

import (
	"context"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// SyncHistoryKept is how many finished syncs of one connection the history
// keeps: writing one more deletes the oldest beyond it.
const SyncHistoryKept = 100

// maxSyncErrorMessage bounds the error message a history row keeps, in
// bytes (cut at a character boundary).
const maxSyncErrorMessage = 2000

// SyncRecord is one finished sync of a connection, as its history keeps
// it: when it started and finished (over all the job attempts it took),
// the transaction pages and rows it stored, and how it ended. Outcome is
// the worker's: "ok", or the failure's class (unavailable, rate_limited,
// reauth_required, permanent, unknown); ErrorCode and ErrorMessage are the
// provider's (the message alone for a failure that is no provider's), and
// empty on success.
type SyncRecord struct {
	StartedAt    time.Time
	FinishedAt   time.Time
	Pages        int64
	Changes      RowChanges
	Outcome      string
	ErrorCode    string
	ErrorMessage string
}

// Duration is how long the sync took (zero if the clock went back).
func (r SyncRecord) Duration() time.Duration { return max(r.FinishedAt.Sub(r.StartedAt), 0) }

// Succeeded reports whether the sync ended well.
func (r SyncRecord) Succeeded() bool { return r.Outcome == SyncOutcomeOK }

// SyncOutcomeOK is the Outcome of a sync that succeeded.
const SyncOutcomeOK = "ok"

// RecordSync adds a finished sync to the connection's history, outside any
// other write: for a sync whose end changed nothing on the connection (a
// failure that is no provider's, retried by its job). A connection that no
// longer exists records nothing. The history keeps the newest
// SyncHistoryKept rows of the connection.
func (s *Store) RecordSync(ctx context.Context, connectionID uuid.UUID, r SyncRecord) error {
	return s.inTx(ctx, func(tx pgx.Tx) error { return recordSync(ctx, tx, connectionID, r) })
}

// recordSync inserts r for the connection in tx and trims its history to
// the newest SyncHistoryKept rows, through the index on (connection,
// started_at DESC, id DESC): the cut is the row SyncHistoryKept-1 places
// after the newest, the rows before it are deleted.
func recordSync(ctx context.Context, tx pgx.Tx, connectionID uuid.UUID, r SyncRecord) error {
	r = r.clean()
	// The trim runs in the same round trip; for a connection that is gone
	// both statements write nothing.
	var batch pgx.Batch
	batch.Queue(`
		INSERT INTO sync_history (user_id, bank_connection_id, started_at, finished_at, pages,
			rows_added, rows_modified, rows_removed, outcome, error_code, error_message)
		SELECT c.user_id, c.id, $2, $3, $4, $5, $6, $7, $8, NULLIF($9, ''), NULLIF($10, '')
		FROM bank_connections c WHERE c.id = $1`,
		connectionID, r.StartedAt, r.FinishedAt, r.Pages, r.Changes.Added, r.Changes.Modified, r.Changes.Removed,
		r.Outcome, r.ErrorCode, r.ErrorMessage)
	batch.Queue(`
		DELETE FROM sync_history h WHERE h.bank_connection_id = $1 AND (h.started_at, h.id) < (
			SELECT k.started_at, k.id FROM sync_history k WHERE k.bank_connection_id = $1
			ORDER BY k.started_at DESC, k.id DESC OFFSET $2 LIMIT 1)`, connectionID, SyncHistoryKept-1)
	if err := tx.SendBatch(ctx, &batch).Close(); err != nil {
		return fmt.Errorf("record sync of connection %s: %w", connectionID, err)
	}
	return nil
}

// clean makes r storable: an outcome (unknown when empty), no error on
// success, non-negative counts, a finish no earlier than the start, and
// the message cut to maxSyncErrorMessage bytes.
func (r SyncRecord) clean() SyncRecord {
	if r.Outcome == "" {
		r.Outcome = "unknown"
	}
	if r.Outcome == SyncOutcomeOK {
		r.ErrorCode, r.ErrorMessage = "", ""
	}
	r.Pages = max(r.Pages, 0)
	r.Changes = RowChanges{Added: max(r.Changes.Added, 0), Modified: max(r.Changes.Modified, 0), Removed: max(r.Changes.Removed, 0)}
	if r.FinishedAt.Before(r.StartedAt) {
		r.FinishedAt = r.StartedAt
	}
	if len(r.ErrorMessage) > maxSyncErrorMessage {
		cut := maxSyncErrorMessage
		for cut > 0 && !utf8.RuneStart(r.ErrorMessage[cut]) {
			cut--
		}
		r.ErrorMessage = r.ErrorMessage[:cut] + "…"
	}
	return r
}

// ListSyncHistory returns the connection's newest finished syncs, newest
// first, at most limit (and at most SyncHistoryKept: no more are kept).
// An unknown connection has none.
func (s *Store) ListSyncHistory(ctx context.Context, connectionID uuid.UUID, limit int) ([]SyncRecord, error) {
	rows, err := s.reader(ctx).Query(ctx, `
		SELECT started_at, finished_at, pages, rows_added, rows_modified, rows_removed, outcome,
			coalesce(error_code, ''), coalesce(error_message, '')
		FROM sync_history WHERE bank_connection_id = $1
		ORDER BY started_at DESC, id DESC LIMIT $2`, connectionID, min(max(limit, 0), SyncHistoryKept))
	if err != nil {
		return nil, fmt.Errorf("read sync history of connection %s: %w", connectionID, err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (SyncRecord, error) {
		var r SyncRecord
		err := row.Scan(&r.StartedAt, &r.FinishedAt, &r.Pages, &r.Changes.Added, &r.Changes.Modified, &r.Changes.Removed,
			&r.Outcome, &r.ErrorCode, &r.ErrorMessage)
		return r, err
	})
	if err != nil {
		return nil, fmt.Errorf("read sync history of connection %s: %w", connectionID, err)
	}
	return out, nil
}
