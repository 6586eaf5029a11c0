package worker_test

// Sync benchmarks: the simulator over real HTTP (httptest), the real
// adapters behind the resilience layer with local rate limits off, and a
// fresh PostgreSQL database. They are slow (a million transactions each) and
// run only when FINSYNC_BENCH_SYNC=1:
//
//	FINSYNC_BENCH_SYNC=1 go test ./worker -run '^$' -bench BenchmarkSync -benchtime 1x -timeout 60m
//
// FINSYNC_BENCH_SYNC_TX overrides the history size (default 1,000,000).
// BENCHMARKS.md ("Sync") records the figures and what limits them.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/providers"
	"github.com/finsync/finsync/providers/all"
	"github.com/finsync/finsync/providers/all/allsim"
	"github.com/finsync/finsync/providers/mercury"
	"github.com/finsync/finsync/providers/sim"
	"github.com/finsync/finsync/resilience"
	"github.com/finsync/finsync/secrets"
	"github.com/finsync/finsync/storage"
	"github.com/finsync/finsync/storage/storagetest"
	"github.com/finsync/finsync/worker"
)

// benchHistory is the default history size of the benchmarks' connections.
const benchHistory = 1_000_000

// benchMemoBytes caps the pages the simulator keeps to serve again
// unchanged (sim.Options.MemoBytes): a re-sync then reads pages the
// simulator wrote before, as a remote provider would serve them at no cost
// to us, and the benchmark measures finsync's side. A million Mercury
// transactions take about 0.9 GiB.
const benchMemoBytes = 2 << 30

// incrementalRuns is how many incremental syncs each size's median covers.
const incrementalRuns = 10

// newPerDay is how many new transactions the simulator adds per day in the
// incremental benchmark.
const newPerDay = 100

// countingProvider counts the transaction rows (upserts and removals) an
// adapter returns, so that rates are rows received from the provider per
// second of sync.
type countingProvider struct {
	providers.Provider
	rows  atomic.Int64
	fetch atomic.Int64 // nanoseconds spent in Transactions
}

// Transactions fetches a page and counts its rows.
func (c *countingProvider) Transactions(ctx context.Context, conn providers.Connection, req providers.TransactionRequest) (providers.TransactionPage, error) {
	start := time.Now()
	page, err := c.Provider.Transactions(ctx, conn, req)
	c.fetch.Add(int64(time.Since(start)))
	c.rows.Add(int64(len(page.Upserts) + len(page.Removed)))
	return page, err
}

// GuessNext forwards the adapter's guesses (providers.NextGuesser), so
// that the benchmarks fetch pages as a sync of the bare adapter does.
func (c *countingProvider) GuessNext(cursor string) (string, bool) {
	return providers.GuessNext(c.Provider, cursor)
}

// benchEnv is a database, a simulator over HTTP and a Syncer whose clock
// follows the simulator's day.
type benchEnv struct {
	tb     testing.TB
	pool   *pgxpool.Pool
	st     *storage.Store
	sim    *sim.Simulator
	root   string
	box    *secrets.Box
	syncer *worker.Syncer
	user   domain.User
	counts map[string]*countingProvider
	tracer *statementTimes
}

// statementTimes adds up the time spent in each SQL statement (by its
// first words), to show where a sync's database time goes.
type statementTimes struct {
	mu    sync.Mutex
	times map[string]time.Duration
	// steps, with FINSYNC_BENCH_SYNC_TRACE=steps, are the statements of the
	// sync under way in order (sync logs them), from since.
	steps []traceStep
	since time.Time
}

// traceStep is one statement of a sync: when it started after the sync
// did, how long it took, and its first words.
type traceStep struct {
	at, took time.Duration
	sql      string
}

type traceKey struct{}

type traceStart struct {
	sql   string
	start time.Time
}

// TraceQueryStart notes the statement and its start.
func (s *statementTimes) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	return context.WithValue(ctx, traceKey{}, traceStart{sql: data.SQL, start: time.Now()})
}

// TraceQueryEnd adds the statement's duration.
func (s *statementTimes) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryEndData) {
	ts, ok := ctx.Value(traceKey{}).(traceStart)
	if !ok {
		return
	}
	words := strings.Fields(ts.sql)
	s.note(strings.Join(words[:min(len(words), 4)], " "), strings.Join(words[:min(len(words), 10)], " "), ts.start)
}

