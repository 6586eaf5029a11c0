package worker_test

import (
	"context"
	"testing"
	"time"

	"github.com/riverqueue/river"

	"github.com/finsync/finsync/providers/all/allsim"
	"github.com/finsync/finsync/providers/sim"
	"github.com/finsync/finsync/worker"
)

// TestSlicedSyncEqualsUninterrupted runs a first sync through River with a
// slice so short that every attempt stores one batch and snoozes: the job
// completes over many attempts, none of them counted as a failure, and
// stores exactly what one uninterrupted sync stores.
func TestSlicedSyncEqualsUninterrupted(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	e := newSyncEnv(t)
	for _, provider := range []string{"plaid", "mercury"} {
		const name = "sliced"
		key, err := allsim.CredentialKey(provider, allsim.Credentials(provider, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := e.sim.SetConnection(sim.ConnectionSettings{Provider: provider, Credential: key, Transactions: 5000, HistoryDays: 120}); err != nil {
			t.Fatal(err)
		}
		whole := e.connect(provider, name)
		e.mustSync(whole)
		sliced := e.connect(provider, name)

		syncer := *e.syncer
		syncer.Slice = time.Nanosecond
		client, err := worker.NewClient(worker.Config{Store: e.st, Log: e.syncer.Log, Syncer: &syncer})
		if err != nil {
			t.Fatal(err)
		}
		events, stopEvents := client.Subscribe(river.EventKindJobCompleted, river.EventKindJobFailed, river.EventKindJobSnoozed)
		if err := client.Start(ctx); err != nil {
			t.Fatal(err)
		}
		job, err := client.Insert(ctx, syncArgs(sliced.ID), nil)
		if err != nil {
			t.Fatal(err)
		}
		snoozes := 0
	wait:
		for {
			select {
			case ev := <-events:
				if ev.Job.ID != job.Job.ID {
					continue
				}
				switch ev.Kind {
				case river.EventKindJobSnoozed:
					snoozes++
				case river.EventKindJobCompleted:
					if len(ev.Job.Errors) != 0 {
						t.Fatalf("%s: the sliced sync recorded errors: %v", provider, ev.Job.Errors)
					}
					break wait
				default:
					t.Fatalf("%s: sync job ended %s: %v", provider, ev.Job.State, ev.Job.Errors)
				}
			case <-ctx.Done():
				t.Fatalf("%s: the sliced sync did not complete (%d snoozes)", provider, snoozes)
			}
		}
		stopEvents()
		if err := client.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		if snoozes < 3 {
			t.Fatalf("%s: %d snoozes; the sync was not sliced", provider, snoozes)
		}
		e.requireSameRows(whole, sliced)
		if status, want := e.connectionStatus(sliced), e.connectionStatus(whole); status != want {
			t.Fatalf("%s: connection status %q, %q after the uninterrupted sync", provider, status, want)
		}
		n := e.count(`SELECT count(*) FROM transactions WHERE bank_connection_id = $1`, sliced.ID)
		t.Logf("%s: %d rows in %d slices, identical to the uninterrupted sync", provider, n, snoozes+1)
	}
}
