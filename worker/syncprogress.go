package worker

import (
	"context"
	"encoding/json"

	"github.com/riverqueue/river/rivertype"

	"github.com/finsync/finsync/storage"
)

// SyncProgress is what a sync job has stored so far, over its slices and
// attempts: transaction pages and rows (new or changed).
type SyncProgress struct {
	Pages int64 `json:"pages"`
	Rows  int64 `json:"rows"`
}

// ReadSyncProgress returns the progress recorded in a sync job's metadata,
// and false when none is recorded yet (no batch committed).
func ReadSyncProgress(job *rivertype.JobRow) (SyncProgress, bool) {
	var md map[string]json.RawMessage
	if len(job.Metadata) == 0 || json.Unmarshal(job.Metadata, &md) != nil {
		return SyncProgress{}, false
	}
	raw, ok := md[storage.SyncProgressKey]
	if !ok {
		return SyncProgress{}, false
	}
	var p SyncProgress
	if json.Unmarshal(raw, &p) != nil {
		return SyncProgress{}, false
	}
	return p, true
}

type syncJobKey struct{}

// withSyncJob returns ctx naming the River job that runs the sync, whose
// metadata then receives the sync's progress.
func withSyncJob(ctx context.Context, jobID int64) context.Context {
	return context.WithValue(ctx, syncJobKey{}, jobID)
}

// syncJobID returns the River job that runs the sync ctx belongs to
// (withSyncJob), and zero outside a job.
func syncJobID(ctx context.Context) int64 {
	id, _ := ctx.Value(syncJobKey{}).(int64)
	return id
}
