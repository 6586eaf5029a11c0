package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/riverqueue/river"

	"github.com/finsync/finsync/destinations"
	"github.com/finsync/finsync/jobargs"
	"github.com/finsync/finsync/resilience"
	"github.com/finsync/finsync/secrets"
	"github.com/finsync/finsync/storage"
)

// DefaultDeliverRetryCap caps the wait between two delivery attempts, so
// that a change lands within about two minutes of its destination
// recovering (one capped wait plus one breaker period).
const DefaultDeliverRetryCap = time.Minute

// deliverBatch is how many pending events one drain reads at a time.
const deliverBatch = 100

// A drain works for at most deliverJobSlice, then snoozes to go on in a new
// attempt (events are marked delivered one by one, so it continues with
// the next); deliverJobTimeout bounds one attempt, below
// RescueStuckJobsAfter so that a killed worker's drain is retried soon.
const (
	deliverJobSlice   = 30 * time.Second
	deliverJobTimeout = time.Minute
)

// Destinations configures the delivery of account changes to destinations.
type Destinations struct {
	// Box opens the destinations' sealed credentials.
	Box *secrets.Box
	// Deliverer sends the events; nil uses destinations.NewDeliverer's
	// defaults with the rate limits kept in the store for every worker.
	Deliverer *destinations.Deliverer
	// RetryCap overrides DefaultDeliverRetryCap when positive.
	RetryCap time.Duration
	// Metrics records the delivery lag; nil records none.
	Metrics *Metrics
}

// addDeliverWorker registers the delivery worker when destinations are
// configured.
func addDeliverWorker(workers *river.Workers, cfg Config) {
	if cfg.Destinations == nil {
		return
	}
	river.AddWorker(workers, NewDeliverWorker(cfg.Store, *cfg.Destinations, cfg.Log))
}

// DeliverWorker runs jobargs.DeliverDestination: it drains one
// destination's outbox in the order of the changes, delivering each event
// through the destination's breaker and limiter, until the outbox is
// empty.
type DeliverWorker struct {
	river.WorkerDefaults[jobargs.DeliverDestination]
	store    *storage.Store
	box      *secrets.Box
	deliver  *destinations.Deliverer
	retryCap time.Duration
	log      *slog.Logger
	metrics  *Metrics
}

// NewDeliverWorker returns the delivery worker.
func NewDeliverWorker(st *storage.Store, cfg Destinations, log *slog.Logger) *DeliverWorker {
	w := &DeliverWorker{store: st, box: cfg.Box, deliver: cfg.Deliverer, retryCap: cfg.RetryCap, log: log, metrics: cfg.Metrics}
	if w.deliver == nil {
		var opts destinations.Options
		if st != nil { // a nil *Store in the interface would not read as nil
			opts.Rates = st
		}
		w.deliver = destinations.NewDeliverer(opts)
	}
	if w.retryCap <= 0 {
		w.retryCap = DefaultDeliverRetryCap
	}
	if w.log == nil {
		w.log = slog.New(slog.DiscardHandler)
	}
	return w
}

// Timeout bounds one attempt: a slice and the batch in hand.
func (w *DeliverWorker) Timeout(*river.Job[jobargs.DeliverDestination]) time.Duration {
	return deliverJobTimeout
}

// NextRetry backs off exponentially from one second, capped at the retry
// cap, with jitter.
func (w *DeliverWorker) NextRetry(job *river.Job[jobargs.DeliverDestination]) time.Time {
	return time.Now().Add(retryDelay(job.Attempt, w.retryCap))
}

// retryDelay is 2^(attempt-1) seconds capped at limit, jittered down by up
// to a fifth.
func retryDelay(attempt int, limit time.Duration) time.Duration {
	d := limit
	if attempt >= 1 && attempt < 30 {
		d = min(time.Second<<(attempt-1), limit)
	}
	return d - rand.N(d/5+1)
}

// Work drains the destination's outbox, and logs what the attempt
// delivered (drained).
func (w *DeliverWorker) Work(ctx context.Context, job *river.Job[jobargs.DeliverDestination]) error {
	id := job.Args.DestinationID
	d, err := w.store.GetDestination(ctx, id)
	if errors.Is(err, storage.ErrNotFound) {
		return nil // deleted, and its outbox with it
	}
	if err != nil {
		return err
	}
	start := time.Now()
	var rep drainReport
	err = w.drain(ctx, job, d, &rep)
	w.drained(ctx, d, time.Since(start), rep, err)
	return err
}

// drainReport is what one drain attempt did.
type drainReport struct {
	// delivered counts the events delivered.
	delivered int
	// cause is the last delivery failure, as the destination returned it
	// (before it became a River snooze); nil when none failed.
	cause error
}

