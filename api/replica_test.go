package api_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/finsync/finsync/api"
	"github.com/finsync/finsync/api/middleware"
	v2 "github.com/finsync/finsync/api/v2"
	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/internal/pgcluster"
	"github.com/finsync/finsync/providers/all"
	"github.com/finsync/finsync/storage"
	"github.com/finsync/finsync/storage/storagetest"
)

// replicaEnv is the real API over a private primary and a streaming
// standby made from it with pg_basebackup -R.
type replicaEnv struct {
	*env
	st       *storage.Store
	primary  *pgcluster.Cluster
	replica  *pgcluster.Cluster
	rconn    *pgx.Conn
	replicaW *storage.Replica
	// other is a second API over the same databases, as another serve
	// process would be.
	other *replicaEnv
}

func newReplicaEnv(t *testing.T, ctx context.Context, maxLag time.Duration) *replicaEnv {
	t.Helper()
	primary := pgcluster.Start(ctx, t)
	pool, err := storage.Open(ctx, primary.URL("postgres"), storage.Options{MaxConns: 8})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if err := storage.New(pool).Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	replica := primary.Replica(ctx, t)
	rpool, err := storage.Open(ctx, replica.URL("postgres"), storage.Options{MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rpool.Close)
	rconn, err := pgx.Connect(ctx, replica.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rconn.Close(context.Background()) })
	// Two API processes' worth of state (stores, replica watchers,
	// credential caches), sharing only the two databases.
	newAPI := func() (*storage.Store, *storage.Replica, *httptest.Server) {
		// A generous staleness bound: a probe delayed on a loaded machine
		// must not send reads to the primary where a test expects the
		// replica.
		rep := storage.NewReplica(pool, rpool, storage.ReplicaOptions{MaxLag: maxLag, StaleAfter: 10 * time.Second})
		st := storage.NewWithReplica(pool, rep)
		a := api.MustNew(api.Config{Providers: all.NewRegistry().Profiles(),
			Store:     st,
			Log:       slog.New(slog.NewTextHandler(io.Discard, nil)),
			CursorKey: []byte("test cursor key, 32 bytes long!!"),
			Auth:      middleware.DefaultAuthConfig(),
			Plans:     v2.PlanLimits{domain.PlanPro: 1_000_000},
		})
		runCtx, stop := context.WithCancel(context.Background())
		go a.Run(runCtx)
		go rep.Run(runCtx)
		srv := httptest.NewServer(a.Handler)
		t.Cleanup(func() { srv.Close(); stop() })
		return st, rep, srv
	}
	st, rep, srv := newAPI()
	otherSt, otherRep, otherSrv := newAPI()
	_, doc := registryValidators(t)
	client := &http.Client{Transport: doc.Transport(t, http.DefaultTransport)}
	return &replicaEnv{
		env: &env{t: t, fx: storagetest.NewFixtures(t, pool), srv: srv, client: client},
		other: &replicaEnv{
			env:      &env{t: t, fx: storagetest.NewFixtures(t, pool), srv: otherSrv, client: client},
			st:       otherSt,
			replicaW: otherRep,
		},
		st:       st,
		primary:  primary,
		replica:  replica,
		rconn:    rconn,
		replicaW: rep,
	}
}

// waitUntil polls cond every 50 ms until it holds, failing after a generous
// minute.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// served runs fn and reports how many routed reads it made on the replica
// and on the primary.
func (e *replicaEnv) served(fn func()) (replica, primary uint64) {
	r0, p0 := e.st.GetReadCounts()
	fn()
	r1, p1 := e.st.GetReadCounts()
	return r1 - r0, p1 - p0
}

// accountIDs lists the caller's accounts over the API.
func (e *replicaEnv) accountIDs(key string) []string {
	e.t.Helper()
	r := e.get("/v2/accounts", key)
	e.expect(r, http.StatusOK, "")
	return ids(e.t, r, "accounts")
}

