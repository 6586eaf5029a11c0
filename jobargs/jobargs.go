// Package jobargs holds the argument types of finsync's River jobs, apart
// from the workers that run them, so that the API can enqueue a job inside
// the same database transaction as the change that causes it without
// importing the worker.
package jobargs

import (
	"github.com/google/uuid"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

// Queues.
const (
	QueueSync  = "sync"
	QueueRules = "rules"
)

// activeStates are the states in which a job counts as queued or running
// for uniqueness: a second enqueue while one is pending or running is a
// no-op, so two syncs of one connection never run at once.
var activeStates = []rivertype.JobState{
	rivertype.JobStateAvailable,
	rivertype.JobStatePending,
	rivertype.JobStateRetryable,
	rivertype.JobStateRunning,
	rivertype.JobStateScheduled,
}

// SyncConnection syncs one bank connection.
type SyncConnection struct {
	ConnectionID uuid.UUID `json:"connection_id"`
}

// Kind implements river.JobArgs.
func (SyncConnection) Kind() string { return "sync_connection" }

// InsertOpts makes the job unique per connection while queued or running.
// A sync continues over many attempts' slices (snoozes, which use up no
// attempt); each kill of a worker running it uses up one attempt, hence
// room for a few kills on top of provider failures.
func (SyncConnection) InsertOpts() river.InsertOpts {
	return river.InsertOpts{
		Queue:       QueueSync,
		MaxAttempts: 20,
		UniqueOpts:  river.UniqueOpts{ByArgs: true, ByState: activeStates},
	}
}

// ApplyRules applies a user's active rules to their stored transactions,
// after a rule was created, changed or archived. It is not unique: River's
// uniqueness must cover running jobs, and a pass already running may have
// read the rules before the change, so every change gets its own pass.
type ApplyRules struct {
	UserID uuid.UUID `json:"user_id"`
	// RuleID is the rule whose change caused the job (for logs).
	RuleID uuid.UUID `json:"rule_id"`
	// AfterDate and AfterID continue a pass that an earlier job ended at
	// its time slice: the pass goes on after this keyset position (in
	// descending transaction date and id). Empty starts from the newest.
	AfterDate string    `json:"after_date,omitempty"`
	AfterID   uuid.UUID `json:"after_id,omitempty"`
}

// Kind implements river.JobArgs.
func (ApplyRules) Kind() string { return "apply_rules" }

// InsertOpts puts the job on the rules queue.
func (ApplyRules) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueRules, MaxAttempts: 10}
}