// drained logs one delivery attempt of a destination (one job attempt's
// drain) with exactly the keys destination_id, kind, duration_ms, items
// (events delivered), outcome (ok, or the failure class of the last event
// that failed: one set aside as permanent, or the one that stopped the
// drain) and error_class. An attempt that found nothing to deliver logs
// nothing; one that ended its slice and continues in the next is ok. The
// line is logged with ctx, so it carries a request-enqueued job's request
// id.
func (w *DeliverWorker) drained(ctx context.Context, d storage.Destination, took time.Duration, rep drainReport, err error) {
	if rep.cause != nil {
		err = rep.cause
	} else if _, snoozed := errors.AsType[*river.JobSnoozeError](err); snoozed {
		err = nil // the slice ended
	}
	delivered := rep.delivered
	if delivered == 0 && err == nil {
		return
	}
	result, class, level := OutcomeOK, "", slog.LevelInfo
	if err != nil {
		result, level = outcome(err), slog.LevelWarn
		class = result
	}
	w.log.LogAttrs(context.WithoutCancel(ctx), level, "destination delivery",
		slog.String("destination_id", d.ID.String()),
		slog.String("kind", d.Kind),
		slog.Int64("duration_ms", took.Milliseconds()),
		slog.Int("items", delivered),
		slog.String("outcome", result),
		slog.String("error_class", class))
}

// drain delivers the outbox's events in order, counting those delivered,
// until it is empty (completing the job) or the attempt's slice ends.
func (w *DeliverWorker) drain(ctx context.Context, job *river.Job[jobargs.DeliverDestination], d storage.Destination, rep *drainReport) error {
	id := d.ID
	target, err := w.target(d)
	if err != nil {
		return err
	}
	until := time.Now().Add(deliverJobSlice)
	for {
		events, err := w.store.ListDestinationPendingEvents(ctx, id, deliverBatch)
		if err != nil {
			return err
		}
		if len(events) == 0 {
			done, err := w.finish(ctx, job)
			if err != nil || done {
				return err
			}
			continue
		}
		for _, ev := range events {
			if !time.Now().Before(until) {
				return river.JobSnooze(0)
			}
			if err := w.deliverOne(ctx, target, ev, rep); err != nil {
				return err
			}
		}
	}
}

// target opens the destination's credentials.
func (w *DeliverWorker) target(d storage.Destination) (destinations.Target, error) {
	if w.box == nil {
		return destinations.Target{}, fmt.Errorf("destination %s: no key to open its credentials", d.ID)
	}
	secret, err := w.box.Open(d.SealedSecret)
	if err != nil {
		return destinations.Target{}, fmt.Errorf("open credentials of destination %s: %w", d.ID, err)
	}
	return destinations.Target{ID: d.ID, Kind: d.Kind, Config: d.Config, Secret: secret}, nil
}

// finish completes the job in the same transaction that found the outbox
// empty under the destination's lock, so that a change committed after
// that finds no running drain and enqueues a new one. It reports false
// when events arrived meanwhile.
func (w *DeliverWorker) finish(ctx context.Context, job *river.Job[jobargs.DeliverDestination]) (bool, error) {
	var done bool
	err := w.store.Atomic(ctx, func(tx *storage.Tx) error {
		var err error
		done, err = tx.FinishDestinationDrain(ctx, job.Args.DestinationID)
		if errors.Is(err, storage.ErrNotFound) {
			done, err = true, nil
		}
		if err != nil || !done {
			return err
		}
		if err := tx.PruneDestinationDelivered(ctx, job.Args.DestinationID); err != nil {
			return err
		}
		return storage.CompleteJob(ctx, tx, job)
	})
	if err != nil {
		return false, fmt.Errorf("finish drain of destination %s: %w", job.Args.DestinationID, err)
	}
	return done, nil
}

// deliverOne delivers one event, records the outcome and adds it to rep. A permanent
// refusal sets the event aside and lets the drain go on; a rate limit or
// an open breaker snoozes the job; any other failure fails the attempt,
// to be retried with backoff from the same event.
func (w *DeliverWorker) deliverOne(ctx context.Context, t destinations.Target, ev storage.OutboxEvent, rep *drainReport) error {
	err := w.deliver.Deliver(ctx, t, destinations.Event{ID: ev.ID, Type: ev.Type, OccurredAt: ev.OccurredAt, Account: ev.Account})
	if err == nil {
		if err := w.store.MarkDestinationDelivered(ctx, ev.DestinationID, ev.ID); err != nil {
			return err
		}
		rep.delivered++
		w.metrics.observeDelivery(t.Kind, time.Since(ev.OccurredAt))
		return nil
	}
	rep.cause = err
	pe := resilience.AsError(err)
	isPermanent := pe != nil && pe.Class == resilience.Permanent
	if mErr := w.store.MarkDestinationAttemptFailed(ctx, ev.DestinationID, ev.ID, err.Error(), isPermanent); mErr != nil {
		return mErr
	}
	w.log.WarnContext(ctx, "destination delivery failed", "destination_id", ev.DestinationID, "kind", t.Kind,
		"event_id", ev.ID, "account_id", ev.AccountID, "attempt", ev.Attempts+1, "permanent", isPermanent, "error", err)
	switch {
	case isPermanent:
		return nil
	case pe != nil && (pe.Class == resilience.RateLimited || pe.Code == resilience.CodeCircuitOpen):
		return river.JobSnooze(max(pe.RetryAfter, time.Second))
	}
	return fmt.Errorf("deliver event %s to destination %s: %w", ev.ID, ev.DestinationID, err)
}