// pauseReplay stops WAL replay on the standby (it keeps receiving WAL),
// as a replica far behind would be.
func (e *replicaEnv) pauseReplay(ctx context.Context) {
	e.t.Helper()
	if _, err := e.rconn.Exec(ctx, `SELECT pg_wal_replay_pause()`); err != nil {
		e.t.Fatal(err)
	}
	waitUntil(e.t, "replay is paused", func() bool {
		var state string
		if err := e.rconn.QueryRow(ctx, `SELECT pg_get_wal_replay_pause_state()`).Scan(&state); err != nil {
			e.t.Fatal(err)
		}
		return state == "paused"
	})
}

func (e *replicaEnv) resumeReplay(ctx context.Context) {
	e.t.Helper()
	if _, err := e.rconn.Exec(ctx, `SELECT pg_wal_replay_resume()`); err != nil {
		e.t.Fatal(err)
	}
}

// TestReadsOnReplica runs the API with FINSYNC_READ_DATABASE_URL's
// machinery against a real standby: a user's reads go to the replica
// unless the replica has not replayed that user's last write (then to the
// primary), and a stopped replica is bypassed and used again once back.
func TestReadsOnReplica(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// A lag bound far above the test's pauses, so that only
	// read-your-writes decides where reads go here.
	e := newReplicaEnv(t, ctx, time.Hour)
	writer := e.fx.User(domain.PlanPro, true)
	writerKey := e.fx.Key(writer.ID, nil)
	other := e.fx.User(domain.PlanPro, true)
	otherKey := e.fx.Key(other.ID, nil)
	conn := e.fx.Connection(other.ID, "plaid", "active")
	checking := e.fx.Account(other.ID, conn, "plaid", "Checking").String()

	waitUntil(t, "the replica is usable and has the fixtures", func() bool {
		return e.replicaW.Status().Usable && e.other.replicaW.Status().Usable && slices.Contains(e.accountIDs(otherKey), checking)
	})
	if rep, prim := e.served(func() { e.accountIDs(otherKey) }); rep == 0 || prim != 0 {
		t.Fatalf("caught-up replica: %d reads on the replica, %d on the primary; want all on the replica", rep, prim)
	}

	t.Run("own write read back while replay is paused", func(t *testing.T) {
		e.t = t
		e.pauseReplay(ctx)
		r := e.send(http.MethodPost, "/v2/accounts", writerKey, `{"name":"Cash","type":"cash","currency":"USD"}`)
		e.expect(r, http.StatusCreated, "")
		created, _ := r.json(t)["account"].(map[string]any)
		id, _ := created["id"].(string)
		if id == "" {
			t.Fatalf("no id in %s", r.body)
		}
		rep, prim := e.served(func() {
			got := e.get("/v2/accounts/"+id, writerKey)
			e.expect(got, http.StatusOK, "")
			if acct, _ := got.json(t)["account"].(map[string]any); acct["id"] != id || acct["name"] != "Cash" {
				t.Fatalf("own account read back as %s", got.body)
			}
			if !slices.Contains(e.accountIDs(writerKey), id) {
				t.Fatalf("own new account %s missing from the list", id)
			}
		})
		if rep != 0 || prim == 0 {
			t.Fatalf("writer's reads: %d on the replica, %d on the primary; want all on the primary", rep, prim)
		}
		// The other API process, which did not take the write, also
		// sends the writer's reads to the primary.
		e.other.t = t
		rep, prim = e.other.served(func() {
			if !slices.Contains(e.other.accountIDs(writerKey), id) {
				t.Fatalf("own new account %s missing from the list served by another API process", id)
			}
		})
		if rep != 0 || prim == 0 {
			t.Fatalf("writer's reads on another API process: %d on the replica, %d on the primary; want all on the primary", rep, prim)
		}
		if rep, prim := e.other.served(func() { e.other.accountIDs(otherKey) }); rep == 0 || prim != 0 {
			t.Fatalf("other user's reads on another API process: %d on the replica, %d on the primary; want all on the replica", rep, prim)
		}

		// Written straight on the primary, so no write position is
		// recorded: the other user's reads still go to the paused replica,
		// which does not have it.
		savings := e.fx.Account(other.ID, conn, "plaid", "Savings").String()
		rep, prim = e.served(func() {
			got := e.accountIDs(otherKey)
			if !slices.Contains(got, checking) || slices.Contains(got, savings) {
				t.Fatalf("other user's accounts %v: want %s from the paused replica, not %s", got, checking, savings)
			}
		})
		if rep == 0 || prim != 0 {
			t.Fatalf("other user's reads: %d on the replica, %d on the primary; want all on the replica", rep, prim)
		}

		e.resumeReplay(ctx)
		waitUntil(t, "the resumed replica has the new rows", func() bool {
			return slices.Contains(e.accountIDs(otherKey), savings)
		})
		waitUntil(t, "the resumed replica serves the writer", func() bool {
			rep, _ := e.served(func() { e.accountIDs(writerKey) })
			return rep > 0
		})
		rep, prim = e.served(func() {
			if !slices.Contains(e.accountIDs(writerKey), id) {
				t.Fatalf("own account %s missing after resume", id)
			}
		})
		if rep == 0 || prim != 0 {
			t.Fatalf("after resume: %d reads on the replica, %d on the primary; want all on the replica", rep, prim)
		}
	})

	t.Run("stopped replica is bypassed and used again", func(t *testing.T) {
		e.t = t
		if err := e.replica.Stop(ctx, pgcluster.Fast); err != nil {
			t.Fatal(err)
		}
		direct := e.fx.Account(other.ID, conn, "plaid", "Brokerage").String()
		// Every read answers at once, from the primary: the first ones
		// fall back on the replica's connection error, the later ones are
		// routed to the primary by the failed probes.
		for range 20 {
			if got := e.accountIDs(otherKey); !slices.Contains(got, direct) {
				t.Fatalf("with the replica down: accounts %v lack %s written on the primary", got, direct)
			}
			e.expect(e.get("/v2/transactions?limit=50", otherKey), http.StatusOK, "")
			e.expect(e.get("/v2/categories", otherKey), http.StatusOK, "")
		}
		waitUntil(t, "the probe marks the replica unusable", func() bool { return !e.replicaW.Status().Usable })
		if rep, prim := e.served(func() { e.accountIDs(otherKey) }); rep != 0 || prim == 0 {
			t.Fatalf("replica down: %d reads on the replica, %d on the primary", rep, prim)
		}
		if err := e.replica.StartAgain(ctx); err != nil {
			t.Fatal(err)
		}
		waitUntil(t, "reads go to the replica again", func() bool {
			rep, _ := e.served(func() {
				if !slices.Contains(e.accountIDs(otherKey), direct) {
					t.Fatalf("account %s missing after the replica came back", direct)
				}
			})
			return rep > 0
		})
	})
}

