package api_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/jobargs"
	"github.com/finsync/finsync/providers/all"
	"github.com/finsync/finsync/providers/all/allsim"
	"github.com/finsync/finsync/providers/sim"
	"github.com/finsync/finsync/secrets"
	"github.com/finsync/finsync/storage"
	"github.com/finsync/finsync/worker"
)

// workerEnv is a real River worker syncing from the simulator into the
// database the API of env serves.
type workerEnv struct {
	*env
	sim    *sim.Simulator
	root   string
	box    *secrets.Box
	st     *storage.Store
	client *river.Client[pgx.Tx]
	user   domain.User
	key    string
}

func newWorkerEnv(t *testing.T) *workerEnv {
	t.Helper()
	e := newEnv(t)
	s := allsim.New(sim.Options{Seed: 11, HistoryTransactions: 40})
	simSrv := httptest.NewServer(s)
	t.Cleanup(simSrv.Close)
	box, err := secrets.FromHex(strings.Repeat("2e", 32))
	if err != nil {
		t.Fatal(err)
	}
	st := storage.New(e.fx.Pool)
	provs, err := worker.NewProviders(all.NewRegistry(), worker.ProviderOptions{Unlimited: true, Rates: st, Quotas: st})
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	// The data's clock follows the simulator's day, so a test that advances
	// it syncs the new days.
	syncer := &worker.Syncer{Store: st, Providers: provs, Box: box, Log: log, Holder: uuid.New(), Now: s.WallNow}
	client := startWorkerClient(t, worker.Config{Store: st, Log: log, Syncer: syncer})
	w := &workerEnv{env: e, sim: s, root: simSrv.URL, box: box, st: st, client: client}
	w.user = e.fx.User(domain.PlanPro, true)
	w.key = e.fx.Key(w.user.ID, nil)
	return w
}

// connect registers a connection of the demo user to the simulator.
func (w *workerEnv) connect(provider, name string) uuid.UUID {
	w.t.Helper()
	sealed, err := w.box.Seal(allsim.Credentials(provider, name))
	if err != nil {
		w.t.Fatal(err)
	}
	c, err := w.st.CreateConnection(context.Background(), storage.NewConnection{
		UserID: w.user.ID, Provider: provider, BaseURL: allsim.BaseURL(provider, w.root), SealedCredentials: sealed,
	})
	if err != nil {
		w.t.Fatal(err)
	}
	return c.ID
}

// syncAndWait enqueues a sync of the connection and waits until its job
// completes.
func (w *workerEnv) syncAndWait(id uuid.UUID) {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := w.client.Insert(ctx, jobargs.SyncConnection{ConnectionID: id}, nil)
	if err != nil {
		w.t.Fatal(err)
	}
	for {
		job, err := w.client.JobGet(ctx, res.Job.ID)
		if err != nil {
			w.t.Fatal(err)
		}
		if job.State == "completed" {
			return
		}
		if job.State == "discarded" || job.State == "cancelled" {
			w.t.Fatalf("sync job of %s ended %s: %v", id, job.State, job.Errors)
		}
		select {
		case <-ctx.Done():
			w.t.Fatalf("sync job of %s still %s", id, job.State)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// connections lists the user's connections through the API, by id.
func (w *workerEnv) connections() map[string]map[string]any {
	w.t.Helper()
	r := w.get("/v2/bank-connections", w.key)
	w.expect(r, http.StatusOK, "")
	out := map[string]map[string]any{}
	for _, c := range r.json(w.t)["bankConnections"].([]any) {
		m := c.(map[string]any)
		out[m["id"].(string)] = m
	}
	return out
}

func health(c map[string]any) map[string]any { return c["health"].(map[string]any) }

// TestConnectionHealthFromWorkers syncs connections with a real worker
// against the simulator and reads their health through the API, which
// holds no provider: what it shows the workers wrote to PostgreSQL.
func TestConnectionHealthFromWorkers(t *testing.T) {
	w := newWorkerEnv(t)
	bank := w.connect("plaid", "health-bank")
	eu := w.connect("gocardless", "health-eu")
	before := time.Now()
	w.syncAndWait(bank)
	w.syncAndWait(eu)

	conns := w.connections()
	h := health(conns[bank.String()])
	if h["breaker"] != "closed" || h["consecutiveFailures"] != 0.0 || h["quotaRemaining"] != nil {
		t.Fatalf("health after a successful sync: %v", h)
	}
	last, err := time.Parse(time.RFC3339Nano, h["lastSuccessfulSyncAt"].(string))
	if err != nil || last.Before(before.Add(-time.Second)) {
		t.Fatalf("lastSuccessfulSyncAt %v (%v), want after %s", h["lastSuccessfulSyncAt"], err, before)
	}
	next, err := time.Parse(time.RFC3339Nano, h["nextSyncAt"].(string))
	if err != nil || !next.After(time.Now()) || h["nextSyncAt"] != conns[bank.String()]["nextSyncAt"] {
		t.Fatalf("nextSyncAt %v (%v), want the connection's, in the future", h["nextSyncAt"], err)
	}

	// The simulated bank allows 4 successful calls per account and endpoint
	// a day; one sync spent one of each.
	if q := health(conns[eu.String()])["quotaRemaining"]; q != 3.0 {
		t.Fatalf("quotaRemaining after one sync = %v, want 3", q)
	}
	w.syncAndWait(eu)
	if q := health(w.connections()[eu.String()])["quotaRemaining"]; q != 2.0 {
		t.Fatalf("quotaRemaining after two syncs = %v, want 2", q)
	}

	// An outage of the whole provider: each attempt's call fails three
	// times (two retries), so the second attempt opens the breaker.
	if err := w.sim.SetFault(sim.Fault{Provider: "plaid", Mode: sim.FaultOutage}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.client.Insert(context.Background(), jobargs.SyncConnection{ConnectionID: bank}, nil); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(45 * time.Second)
	for {
		c := w.connections()[bank.String()]
		h = health(c)
		if h["breaker"] == "open" {
			if c["status"] != "error" || c["lastProviderErrorCode"] == nil {
				t.Fatalf("connection with an open breaker: %v", c)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("breaker not open 45 s into the outage: %v", c)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if n := h["consecutiveFailures"].(float64); n < 2 {
		t.Fatalf("consecutiveFailures = %v, want at least 2", n)
	}
	if h["lastSuccessfulSyncAt"] != health(conns[bank.String()])["lastSuccessfulSyncAt"] {
		t.Fatalf("lastSuccessfulSyncAt moved during the outage: %v", h)
	}
	// Only the provider in outage: the other connection's breaker stays closed.
	if b := health(w.connections()[eu.String()])["breaker"]; b != "closed" {
		t.Fatalf("the other provider's breaker = %v", b)
	}
}
