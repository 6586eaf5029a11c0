package syncwait

import (
	"errors"
	"testing"
	"time"

	"github.com/riverqueue/river/rivertype"
)

// TestOutcome: completed, cancelled and discarded jobs have ended; a job
// waiting to retry has failed only when it ran since the wait began.
func TestOutcome(t *testing.T) {
	since := time.Now()
	before, after := since.Add(-time.Minute), since.Add(time.Second)
	failed := []rivertype.AttemptError{{Error: "provider said no"}}
	for _, c := range []struct {
		job   rivertype.JobRow
		want  string
		ended bool
	}{
		{rivertype.JobRow{State: rivertype.JobStateCompleted}, "completed", true},
		{rivertype.JobRow{State: rivertype.JobStateDiscarded, Errors: failed}, "discarded: provider said no", true},
		{rivertype.JobRow{State: rivertype.JobStateCancelled}, "cancelled", true},
		{rivertype.JobRow{State: rivertype.JobStateRetryable, AttemptedAt: &after, Errors: failed}, "failed, will retry: provider said no", true},
		{rivertype.JobRow{State: rivertype.JobStateRetryable, AttemptedAt: &before}, "", false},
		{rivertype.JobRow{State: rivertype.JobStateRunning}, "", false},
	} {
		got, ended := Outcome(&c.job, since)
		if got != c.want || ended != c.ended {
			t.Errorf("%s: %q %v, want %q %v", c.job.State, got, ended, c.want, c.ended)
		}
	}
}

func TestState(t *testing.T) {
	for state, want := range map[rivertype.JobState]string{
		rivertype.JobStateAvailable: "queued", rivertype.JobStateRunning: "running",
		rivertype.JobStateScheduled: "paused", rivertype.JobStateRetryable: "paused",
	} {
		if got := State(&rivertype.JobRow{State: state}); got != want {
			t.Errorf("%s: %q, want %q", state, got, want)
		}
	}
}

// TestHeldBackExitsThree: a wait that ends on held-back syncs carries
// ExitHeldBack for the process's exit status.
func TestHeldBackExitsThree(t *testing.T) {
	var err error = &HeldBackError{Held: 1, Of: 2}
	var coded interface{ ExitCode() int }
	if !errors.As(err, &coded) || coded.ExitCode() != ExitHeldBack || err.Error() != "1 of 2 syncs held back; they run when the time shown comes" {
		t.Fatalf("%v", err)
	}
}