// note adds a statement's time since start under key, and, while a sync's
// steps are noted, the statement as step.
func (s *statementTimes) note(key, step string, start time.Time) {
	took := time.Since(start)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.times[key] += took
	if !s.since.IsZero() {
		s.steps = append(s.steps, traceStep{start.Sub(s.since), took, step})
	}
}

// batchTrace is a batch under way: when it started and its statements'
// first words.
type batchTrace struct {
	start time.Time
	sqls  []string
}

type batchKey struct{}

// TraceBatchStart notes the batch's start.
func (s *statementTimes) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return context.WithValue(ctx, batchKey{}, &batchTrace{start: time.Now()})
}

// TraceBatchQuery notes one statement of the batch.
func (s *statementTimes) TraceBatchQuery(ctx context.Context, _ *pgx.Conn, data pgx.TraceBatchQueryData) {
	if b, ok := ctx.Value(batchKey{}).(*batchTrace); ok {
		words := strings.Fields(data.SQL)
		b.sqls = append(b.sqls, strings.Join(words[:min(len(words), 4)], " "))
	}
}

// TraceBatchEnd adds the batch's duration, as one statement named by its
// statements' first words.
func (s *statementTimes) TraceBatchEnd(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchEndData) {
	b, ok := ctx.Value(batchKey{}).(*batchTrace)
	if !ok {
		return
	}
	key := "batch: " + strings.Join(b.sqls, " + ")
	s.note(key, key, b.start)
}

// startSteps starts noting the statements of a sync in order.
func (s *statementTimes) startSteps() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.steps, s.since = nil, time.Now()
}

// logSteps logs the statements noted since startSteps, in order, and
// stops noting them.
func (s *statementTimes) logSteps(tb testing.TB) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, st := range s.steps {
		tb.Logf("%8.3f ms  %7.3f ms  %s", st.at.Seconds()*1000, st.took.Seconds()*1000, st.sql)
	}
	s.steps, s.since = nil, time.Time{}
}

// report logs the statements by time spent (FINSYNC_BENCH_SYNC_TRACE=1) and
// starts counting afresh.
func (s *statementTimes) report(b *testing.B) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if os.Getenv("FINSYNC_BENCH_SYNC_TRACE") == "1" {
		keys := make([]string, 0, len(s.times))
		for k := range s.times {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, func(a, c string) int { return int(s.times[c] - s.times[a]) })
		for _, k := range keys {
			b.Logf("%10.3fs  %s", s.times[k].Seconds(), k)
		}
	}
	clear(s.times)
}

// tracedPool opens a pool on the database whose statements s times, as
// the worker opens its own (storage.Open) but without a statement timeout:
// the ceilings' single statements over a million rows run longer.
func tracedPool(tb testing.TB, dbURL string, s *statementTimes) *pgxpool.Pool {
	tb.Helper()
	pool, err := storage.Open(context.Background(), dbURL, storage.Options{Tracer: s, StatementTimeout: time.Hour})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(pool.Close)
	return pool
}

// benchSize returns the history size, or skips unless FINSYNC_BENCH_SYNC=1.
func benchSize(b *testing.B) int {
	b.Helper()
	if os.Getenv("FINSYNC_BENCH_SYNC") != "1" {
		b.Skip("set FINSYNC_BENCH_SYNC=1 to run the sync benchmarks")
	}
	if os.Getenv("GOGC") == "" {
		// As "finsync worker" runs.
		old := debug.SetGCPercent(worker.DefaultGCPercent)
		b.Cleanup(func() { debug.SetGCPercent(old) })
	}
	if v := os.Getenv("FINSYNC_BENCH_SYNC_TX"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			b.Fatalf("FINSYNC_BENCH_SYNC_TX=%q: want a positive integer", v)
		}
		return n
	}
	return benchHistory
}

