package jobargs

import (
	"github.com/google/uuid"
	"github.com/riverqueue/river"
)

// QueueDestinations is the queue of destination deliveries.
const QueueDestinations = river.QueueDefault

// DeliverDestination drains one destination's outbox: it delivers the
// destination's pending account events one by one, in the order of the
// changes, until none is left. It is unique per destination while queued,
// retrying or running, so one destination is never drained by two jobs at
// once; a change committed while the drain runs is picked up by that drain
// (see storage.Tx.FinishDestinationDrain).
type DeliverDestination struct {
	DestinationID uuid.UUID `json:"destination_id"`
}

// Kind implements river.JobArgs.
func (DeliverDestination) Kind() string { return "deliver_destination" }

// DeliverMaxAttempts bounds the retries of one drain: with retries capped
// at a minute apart, about a day of destination outage. Events left behind
// are picked up by the next change or by the periodic sweep.
const DeliverMaxAttempts = 1500

// InsertOpts makes the job unique per destination while queued or running.
func (DeliverDestination) InsertOpts() river.InsertOpts {
	return river.InsertOpts{
		Queue:       QueueDestinations,
		MaxAttempts: DeliverMaxAttempts,
		UniqueOpts:  river.UniqueOpts{ByArgs: true, ByState: activeStates},
	}
}