// TestReplicaLagBound pauses replay while the primary keeps writing: past
// the lag bound the replica is reported unusable (its reads go to the
// primary), and usable again once replay resumes and catches up.
func TestReplicaLagBound(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	const bound = time.Second
	e := newReplicaEnv(t, ctx, bound)
	user := e.fx.User(domain.PlanPro, true)
	key := e.fx.Key(user.ID, nil)
	conn := e.fx.Connection(user.ID, "plaid", "active")
	waitUntil(t, "the replica is usable", func() bool { return e.replicaW.Status().Usable })
	e.pauseReplay(ctx)
	paused := time.Now()
	var last string
	waitUntil(t, "the paused replica is bypassed", func() bool {
		last = e.fx.Account(user.ID, conn, "plaid", "Account").String()
		return !e.replicaW.Status().Usable
	})
	t.Logf("replica bypassed %v after replay paused (bound %v)", time.Since(paused).Round(time.Millisecond), bound)
	rep, prim := e.served(func() {
		if !slices.Contains(e.accountIDs(key), last) {
			t.Fatalf("lagging replica bypassed, yet the latest account %s is missing", last)
		}
	})
	if rep != 0 || prim == 0 {
		t.Fatalf("lagging replica: %d reads on the replica, %d on the primary", rep, prim)
	}
	e.resumeReplay(ctx)
	resumed := time.Now()
	waitUntil(t, "the caught-up replica is used again", func() bool {
		rep, _ := e.served(func() { e.accountIDs(key) })
		return rep > 0
	})
	t.Logf("replica used again %v after replay resumed", time.Since(resumed).Round(time.Millisecond))
}
