package storage

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

// JobClient is River's client over a Store's database, as the worker
// package builds it. Callers outside storage name it through this alias
// and never name the driver's transaction type.
type JobClient = river.Client[pgx.Tx]

// JobInserter enqueues River jobs inside a database transaction; an
// insert-only *JobClient is one.
type JobInserter interface {
	InsertTx(ctx context.Context, tx pgx.Tx, args river.JobArgs, opts *river.InsertOpts) (*rivertype.JobInsertResult, error)
}

// Tx is one database transaction opened by Store.Atomic. Its methods run
// inside it: they see its own earlier writes, their writes (and the jobs
// Enqueue adds) commit together or not at all. Caveat: a Tx is valid only
// while the function given to Atomic runs and is not safe for concurrent
// use.
type Tx struct{ tx pgx.Tx }

// Atomic runs fn inside one database transaction, committing when fn
// returns nil and rolling back otherwise (fn's error is returned as is,
// so sentinel errors survive). It is inTx for callers that must not see
// the driver.
func (s *Store) Atomic(ctx context.Context, fn func(tx *Tx) error) error {
	return s.inTx(ctx, func(tx pgx.Tx) error { return fn(&Tx{tx: tx}) })
}

// Enqueue inserts a River job with jobs in the transaction, so the job is
// worked only if the transaction commits. A nil jobs enqueues nothing (a
// server without a job queue).
func (t *Tx) Enqueue(ctx context.Context, jobs JobInserter, args river.JobArgs) error {
	if jobs == nil {
		return nil
	}
	if _, err := jobs.InsertTx(ctx, t.tx, args, nil); err != nil {
		return fmt.Errorf("enqueue %s job: %w", args.Kind(), err)
	}
	return nil
}
