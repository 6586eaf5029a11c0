package storage

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// SyncProgressKey is the key of a sync job's River metadata under which
// addSyncProgress keeps the job's progress: {"pages": n, "rows": n}.
const SyncProgressKey = "sync_progress"

// addSyncProgress adds pages and rows to the progress recorded in the
// metadata of the River job jobID, in tx: the batch's own transaction, so
// that what it reports is what is committed. The counts add up over the
// job's slices and attempts. River merges its own metadata updates into
// the row, so they are kept.
func addSyncProgress(ctx context.Context, tx pgx.Tx, jobID int64, pages, rows int) error {
	_, err := tx.Exec(ctx, `UPDATE river_job SET metadata = metadata || jsonb_build_object($2::text, jsonb_build_object(
			'pages', coalesce((metadata #>> ARRAY[$2::text, 'pages'])::bigint, 0) + $3,
			'rows', coalesce((metadata #>> ARRAY[$2::text, 'rows'])::bigint, 0) + $4))
		WHERE id = $1`, jobID, SyncProgressKey, pages, rows)
	if err != nil {
		return fmt.Errorf("record progress of sync job %d: %w", jobID, err)
	}
	return nil
}
