package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"github.com/spf13/cobra"

	"github.com/finsync/finsync/storage"
	"github.com/finsync/finsync/worker"
)

func (a *app) syncCmd() *cobra.Command {
	var connection string
	var allConns, wait bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "sync",
		Short: "Enqueue syncs of one connection (--connection) or all (--all); --wait follows them to the end",
		RunE: func(cmd *cobra.Command, _ []string) error {
			if (connection == "") == !allConns {
				return errors.New("give exactly one of --connection ID or --all")
			}
			return a.withStore(cmd.Context(), func(st *storage.Store) error {
				ids, err := syncTargets(cmd.Context(), st, connection)
				if err != nil {
					return err
				}
				client, err := worker.NewInsertClient(st.Pool())
				if err != nil {
					return err
				}
				asked := time.Now()
				jobs, err := enqueueSyncs(cmd.Context(), client, ids)
				if err != nil {
					return err
				}
				if !wait {
					return a.print(map[string]any{"enqueued": len(jobs)}, fmt.Sprintf("%d sync(s) enqueued", len(jobs)))
				}
				ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
				defer cancel()
				results, err := a.waitSyncs(ctx, st, client, jobs, asked)
				if a.json {
					_ = a.print(map[string]any{"results": results}, "")
				}
				return err
			})
		},
	}
	cmd.Flags().StringVar(&connection, "connection", "", "the connection to sync")
	cmd.Flags().BoolVar(&allConns, "all", false, "sync every connection that is not disabled")
	cmd.Flags().BoolVar(&wait, "wait", false, "show progress until the syncs end; exit non-zero if one failed")
	cmd.Flags().DurationVar(&timeout, "timeout", 30*time.Minute, "how long --wait waits")
	return cmd
}

func syncTargets(ctx context.Context, st *storage.Store, connection string) ([]uuid.UUID, error) {
	if connection == "" {
		return st.ActiveConnectionIDs(ctx)
	}
	id, err := uuid.Parse(connection)
	if err != nil {
		return nil, fmt.Errorf("--connection: %w", err)
	}
	if _, err := st.ConnectionByID(ctx, id); err != nil {
		return nil, err
	}
	return []uuid.UUID{id}, nil
}

// waitSyncs polls the jobs, printing progress, until each has ended, and
// returns how each ended.
// since is when the syncs were asked for.
func (a *app) waitSyncs(ctx context.Context, st *storage.Store, client *river.Client[pgx.Tx], jobs map[uuid.UUID]int64, since time.Time) (map[uuid.UUID]string, error) {
	done := map[uuid.UUID]string{}
	failed := 0
	for len(done) < len(jobs) {
		for conn, jobID := range jobs {
			if _, ok := done[conn]; ok {
				continue
			}
			job, err := client.JobGet(ctx, jobID)
			if err != nil {
				return done, fmt.Errorf("follow sync of %s: %w", conn, err)
			}
			if outcome, final := syncOutcome(job, since); final {
				done[conn] = outcome
				if outcome != "completed" {
					failed++
				}
				a.progress(ctx, st, conn, outcome)
			}
		}
		if len(done) == len(jobs) {
			break
		}
		select {
		case <-ctx.Done():
			return done, fmt.Errorf("syncs still running after the timeout: %d of %d done", len(done), len(jobs))
		case <-time.After(500 * time.Millisecond):
		}
		for conn := range jobs {
			if _, ok := done[conn]; !ok {
				a.progress(ctx, st, conn, "running")
			}
		}
	}
	if failed > 0 {
		return done, fmt.Errorf("%d of %d syncs failed", failed, len(jobs))
	}
	return done, nil
}

// syncOutcome reports whether a job has ended and how; a job waiting to
// retry counts as failed only once it has run since the wait began.
func syncOutcome(job *rivertype.JobRow, since time.Time) (string, bool) {
	switch job.State {
	case rivertype.JobStateCompleted:
		return "completed", true
	case rivertype.JobStateCancelled, rivertype.JobStateDiscarded:
		return string(job.State) + lastError(job), true
	case rivertype.JobStateRetryable:
		if job.AttemptedAt != nil && job.AttemptedAt.After(since) {
			return "failed, will retry" + lastError(job), true
		}
	}
	return "", false
}

func lastError(job *rivertype.JobRow) string {
	if len(job.Errors) == 0 {
		return ""
	}
	return ": " + job.Errors[len(job.Errors)-1].Error
}

// progress prints one line about a connection's sync.
func (a *app) progress(ctx context.Context, st *storage.Store, conn uuid.UUID, state string) {
	if a.json {
		return
	}
	var n int
	_ = st.Pool().QueryRow(ctx, `SELECT count(*) FROM transactions WHERE bank_connection_id = $1`, conn).Scan(&n)
	fmt.Fprintf(a.errOut, "%s  %-8s transactions stored: %d\n", conn, state, n)
}
