// Package syncwait follows enqueued syncs to their end, as `finsync sync
// --wait` and `finsync dev` do: it polls their River jobs, reports each
// sync's progress (its state, the pages and rows it has stored) when it
// changes, recognises a sync a worker holds back (a spent provider quota,
// a rate limit, an open breaker) and notices when no worker is running.
// It only reads: the syncs run in the workers.
package syncwait

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/riverqueue/river/rivertype"

	"github.com/finsync/finsync/storage"
	"github.com/finsync/finsync/worker"
)

// Following syncs: the jobs are polled every pollEvery; with no River
// leader (no worker process alive: a started worker re-elects one every
// few seconds, with a 15 s lease) for noWorkerAfter, the wait ends with an
// error, so that a wait without a worker ends within about 25 s even just
// after a worker died. A state line is printed when it changes, and at
// least every quietEvery.
const (
	pollEvery     = time.Second
	noWorkerAfter = 10 * time.Second
	quietEvery    = 10 * time.Second
)

// ErrNoWorker ends a wait for syncs that no worker runs.
var ErrNoWorker = errors.New("no finsync worker is running (none has held River's leadership for " + noWorkerAfter.String() +
	"): start `finsync worker`; the syncs stay enqueued and run once one starts")

// ExitHeldBack is the exit status of `sync --wait` when no sync failed but
// some are held back (a provider quota spent, a rate limit, an open circuit
// breaker) and nothing else is left to wait for.
const ExitHeldBack = 3

// HeldBackError ends a wait in which no sync failed but some are held
// back. ExitCode gives the process's exit status, ExitHeldBack.
type HeldBackError struct {
	Held, Of int
}

// Error says how many syncs are held back.
func (e *HeldBackError) Error() string {
	return fmt.Sprintf("%d of %d syncs held back; they run when the time shown comes", e.Held, e.Of)
}

// ExitCode is ExitHeldBack.
func (e *HeldBackError) ExitCode() int { return ExitHeldBack }

// Wait polls the jobs (by connection), writing each sync's progress to
// progress (nil: nothing) when it changes, until each has ended or every
// sync left is held back (its job waits, snoozed by a worker that recorded
// a hold on the connection), and returns how each ended. since is when the
// syncs were asked for. It fails early with ErrNoWorker when no worker is
// alive, with a *HeldBackError when syncs are held back and none failed,
// and when ctx ends.
func Wait(ctx context.Context, st *storage.Store, client *storage.JobClient, jobs map[uuid.UUID]int64, since time.Time, progress io.Writer) (map[uuid.UUID]string, error) {
	f := &follow{out: progress, done: map[uuid.UUID]string{}, shown: map[uuid.UUID]string{}, shownAt: map[uuid.UUID]time.Time{}}
	var noWorkerSince time.Time
	for {
		held, err := f.poll(ctx, st, client, jobs, since)
		if err != nil {
			return f.done, err
		}
		if len(f.done)+len(held) == len(jobs) {
			return f.end(held, len(jobs))
		}
		alive, err := st.IsWorkerActive(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			return f.done, err
		case alive:
			noWorkerSince = time.Time{}
		case noWorkerSince.IsZero():
			noWorkerSince = time.Now()
		case time.Since(noWorkerSince) >= noWorkerAfter:
			return f.done, ErrNoWorker
		}
		select {
		case <-ctx.Done():
			return f.done, fmt.Errorf("syncs still running after the timeout: %d of %d done", len(f.done), len(jobs))
		case <-time.After(pollEvery):
		}
	}
}

// follow is what a wait for syncs knows so far: how the ended ones
// ended, and the line last shown for each of the others.
type follow struct {
	out     io.Writer
	done    map[uuid.UUID]string
	failed  int
	shown   map[uuid.UUID]string
	shownAt map[uuid.UUID]time.Time
}

// poll reads the jobs not yet ended, records those that ended, prints each
// one's line when it changes (and every quietEvery), and returns the
// lines of those held back.
func (f *follow) poll(ctx context.Context, st *storage.Store, client *storage.JobClient, jobs map[uuid.UUID]int64, since time.Time) (map[uuid.UUID]string, error) {
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
		if outcome, final := Outcome(job, since); final {
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
			line = State(job)
		}
		if line != f.shown[conn] || time.Since(f.shownAt[conn]) >= quietEvery {
			f.progress(conn, line, job)
			f.shown[conn], f.shownAt[conn] = line, time.Now()
		}
	}
	return held, nil
}

// end returns how each of n syncs ended, the held-back ones included, and
// the error the wait ends with: the failures, else a *HeldBackError.
func (f *follow) end(held map[uuid.UUID]string, n int) (map[uuid.UUID]string, error) {
	for conn, line := range held {
		f.done[conn] = line
	}
	switch {
	case f.failed > 0 && len(held) > 0:
		return f.done, fmt.Errorf("%d of %d syncs failed, %d held back", f.failed, n, len(held))
	case f.failed > 0:
		return f.done, fmt.Errorf("%d of %d syncs failed", f.failed, n)
	case len(held) > 0:
		return f.done, &HeldBackError{Held: len(held), Of: n}
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
	holds, err := st.ListHolds(ctx, ids)
	if err != nil {
		return nil, err
	}
	out := make(map[uuid.UUID]string, len(holds))
	for id, h := range holds {
		out[id] = fmt.Sprintf("held back until %s: %s", h.Until.UTC().Format(time.RFC3339), h.Reason)
	}
	return out, nil
}

// State describes a sync that has not ended: waiting for a worker
// (queued), running, or between two slices (paused), with the pages and
// rows stored so far when the job has recorded them.
func State(job *rivertype.JobRow) string {
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

// Outcome reports whether a job has ended and how; a job waiting to retry
// counts as failed only once it has run since the wait began.
func Outcome(job *rivertype.JobRow, since time.Time) (string, bool) {
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

// progress prints one line about a connection's sync (nothing without a
// writer).
func (f *follow) progress(conn uuid.UUID, line string, job *rivertype.JobRow) {
	if f.out == nil {
		return
	}
	if p, ok := worker.ReadSyncProgress(job); ok && !strings.Contains(line, "pages") {
		line = fmt.Sprintf("%s (pages %d, transactions %d)", line, p.Pages, p.Rows)
	}
	fmt.Fprintf(f.out, "%s  %s\n", conn, line)
}
