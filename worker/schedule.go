package worker

import (
	"context"
	"fmt"
	"time"

	"github.com/riverqueue/river"

	"github.com/finsync/finsync/jobargs"
	"github.com/finsync/finsync/storage"
)

// ScheduleEvery is how often the periodic scheduler looks for due connections.
const ScheduleEvery = time.Minute

// scheduleBatch caps how many syncs one scheduler run enqueues.
const scheduleBatch = 1000

// ScheduleSyncs enqueues a sync for every connection whose next sync is due.
type ScheduleSyncs struct{}

// Kind implements river.JobArgs.
func (ScheduleSyncs) Kind() string { return "schedule_syncs" }

// InsertOpts makes the scheduler unique while queued or running.
func (ScheduleSyncs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: 1, UniqueOpts: river.UniqueOpts{ByPeriod: ScheduleEvery}}
}

// ScheduleWorker runs the periodic scheduler.
type ScheduleWorker struct {
	river.WorkerDefaults[ScheduleSyncs]
	Store *storage.Store
}

// Work enqueues the due syncs. Sync jobs are unique per connection while
// queued or running, so a connection already syncing is not enqueued twice.
//
// It also sweeps destination outboxes: a destination with undelivered events
// gets a drain enqueued (unique per destination), so events whose drain gave
// up or was cancelled are not left waiting for the next account change;
// consumer webhook subscriptions with pending deliveries likewise. Last,
// it folds the read cache's change log (Store.CompactListingChanges).
func (w *ScheduleWorker) Work(ctx context.Context, _ *river.Job[ScheduleSyncs]) error {
	if err := w.enqueueDue(ctx); err != nil {
		return err
	}
	// The read cache's change log (docs/read-cache.md): folded every
	// minute, so that reading a user's version stays one short index scan.
	_, err := w.Store.CompactListingChanges(ctx, compactBatch)
	return err
}

// compactBatch caps how many users' change rows one scheduler run folds.
const compactBatch = 10_000

// enqueueDue enqueues the due syncs and drains.
func (w *ScheduleWorker) enqueueDue(ctx context.Context) error {
	ids, err := w.Store.ListDueConnections(ctx, time.Now(), scheduleBatch)
	if err != nil {
		return err
	}
	dests, err := w.Store.ListDestinationsWithPendingEvents(ctx, scheduleBatch)
	if err != nil {
		return err
	}
	hooks, err := w.Store.ListWebhooksWithPendingDeliveries(ctx, scheduleBatch)
	if err != nil {
		return err
	}
	if len(ids)+len(dests)+len(hooks) == 0 {
		return nil
	}
	params := make([]river.InsertManyParams, 0, len(ids)+len(dests)+len(hooks))
	for _, id := range ids {
		params = append(params, river.InsertManyParams{Args: jobargs.SyncConnection{ConnectionID: id}})
	}
	for _, id := range dests {
		params = append(params, river.InsertManyParams{Args: jobargs.DeliverDestination{DestinationID: id}})
	}
	for _, id := range hooks {
		params = append(params, river.InsertManyParams{Args: jobargs.DeliverWebhook{SubscriptionID: id}})
	}
	client, err := storage.JobClientFromContext(ctx)
	if err != nil {
		return fmt.Errorf("schedule %d jobs: %w", len(params), err)
	}
	if _, err := client.InsertMany(ctx, params); err != nil {
		return fmt.Errorf("schedule %d jobs: %w", len(params), err)
	}
	return nil
}

// periodicJobs returns the scheduler's periodic job, run at start and then
// every ScheduleEvery.
func periodicJobs() []*river.PeriodicJob {
	return []*river.PeriodicJob{river.NewPeriodicJob(
		river.PeriodicInterval(ScheduleEvery),
		func() (river.JobArgs, *river.InsertOpts) { return ScheduleSyncs{}, nil },
		&river.PeriodicJobOpts{RunOnStart: true},
	)}
}
