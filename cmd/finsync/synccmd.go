package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
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
		Long: `Enqueue syncs of one connection (--connection) or of every connection that is not
disabled (--all). With --wait, follow them, printing each sync's state and the pages and
transactions it stored, until each has ended or is held back.

A sync is held back when a worker makes it wait without calling the provider, or because
the provider asked it to: the provider's request quota is spent (a daily quota of
calls, for example), a rate limit is reached, or the circuit breaker is open. It prints
"held back until <time>: <reason>" (reason provider_quota, rate_limit or breaker_open) and
runs by itself at that time; --wait does not wait for it.

Exit status with --wait: 0 when every sync completed; 3 when none failed but some are held
back and nothing else is left to wait for; 1 when a sync failed, when no worker is running,
or when --timeout passes.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if (connection == "") == !allConns {
				return errors.New("give exactly one of --connection ID or --all")
			}
			return a.withStore(cmd.Context(), func(st *storage.Store) error {
				ids, err := syncTargets(cmd.Context(), st, connection)
				if err != nil {
					return err
				}
				client, err := worker.NewInsertClient(st)
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
	cmd.Flags().BoolVar(&wait, "wait", false, "show progress until the syncs end or are held back; exit 1 if one failed, 3 if some are held back")
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

// Following syncs: the jobs are polled every syncPollEvery; with no River
// leader (no worker process alive: a started worker re-elects one every
// few seconds, with a 15 s lease) for noWorkerAfter, the wait ends with an
// error, so that a wait without a worker ends within about 25 s even just
// after a worker died. A state line is printed when it changes, and at
// least every syncQuietEvery.
const (
	syncPollEvery  = time.Second
	noWorkerAfter  = 10 * time.Second
	syncQuietEvery = 10 * time.Second
)

// errNoWorker ends a wait for syncs that no worker runs.
var errNoWorker = errors.New("no finsync worker is running (none has held River's leadership for " + noWorkerAfter.String() +
	"): start `finsync worker`; the syncs stay enqueued and run once one starts")

// ExitHeldBack is the exit status of `sync --wait` when no sync failed but
// some are held back (a provider quota spent, a rate limit, an open circuit
// breaker) and nothing else is left to wait for.
const ExitHeldBack = 3

// waitSyncs polls the jobs, printing each sync's progress (its state, the
// pages and rows it has stored) when it changes, until each has ended or
// every sync left is held back (its job waits, snoozed by a worker that
// recorded a hold on the connection), and returns how each ended. It fails
// early when no worker is alive, and with an error of exit status
// ExitHeldBack when syncs are held back and none failed.
// since is when the syncs were asked for.
func (a *app) waitSyncs(ctx context.Context, st *storage.Store, client *storage.JobClient, jobs map[uuid.UUID]int64, since time.Time) (map[uuid.UUID]string, error) {
	f := &syncFollow{app: a, done: map[uuid.UUID]string{}, shown: map[uuid.UUID]string{}, shownAt: map[uuid.UUID]time.Time{}}
	var noWorkerSince time.Time
	for {
		held, err := f.poll(ctx, st, client, jobs, since)
		if err != nil {
			return f.done, err
		}
		if len(f.done)+len(held) == len(jobs) {
			return f.end(held, len(jobs))
		}
		alive, err := st.WorkerActive(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			return f.done, err
		case alive:
			noWorkerSince = time.Time{}
		case noWorkerSince.IsZero():
			noWorkerSince = time.Now()
		case time.Since(noWorkerSince) >= noWorkerAfter:
			return f.done, errNoWorker
		}
		select {
		case <-ctx.Done():
			return f.done, fmt.Errorf("syncs still running after the timeout: %d of %d done", len(f.done), len(jobs))
		case <-time.After(syncPollEvery):
		}
	}
}

// syncFollow is what a wait for syncs knows so far: how the ended ones
// ended, and the line last shown for each of the others.
type syncFollow struct {
	*app
	done    map[uuid.UUID]string
	failed  int
	shown   map[uuid.UUID]string
	shownAt map[uuid.UUID]time.Time
}

// poll reads the jobs not yet ended, records those that ended, prints each
// one's line when it changes (and every syncQuietEvery), and returns the
// lines of those held back.
func (f *syncFollow) poll(ctx context.Context, st *storage.Store, client *storage.JobClient, jobs map[uuid.UUID]int64, since time.Time) (map[uuid.UUID]string, error) {
	polled := map[uuid.UUID]*rivertype.JobRow{}
	waiting := map[uuid.UUID]*rivertype.JobRow{}
	for conn, jobID := range jobs {
		if _, ok := f.done[conn]; ok {
			continue
		}
		job, err := client.JobGet(ctx, jobID)
		if err != nil {
			return nil, fmt.Errorf("follow sync of %s: %w", conn, err)
		}
		if outcome, final := syncOutcome(job, since); final {
			f.done[conn] = outcome
			if outcome != "completed" {
				f.failed++
			}
			f.progress(conn, outcome, job)
			continue
		}
		polled[conn] = job
		if job.State == rivertype.JobStateScheduled {
			waiting[conn] = job
		}
	}
	held, err := heldSyncs(ctx, st, waiting)
	if err != nil && ctx.Err() == nil {
		return nil, err
	}
	for conn, job := range polled {
		line := held[conn]
		if line == "" {
			line = syncState(job)
		}
		if line != f.shown[conn] || time.Since(f.shownAt[conn]) >= syncQuietEvery {
			f.progress(conn, line, job)
			f.shown[conn], f.shownAt[conn] = line, time.Now()
		}
	}
	return held, nil
}

// end returns how each of n syncs ended, the held-back ones included, and
// the error the wait ends with: the failures, else ExitHeldBack's.
func (f *syncFollow) end(held map[uuid.UUID]string, n int) (map[uuid.UUID]string, error) {
	for conn, line := range held {
		f.done[conn] = line
	}
	switch {
	case f.failed > 0 && len(held) > 0:
		return f.done, fmt.Errorf("%d of %d syncs failed, %d held back", f.failed, n, len(held))
	case f.failed > 0:
		return f.done, fmt.Errorf("%d of %d syncs failed", f.failed, n)
	case len(held) > 0:
		return f.done, &exitError{code: ExitHeldBack,
			err: fmt.Errorf("%d of %d syncs held back; they run when the time shown comes", len(held), n)}
	}
	return f.done, nil
}

// heldSyncs returns, for the connections whose sync jobs wait (snoozed by a
// worker), those whose sync a worker holds back, each with the line that
// says until when and why.
func heldSyncs(ctx context.Context, st *storage.Store, waiting map[uuid.UUID]*rivertype.JobRow) (map[uuid.UUID]string, error) {
	if len(waiting) == 0 {
		return nil, nil
	}
	ids := make([]uuid.UUID, 0, len(waiting))
	for id := range waiting {
		ids = append(ids, id)
	}
	holds, err := st.Holds(ctx, ids)
	if err != nil {
		return nil, err
	}
	out := make(map[uuid.UUID]string, len(holds))
	for id, h := range holds {
		out[id] = fmt.Sprintf("held back until %s: %s", h.Until.UTC().Format(time.RFC3339), h.Reason)
	}
	return out, nil
}

// syncState describes a sync that has not ended: waiting for a worker,
// running, or between two slices, with the pages and rows stored so far.
func syncState(job *rivertype.JobRow) string {
	state := "queued"
	switch job.State {
	case rivertype.JobStateRunning:
		state = "running"
	case rivertype.JobStateScheduled, rivertype.JobStateRetryable:
		state = "paused"
	}
	if p, ok := worker.ReadSyncProgress(job); ok {
		return fmt.Sprintf("%-8s pages %d, transactions %d", state, p.Pages, p.Rows)
	}
	return state
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

// progress prints one line about a connection's sync (standard error;
// nothing with --json).
func (a *app) progress(conn uuid.UUID, line string, job *rivertype.JobRow) {
	if a.json {
		return
	}
	if p, ok := worker.ReadSyncProgress(job); ok && !strings.Contains(line, "pages") {
		line = fmt.Sprintf("%s (pages %d, transactions %d)", line, p.Pages, p.Rows)
	}
	fmt.Fprintf(a.errOut, "%s  %s\n", conn, line)
}
