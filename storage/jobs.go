package storage

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
)

// countJobsSQL counts, for each state and kind, the jobs up to a cap; the
// rows come state by state, kinds in the order given.
const countJobsSQL = `
SELECT (SELECT count(*) FROM (SELECT 1 FROM river_job j WHERE j.state = s.state AND j.kind = k.kind LIMIT $3) c)
FROM unnest($1::river_job_state[]) WITH ORDINALITY AS s(state, si)
CROSS JOIN unnest($2::text[]) WITH ORDINALITY AS k(kind, ki)
ORDER BY s.si, k.ki`

// CountJobs counts River's jobs of each state and kind, each count stopping
// at limit (a count of limit means "limit or more"), in one query that
// reads the index on (state, kind) and touches at most
// len(states) × len(kinds) × limit entries, never the whole table. The
// result holds the counts state by state, kinds in the order given:
// counts[si*len(kinds)+ki]. States must be River job states.
func (s *Store) CountJobs(ctx context.Context, states, kinds []string, limit int) ([]int64, error) {
	rows, err := s.pool.Query(ctx, countJobsSQL, states, kinds, limit)
	if err != nil {
		return nil, fmt.Errorf("count river jobs: %w", err)
	}
	defer rows.Close()
	counts := make([]int64, 0, len(states)*len(kinds))
	for rows.Next() {
		var n int64
		if err := rows.Scan(&n); err != nil {
			return nil, fmt.Errorf("count river jobs: %w", err)
		}
		counts = append(counts, n)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("count river jobs: %w", err)
	}
	if len(counts) != len(states)*len(kinds) {
		return nil, fmt.Errorf("count river jobs: %d counts for %d states and %d kinds", len(counts), len(states), len(kinds))
	}
	return counts, nil
}

// NewJobClient returns River's client over the store's pool: a client
// that works jobs when cfg names workers and queues, else one that only
// inserts them. It is how River reaches the database without its callers
// holding the pool. Caveat: River keeps its own connections from the pool
// while it runs (its leader election, fetches and listeners).
func (s *Store) NewJobClient(cfg *river.Config) (*JobClient, error) {
	client, err := river.NewClient(riverpgxv5.New(s.pool), cfg)
	if err != nil {
		return nil, fmt.Errorf("river client: %w", err)
	}
	return client, nil
}

// JobClientFromContext returns the River client working the job whose
// context ctx is; an error outside a job.
func JobClientFromContext(ctx context.Context) (*JobClient, error) {
	return river.ClientFromContextSafely[pgx.Tx](ctx)
}

// CompleteJob marks the running job completed inside tx, so that it
// completes only if tx commits (the drains complete their job in the
// transaction that found their outbox empty).
func CompleteJob[T river.JobArgs](ctx context.Context, tx *Tx, job *river.Job[T]) error {
	if _, err := river.JobCompleteTx[*riverpgxv5.Driver](ctx, tx.tx, job); err != nil {
		return fmt.Errorf("complete job %d: %w", job.ID, err)
	}
	return nil
}

// EnqueueMany inserts River jobs with client inside tx, so they are
// worked only if tx commits.
func (t *Tx) EnqueueMany(ctx context.Context, client *JobClient, params []river.InsertManyParams) error {
	if _, err := client.InsertManyTx(ctx, t.tx, params); err != nil {
		return fmt.Errorf("enqueue %d jobs: %w", len(params), err)
	}
	return nil
}

// IsWorkerActive reports whether a River worker process is running: a
// started River client keeps re-electing a leader, so an unexpired row in
// River's one-row river_leader table means one reported within the
// leadership TTL (seconds). Insert-only clients never elect a leader.
func (s *Store) IsWorkerActive(ctx context.Context) (bool, error) {
	var ok bool
	if err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM river_leader WHERE expires_at > now())`).Scan(&ok); err != nil {
		return false, fmt.Errorf("check worker leader: %w", err)
	}
	return ok, nil
}