// newBenchEnv builds the environment; mercuryOpts tune the Mercury adapter.
func newBenchEnv(tb testing.TB, mercuryOpts ...mercury.Option) *benchEnv {
	tb.Helper()
	_, dbURL := storagetest.NewDB(tb)
	tracer := &statementTimes{times: map[string]time.Duration{}}
	pool := tracedPool(tb, dbURL, tracer)
	s := allsim.New(sim.Options{Seed: 11, Start: time.Date(2026, 6, 15, 0, 0, 0, 0, time.UTC), DailyQuota: -1, MemoBytes: benchMemoBytes})
	srv := httptest.NewServer(s)
	tb.Cleanup(srv.Close)
	box, err := secrets.FromHex(strings.Repeat("2e", 32))
	if err != nil {
		tb.Fatal(err)
	}
	client := &http.Client{Timeout: 5 * time.Minute}
	provs, err := worker.NewProviders(all.NewRegistry(), worker.ProviderOptions{Unlimited: true, HTTPClient: client})
	if err != nil {
		tb.Fatal(err)
	}
	e := &benchEnv{tb: tb, pool: pool, st: storage.New(pool), sim: s, root: srv.URL, box: box, counts: map[string]*countingProvider{}, tracer: tracer}
	clock := func() time.Time {
		day, err := time.Parse(time.DateOnly, s.State().Today)
		if err != nil {
			panic(err)
		}
		return day.Add(12 * time.Hour)
	}
	mercuryOpts = append(mercuryOpts, mercury.WithClock(clock))
	provs["mercury"] = providers.NewResilient(mercury.New(client, mercuryOpts...), resilience.Config{Limits: &resilience.Limits{}})
	for name, p := range provs {
		c := &countingProvider{Provider: p}
		e.counts[name], provs[name] = c, c
	}
	e.syncer = &worker.Syncer{
		Store: e.st, Providers: provs, Box: box,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Now: clock,
	}
	e.user, err = e.st.CreateUser(context.Background(), uuid.NewString()+"@example.com", domain.PlanPro, true)
	if err != nil {
		tb.Fatal(err)
	}
	return e
}

// connect sizes a simulator connection's history and registers it.
func (e *benchEnv) connect(provider, name string, txs, days int) domain.BankConnection {
	e.tb.Helper()
	creds := allsim.Credentials(provider, name)
	key, err := allsim.CredentialKey(provider, creds)
	if err != nil {
		e.tb.Fatal(err)
	}
	if err := e.sim.SetConnection(sim.ConnectionSettings{Provider: provider, Credential: key, Transactions: txs, HistoryDays: days}); err != nil {
		e.tb.Fatal(err)
	}
	sealed, err := e.box.Seal(creds)
	if err != nil {
		e.tb.Fatal(err)
	}
	c, err := e.st.CreateConnection(context.Background(), storage.NewConnection{
		UserID: e.user.ID, Provider: provider, BaseURL: allsim.BaseURL(provider, e.root), SealedCredentials: sealed,
	})
	if err != nil {
		e.tb.Fatal(err)
	}
	return c
}

// sync runs one sync and returns its duration and the rows the provider
// returned.
func (e *benchEnv) sync(c domain.BankConnection) (time.Duration, int64) {
	e.tb.Helper()
	counter := e.counts[c.Provider]
	before, fetchBefore := counter.rows.Load(), counter.fetch.Load()
	steps := os.Getenv("FINSYNC_BENCH_SYNC_TRACE") == "steps"
	if steps {
		e.tracer.startSteps()
	}
	start := time.Now()
	if err := e.syncer.Sync(context.Background(), c.ID); err != nil {
		e.tb.Fatalf("sync %s: %v", c.Provider, err)
	}
	d := time.Since(start)
	if steps {
		e.tracer.logSteps(e.tb)
	}
	if trace := os.Getenv("FINSYNC_BENCH_SYNC_TRACE"); trace == "1" || steps {
		e.tb.Logf("sync %s: %v, %v fetching pages", c.Provider, d, time.Duration(counter.fetch.Load()-fetchBefore))
	}
	return d, counter.rows.Load() - before
}

// stored counts a connection's stored transactions.
func (e *benchEnv) stored(c domain.BankConnection) int {
	e.tb.Helper()
	var n int
	if err := e.pool.QueryRow(context.Background(), `SELECT count(*) FROM transactions WHERE bank_connection_id = $1`, c.ID).Scan(&n); err != nil {
		e.tb.Fatal(err)
	}
	return n
}

