package worker_test

import (
	"context"
	"testing"
	"time"

	"github.com/riverqueue/river"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/internal/pgcluster"
	"github.com/finsync/finsync/providers/all/allsim"
	"github.com/finsync/finsync/providers/sim"
	"github.com/finsync/finsync/storage"
	"github.com/finsync/finsync/worker"
)

// TestSyncSurvivesDatabaseRestarts runs first syncs on a real River client
// over a private cluster and takes the database down in the middle of each:
// a fast restart, then an immediate stop (as a crash would) held for 15 s,
// longer than River's completer retries a failed write in one go. The same
// client, never restarted, has a River leader again and resumes each sync
// within resumeBound of the database's return, and finishes the sync in
// exactly the state of an uninterrupted one. No job is left running for
// River's rescuer.
func TestSyncSurvivesDatabaseRestarts(t *testing.T) {
	const resumeBound = 10 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cluster := pgcluster.Start(ctx, t)
	pool, err := storage.Open(ctx, cluster.URL("postgres"), storage.Options{MaxConns: 16})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if err := storage.New(pool).Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	e := newSyncEnvOn(t, pool)
	const name = "restart"
	key, err := allsim.CredentialKey("plaid", allsim.Credentials("plaid", name))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.sim.SetConnection(sim.ConnectionSettings{Provider: "plaid", Credential: key, Transactions: 30000, HistoryDays: 200}); err != nil {
		t.Fatal(err)
	}
	whole := e.connect("plaid", name)
	e.mustSync(whole)

	client, err := worker.NewClient(worker.Config{Store: e.st, Log: e.syncer.Log, Syncer: e.syncer})
	if err != nil {
		t.Fatal(err)
	}
	events, stopEvents := client.Subscribe(river.EventKindJobCompleted, river.EventKindJobFailed)
	defer stopEvents()
	if err := client.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = client.Stop(stopCtx)
	})

	rows := `SELECT count(*) FROM transactions WHERE bank_connection_id = $1`
	outages := []struct {
		mode pgcluster.StopMode
		down time.Duration
	}{{pgcluster.Fast, 0}, {pgcluster.Immediate, 15 * time.Second}}
	for _, o := range outages {
		cut := e.connect("plaid", name)
		job, err := client.Insert(ctx, syncArgs(cut.ID), nil)
		if err != nil {
			t.Fatal(err)
		}
		for e.count(rows, cut.ID) < 1000 {
			time.Sleep(time.Millisecond)
		}
		if err := cluster.Stop(ctx, o.mode); err != nil {
			t.Fatal(err)
		}
		time.Sleep(o.down)
		if err := cluster.StartAgain(ctx); err != nil {
			t.Fatal(err)
		}
		back := time.Now()
		// River elects a leader again (its periodic jobs and maintenance
		// run on it; /v1/health reports degraded without one).
		for {
			if up, err := e.st.IsWorkerActive(ctx); err == nil && up {
				break
			}
			if time.Since(back) > resumeBound {
				t.Fatalf("%s stop: no River leader %s after the database returned", o.mode, resumeBound)
			}
			time.Sleep(100 * time.Millisecond)
		}
		leader := time.Since(back)
		done := awaitJob(t, events, job.Job.ID)
		if done.Job.Attempt < 2 {
			t.Fatalf("%s stop: the sync finished in its first attempt, so the outage did not interrupt it", o.mode)
		}
		if resumed := done.Job.AttemptedAt.Sub(back); resumed > resumeBound {
			t.Fatalf("%s stop: the sync's last attempt began %s after the database returned, over %s", o.mode, resumed, resumeBound)
		}
		t.Logf("%s stop, down %s: leader back after %s; sync resumed %s and completed %s after the database returned, in %d attempts (first error: %s)",
			o.mode, o.down, leader.Round(time.Millisecond), done.Job.AttemptedAt.Sub(back).Round(time.Millisecond),
			time.Since(back).Round(time.Millisecond), done.Job.Attempt, done.Job.Errors[0].Error)
		e.requireSameRows(whole, cut)
		if status, want := e.connectionStatus(cut), e.connectionStatus(whole); status != want {
			t.Fatalf("%s stop: connection status %q, %q after the uninterrupted sync", o.mode, status, want)
		}
	}
}

// awaitJob waits for the job's completion, passing over failed attempts
// (each is retried), and fails the test if it does not complete.
func awaitJob(t *testing.T, events <-chan *river.Event, id int64) *river.Event {
	t.Helper()
	timeout := time.After(2 * time.Minute)
	for {
		select {
		case ev := <-events:
			if ev.Job.ID != id {
				continue
			}
			if ev.Kind == river.EventKindJobCompleted {
				return ev
			}
			if ev.Job.State != "retryable" && ev.Job.State != "available" {
				t.Fatalf("sync job ended %s: %v", ev.Job.State, ev.Job.Errors)
			}
		case <-timeout:
			t.Fatal("sync job did not complete within 2 minutes of the restart")
		}
	}
}

// connectionStatus is a connection's stored status.
func (e *syncEnv) connectionStatus(c domain.BankConnection) string {
	e.t.Helper()
	var status string
	if err := e.pool.QueryRow(context.Background(), `SELECT status FROM bank_connections WHERE id = $1`, c.ID).Scan(&status); err != nil {
		e.t.Fatal(err)
	}
	return status
}
