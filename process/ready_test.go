package process

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/finsync/finsync/internal/pgcluster"
	"github.com/finsync/finsync/storage"
)

// TestReadyzFollowsTheDatabase checks that /readyz answers 503 while the
// database is down and 200 again within 10 s of its return, with no
// restart of the process.
func TestReadyzFollowsTheDatabase(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cluster := pgcluster.Start(ctx, t)
	pool, err := storage.Open(ctx, cluster.URL("postgres"), storage.Options{MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if err := storage.New(pool).Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(OpsHandler(storage.New(pool), prometheus.NewRegistry()))
	defer srv.Close()
	ready := func() int {
		resp, err := http.Get(srv.URL + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := ready(); got != http.StatusOK {
		t.Fatalf("readyz before the outage: %d", got)
	}
	if err := cluster.Stop(ctx, pgcluster.Immediate); err != nil {
		t.Fatal(err)
	}
	if got := ready(); got != http.StatusServiceUnavailable {
		t.Fatalf("readyz while the database is down: %d, want 503", got)
	}
	if err := cluster.StartAgain(ctx); err != nil {
		t.Fatal(err)
	}
	back := time.Now()
	for ready() != http.StatusOK {
		if time.Since(back) > 10*time.Second {
			t.Fatal("readyz still not ready 10 s after the database returned")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestServeWaitsForTheDatabase starts serve's database opening while the
// database is down: it waits and returns a working pool once the database
// is back; a database that does not exist fails at once instead.
func TestServeWaitsForTheDatabase(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cluster := pgcluster.Start(ctx, t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	start := time.Now()
	if _, err := AwaitDatabase(ctx, cluster.URL("no_such_database"), storage.Options{MaxConns: 2}, log); err == nil || time.Since(start) > 5*time.Second {
		t.Fatalf("a missing database: error %v after %s, want an error at once", err, time.Since(start))
	}
	if err := cluster.Stop(ctx, pgcluster.Fast); err != nil {
		t.Fatal(err)
	}
	restarted := make(chan error, 1)
	go func() {
		time.Sleep(time.Second)
		restarted <- cluster.StartAgain(ctx)
	}()
	pool, err := AwaitDatabase(ctx, cluster.URL("postgres"), storage.Options{MaxConns: 2}, log)
	if err != nil {
		t.Fatalf("waiting for the database: %v", err)
	}
	defer pool.Close()
	if err := <-restarted; err != nil {
		t.Fatal(err)
	}
	if err := pool.Ping(ctx); err != nil {
		t.Fatalf("pool after the wait: %v", err)
	}
}
