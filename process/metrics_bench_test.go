package process

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/finsync/finsync/config"
	"github.com/finsync/finsync/providers/all"
	"github.com/finsync/finsync/storage"
	"github.com/finsync/finsync/storage/storagetest"
	"github.com/finsync/finsync/worker"
)

// seedRiverJobsSQL loads $1 River jobs spread over every job state and
// finsync's four kinds the way a busy fleet's table looks: mostly finalized
// jobs kept for River's retention period (70% completed, 3% cancelled, 2%
// discarded), and a backlog (10% available, 8% scheduled, 4% retryable,
// 2% running, 1% pending); kinds 55% sync_connection, 25% apply_rules, 15%
// deliver_destination, 5% schedule_syncs.
const seedRiverJobsSQL = `
INSERT INTO river_job (state, kind, queue, args, max_attempts, attempt, scheduled_at, finalized_at, attempted_at)
SELECT s.state, k.kind, k.queue, jsonb_build_object('seq', g), 20,
       CASE WHEN s.state IN ('available', 'pending', 'scheduled') THEN 0 ELSE 1 END,
       now() - (g % 86400) * interval '1 second',
       CASE WHEN s.state IN ('completed', 'cancelled', 'discarded') THEN now() - (g % 86400) * interval '1 second' END,
       CASE WHEN s.state IN ('available', 'pending', 'scheduled') THEN NULL ELSE now() - (g % 86400) * interval '1 second' END
FROM generate_series(1, $1::int) AS g
CROSS JOIN LATERAL (SELECT (CASE
    WHEN g % 100 < 70 THEN 'completed' WHEN g % 100 < 80 THEN 'available'
    WHEN g % 100 < 88 THEN 'scheduled' WHEN g % 100 < 92 THEN 'retryable'
    WHEN g % 100 < 94 THEN 'running' WHEN g % 100 < 97 THEN 'cancelled'
    WHEN g % 100 < 99 THEN 'discarded' ELSE 'pending' END)::river_job_state AS state) s
CROSS JOIN LATERAL (SELECT * FROM (VALUES
    (0, 'sync_connection', 'sync'), (1, 'apply_rules', 'rules'),
    (2, 'deliver_destination', 'default'), (3, 'schedule_syncs', 'default')) AS v(i, kind, queue)
    WHERE v.i = CASE WHEN (g / 100) % 20 < 11 THEN 0 WHEN (g / 100) % 20 < 16 THEN 1
                     WHEN (g / 100) % 20 < 19 THEN 2 ELSE 3 END) k`

// BenchmarkMetricsScrapeRiverJobs times GET /metrics on the worker's real
// ops handler (the registry `finsync worker` builds) over a river_job
// table of FINSYNC_BENCH_RIVER_JOBS jobs (skipped when unset), loaded with
// SQL into a fresh database. Each timed scrape waits out
// worker.JobCountTTL first, so that every one counts the jobs afresh (the
// worst case: a cached scrape costs microseconds of database time); it
// reports the median and the slowest scrape ("counted"), and the same for
// scrapes in a row, served from the collector's cache ("cached"). Run with
// a fixed count:
//
//	FINSYNC_BENCH_RIVER_JOBS=1000000 go test -run '^$' -bench MetricsScrape -benchtime 15x ./cmd/finsync/
func BenchmarkMetricsScrapeRiverJobs(b *testing.B) {
	n, _ := strconv.Atoi(os.Getenv("FINSYNC_BENCH_RIVER_JOBS"))
	if n <= 0 {
		b.Skip("set FINSYNC_BENCH_RIVER_JOBS to the number of jobs to load (e.g. 1000000)")
	}
	b.Setenv("FINSYNC_ENCRYPTION_KEY", strings.Repeat("0a", 32))
	b.Setenv("FINSYNC_CURSOR_KEY", strings.Repeat("0b", 32))
	ctx := context.Background()
	pool, _ := storagetest.NewDB(b)
	start := time.Now()
	conn, err := pool.Acquire(ctx)
	if err != nil {
		b.Fatal(err)
	}
	// The pool's statement timeout is for requests, not for a bulk load.
	for _, q := range []string{`SET statement_timeout = 0`, seedRiverJobsSQL, `VACUUM ANALYZE river_job`, `RESET statement_timeout`} {
		args := []any{}
		if q == seedRiverJobsSQL {
			args = append(args, n)
		}
		if _, err := conn.Exec(ctx, q, args...); err != nil {
			b.Fatal(err)
		}
	}
	conn.Release()
	b.Logf("loaded %d jobs in %s", n, time.Since(start).Round(time.Second))
	st := storage.New(pool)
	cfg, err := config.Load(os.Getenv)
	if err != nil {
		b.Fatal(err)
	}
	box, err := cfg.RequireKeys()
	if err != nil {
		b.Fatal(err)
	}
	e := Env{Config: cfg, Registry: all.NewRegistry(), Log: slog.New(slog.DiscardHandler)}
	reg := prometheus.NewRegistry()
	BaseMetrics(reg, st)
	if _, err := e.NewWorkerClient(st, box, WorkerOptions{}, reg); err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(OpsHandler(st, reg))
	defer srv.Close()
	scrape := func() time.Duration {
		t0 := time.Now()
		resp, err := http.Get(srv.URL + "/metrics")
		if err != nil {
			b.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		took := time.Since(t0)
		if err != nil || resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `finsync_river_jobs{kind="sync_connection",state="completed"} 1000`) {
			b.Fatalf("scrape: %d %v", resp.StatusCode, err)
		}
		return took
	}
	scrape() // warm the connection pool and the index pages
	// Sub-benchmarks, so that the jobs are loaded once.
	b.Run("counted", func(b *testing.B) {
		var took []time.Duration
		for range b.N {
			b.StopTimer()
			time.Sleep(worker.JobCountTTL + 10*time.Millisecond)
			b.StartTimer()
			took = append(took, scrape())
		}
		b.StopTimer()
		report(b, took)
	})
	b.Run("cached", func(b *testing.B) {
		var took []time.Duration
		for range b.N {
			took = append(took, scrape())
		}
		b.StopTimer()
		report(b, took)
	})
}

// report adds the median and the slowest of the durations to b's results.
func report(b *testing.B, took []time.Duration) {
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "ms-median")
	b.ReportMetric(float64(took[len(took)-1].Microseconds())/1000, "ms-max")
}