// settle vacuums and analyzes the stored transactions, as autovacuum does
// some time after a large first sync, and checkpoints, as the server does
// within minutes of one, so that timed syncs see the steady state rather
// than compete with the first sync's aftermath (about a gigabyte of WAL
// for a million rows, whose checkpoint would otherwise write it out during
// the timed sync).
func (e *benchEnv) settle() {
	e.tb.Helper()
	for _, sql := range []string{`VACUUM (ANALYZE) transactions`, `CHECKPOINT`} {
		if _, err := e.pool.Exec(context.Background(), sql); err != nil {
			e.tb.Fatal(err)
		}
	}
}

// BenchmarkSyncFirstPlaid measures a first sync of one Plaid connection
// (pages of 500 from /transactions/sync) end to end into PostgreSQL: the
// accounts, every transaction page with its cursor in one database
// transaction, and the investments the item offers.
func BenchmarkSyncFirstPlaid(b *testing.B) {
	size := benchSize(b)
	e := newBenchEnv(b)
	var elapsed time.Duration
	var rows int64
	for i := range b.N {
		b.StopTimer()
		c := e.connect("plaid", fmt.Sprintf("first-%d", i), size, 365)
		b.StartTimer()
		d, n := e.sync(c)
		elapsed, rows = elapsed+d, rows+n
		b.StopTimer()
		if got := e.stored(c); int64(got) != n || got < size*9/10 {
			b.Fatalf("%d transactions stored, %d received, history %d", got, n, size)
		}
		b.StartTimer()
	}
	e.tracer.report(b)
	b.ReportMetric(float64(rows)/elapsed.Seconds(), "tx/s")
	b.ReportMetric(float64(rows)/float64(b.N), "tx/sync")
}

// BenchmarkSyncResyncMercuryWholeWindow measures a re-sync of unchanged
// data where the provider returns the whole window again: a Mercury
// connection whose adapter re-reads more days than the history spans, so
// every stored transaction comes back and must be skipped as unchanged.
func BenchmarkSyncResyncMercuryWholeWindow(b *testing.B) {
	size := benchSize(b)
	const days = 90
	e := newBenchEnv(b, mercury.WithHistoryDays(days+10), mercury.WithOverlapDays(days+10))
	c := e.connect("mercury", "resync", size, days)
	first, n := e.sync(c)
	b.Logf("untimed first sync: %v (%.0f tx/s)", first, float64(n)/first.Seconds())
	e.settle()
	stored := e.stored(c)
	e.tracer.report(b)
	var elapsed time.Duration
	var rows int64
	b.ResetTimer()
	for range b.N {
		d, n := e.sync(c)
		elapsed, rows = elapsed+d, rows+n
	}
	b.StopTimer()
	if rows/int64(b.N) < int64(stored) {
		b.Fatalf("re-sync returned %d rows, %d stored: not the whole window", rows/int64(b.N), stored)
	}
	if got := e.stored(c); got != stored {
		b.Fatalf("re-sync changed the stored count: %d -> %d", stored, got)
	}
	e.tracer.report(b)
	b.ReportMetric(float64(rows)/elapsed.Seconds(), "tx/s")
	b.ReportMetric(float64(rows)/float64(b.N), "tx/sync")
}

