package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/finsync/finsync/internal/requestid"
)

// requestIDs carries request ids through River: a job inserted with a
// context carrying one (requestid.With: an API request, or a job that
// itself carries one) gets it in its metadata under requestid.LogKey, and
// the job is worked with it back in its context, so the worker's log lines
// carry it. Jobs without one pass unchanged.
type requestIDs struct {
	river.MiddlewareDefaults
	log *slog.Logger
}

var (
	_ rivertype.JobInsertMiddleware = (*requestIDs)(nil)
	_ rivertype.WorkerMiddleware    = (*requestIDs)(nil)
)

// InsertMany implements rivertype.JobInsertMiddleware.
func (m *requestIDs) InsertMany(ctx context.Context, params []*rivertype.JobInsertParams, doInner func(context.Context) ([]*rivertype.JobInsertResult, error)) ([]*rivertype.JobInsertResult, error) {
	if id := requestid.From(ctx); id != "" {
		for _, p := range params {
			md, err := withRequestID(p.Metadata, id)
			if err != nil {
				return nil, fmt.Errorf("insert %s job: %w", p.Kind, err)
			}
			p.Metadata = md
		}
	}
	return doInner(ctx)
}

// Work implements rivertype.WorkerMiddleware: it works a job carrying a
// request id with the id in its context, and logs how it ended.
func (m *requestIDs) Work(ctx context.Context, job *rivertype.JobRow, doInner func(context.Context) error) error {
	id := jobRequestID(job)
	if id == "" {
		return doInner(ctx)
	}
	ctx = requestid.With(ctx, id)
	start := time.Now()
	err := doInner(ctx)
	attrs := []any{"job_id", job.ID, "kind", job.Kind, "attempt", job.Attempt, "duration", time.Since(start)}
	if err != nil {
		attrs = append(attrs, "error", err)
	}
	m.log.InfoContext(ctx, "job worked", attrs...)
	return err
}

// withRequestID returns metadata (a JSON object, or empty) with the id set.
func withRequestID(metadata []byte, id string) ([]byte, error) {
	md := map[string]json.RawMessage{}
	if len(metadata) > 0 {
		if err := json.Unmarshal(metadata, &md); err != nil {
			return nil, fmt.Errorf("job metadata: %w", err)
		}
	}
	v, err := json.Marshal(id)
	if err != nil {
		return nil, fmt.Errorf("job metadata: %w", err)
	}
	md[requestid.LogKey] = v
	out, err := json.Marshal(md)
	if err != nil {
		return nil, fmt.Errorf("job metadata: %w", err)
	}
	return out, nil
}

// jobRequestID returns the request id a job's metadata carries, or "" when
// it carries none or one that is not requestid.Valid.
func jobRequestID(job *rivertype.JobRow) string {
	var md struct {
		ID string `json:"request_id"`
	}
	if len(job.Metadata) == 0 || json.Unmarshal(job.Metadata, &md) != nil || !requestid.Valid(md.ID) {
		return ""
	}
	return md.ID
}
