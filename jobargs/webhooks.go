package jobargs

import (
	"github.com/google/uuid"
	"github.com/riverqueue/river"
)

// QueueWebhooks is the queue of consumer webhook deliveries, apart from
// syncs and destination deliveries, so that slow receivers hold only its
// own workers.
const QueueWebhooks = "webhooks"

// DeliverWebhook drains one consumer webhook subscription's outbox: it
// delivers the pending events one by one, in the order they were enqueued,
// until none is left, waiting out each failed event's backoff. It is
// unique per subscription while queued, scheduled or running, so one
// subscription is never drained by two jobs at once; an event committed
// while the drain runs is picked up by that drain (see
// storage.Tx.FinishWebhookDrain).
type DeliverWebhook struct {
	SubscriptionID uuid.UUID `json:"subscription_id"`
}

// Kind implements river.JobArgs.
func (DeliverWebhook) Kind() string { return "deliver_webhook" }

// InsertOpts makes the job unique per subscription while queued or running.
// Failures are retried by snoozing on the event's own schedule (stored with
// the event), so River's attempt budget is only a bound on unexpected
// errors (the database unreachable, say).
func (DeliverWebhook) InsertOpts() river.InsertOpts {
	return river.InsertOpts{
		Queue:       QueueWebhooks,
		MaxAttempts: DeliverMaxAttempts,
		UniqueOpts:  river.UniqueOpts{ByArgs: true, ByState: activeStates},
	}
}