// BenchmarkSyncIncrementalPlaid measures an incremental Plaid sync after
// the simulator moves one day on, adding 100 new transactions (and posting
// or dropping the previous days' pending ones), on a connection with 1,000
// stored and on one with the full history stored, each in its own database
// and simulator. The two are synced alternately (the order swaps every
// run), so that load from elsewhere on the machine falls on both alike.
// Each size reports the median and maximum of 10 syncs; the first syncs that
// store the histories, and the vacuum after them, are not timed.
func BenchmarkSyncIncrementalPlaid(b *testing.B) {
	size := benchSize(b)
	sizes := []int{1000, size}
	envs := make([]*benchEnv, len(sizes))
	conns := make([]domain.BankConnection, len(sizes))
	for k, n := range sizes {
		envs[k] = newBenchEnv(b)
		conns[k] = envs[k].connect("plaid", "incremental", n, n/newPerDay)
		envs[k].sync(conns[k])
		envs[k].settle()
		envs[k].tracer.report(b)
	}
	times := make([][]time.Duration, len(sizes))
	rows := make([]int64, len(sizes))
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	var ruBefore syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ruBefore); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		for run := range incrementalRuns {
			for j := range sizes {
				k := (j + run) % len(sizes)
				b.StopTimer()
				if err := envs[k].sim.Advance(1); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				d, n := envs[k].sync(conns[k])
				times[k], rows[k] = append(times[k], d), rows[k]+n
			}
		}
	}
	b.StopTimer()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	var ruAfter syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ruAfter); err != nil {
		b.Fatal(err)
	}
	cpu := time.Duration(ruAfter.Utime.Nano() + ruAfter.Stime.Nano() - ruBefore.Utime.Nano() - ruBefore.Stime.Nano())
	b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N*incrementalRuns*len(sizes)), "cpu-ms/sync")
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/1e6/float64(b.N*incrementalRuns*len(sizes)), "MB-alloc/sync")
	b.ReportMetric(float64(after.NumGC-before.NumGC)/float64(b.N*incrementalRuns*len(sizes)), "GC/sync")
	for k, n := range sizes {
		envs[k].tracer.report(b)
		slices.Sort(times[k])
		t := times[k]
		median := (t[(len(t)-1)/2] + t[len(t)/2]) / 2
		b.ReportMetric(float64(median.Microseconds())/1000, fmt.Sprintf("ms-median-%d-stored", n))
		b.ReportMetric(float64(t[len(t)-1].Microseconds())/1000, fmt.Sprintf("ms-max-%d-stored", n))
		b.ReportMetric(float64(rows[k])/float64(len(t)), fmt.Sprintf("tx/sync-%d-stored", n))
	}
}

// TestWholeWindowResyncWritesNothing guards what the re-sync benchmark
// relies on: when the provider returns the whole window again unchanged,
// no row is rewritten (so no rule runs: a sync's session runs the rules
// on the rows it writes) and a change on the provider side is still
// picked up.
func TestWholeWindowResyncWritesNothing(t *testing.T) {
	e := newBenchEnv(t, mercury.WithHistoryDays(40), mercury.WithOverlapDays(40))
	var logged bytes.Buffer
	e.syncer.Log = slog.New(slog.NewJSONHandler(&logged, nil))
	// written is what the last sync reported writing: added plus modified.
	written := func() int64 {
		t.Helper()
		lines := strings.Split(strings.TrimSpace(logged.String()), "\n")
		var line struct {
			Msg             string
			Added, Modified int64
		}
		if err := json.Unmarshal([]byte(lines[len(lines)-1]), &line); err != nil || line.Msg != "sync finished" {
			t.Fatalf("last log line %q: %v", lines[len(lines)-1], err)
		}
		return line.Added + line.Modified
	}
	c := e.connect("mercury", "whole-window", 3000, 30)
	e.sync(c)
	stored := e.stored(c)
	if stored == 0 || written() == 0 {
		t.Fatalf("first sync: %d rows stored, %d written", stored, written())
	}
	var before time.Time
	if err := e.pool.QueryRow(context.Background(), `SELECT max(updated_at) FROM transactions WHERE bank_connection_id = $1`, c.ID).Scan(&before); err != nil {
		t.Fatal(err)
	}
	if _, rows := e.sync(c); rows < int64(stored) {
		t.Fatalf("re-sync received %d rows, %d stored: not the whole window", rows, stored)
	}
	var after time.Time
	if err := e.pool.QueryRow(context.Background(), `SELECT max(updated_at) FROM transactions WHERE bank_connection_id = $1`, c.ID).Scan(&after); err != nil {
		t.Fatal(err)
	}
	if written() != 0 || !after.Equal(before) || e.stored(c) != stored {
		t.Fatalf("unchanged re-sync wrote %d rows, updated_at %v -> %v", written(), before, after)
	}
	// A day later the provider has new and settled transactions.
	if err := e.sim.Advance(1); err != nil {
		t.Fatal(err)
	}
	e.sync(c)
	if written() == 0 || e.stored(c) <= stored {
		t.Fatalf("changes after a day not stored: %d rows written, %d stored", written(), e.stored(c))
	}
}
