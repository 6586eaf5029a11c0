package worker_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/internal/metricstest"
	"github.com/finsync/finsync/jobargs"
	"github.com/finsync/finsync/providers/all"
	"github.com/finsync/finsync/providers/all/allsim"
	"github.com/finsync/finsync/providers/sim"
	"github.com/finsync/finsync/storage"
	"github.com/finsync/finsync/worker"
)

// logBuffer collects a logger's JSON lines; safe for concurrent use.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// lines returns the decoded lines whose message is msg.
func (b *logBuffer) lines(t *testing.T, msg string) []map[string]any {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []map[string]any
	for l := range strings.Lines(b.buf.String()) {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		if m["msg"] == msg {
			out = append(out, m)
		}
	}
	return out
}

// requireKeys fails unless the line has exactly slog's own keys and want.
func requireKeys(t *testing.T, line map[string]any, want ...string) {
	t.Helper()
	want = append(want, "time", "level", "msg")
	got := slices.Sorted(maps.Keys(line))
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("log line keys %v, want exactly %v", got, want)
	}
}

// num reads a number from a decoded log line.
func num(line map[string]any, key string) int64 {
	f, _ := line[key].(float64)
	return int64(f)
}

// sample is metricstest.Sample.
func sample(t *testing.T, g prometheus.Gatherer, name string, labels map[string]string) (float64, bool) {
	t.Helper()
	return metricstest.Sample(t, g, name, labels)
}

// instrument gives the env's syncer metrics on a fresh registry, adapters
// that report their calls to them, and a logger writing to the returned
// buffer.
func (e *syncEnv) instrument() (*prometheus.Registry, *worker.Metrics, *logBuffer) {
	e.t.Helper()
	reg := prometheus.NewRegistry()
	m := worker.NewMetrics(reg, all.NewRegistry().Names())
	provs, err := worker.NewProviders(all.NewRegistry(), worker.ProviderOptions{Unlimited: true, Metrics: m})
	if err != nil {
		e.t.Fatal(err)
	}
	reg.MustRegister(worker.NewBreakerCollector(provs), worker.NewLastSyncCollector(e.st, all.NewRegistry().Names()))
	logs := &logBuffer{}
	e.syncer.Providers, e.syncer.Metrics = provs, m
	e.syncer.Log = slog.New(slog.NewJSONHandler(logs, nil))
	return reg, m, logs
}

// syncKeys are the keys of the one log line of a sync.
var syncKeys = []string{"connection_id", "provider", "duration_ms", "pages", "added", "modified", "removed", "outcome", "error_class"}

// TestSyncThroughRiverReportsTheWholeSync runs two syncs through the real
// River worker, the first cut into many slices: each logs exactly one line
// with the sync keys, for the whole sync, and moves the sync duration, rows
// and last-success metrics and the provider call histogram by exactly what
// it stored.
func TestSyncThroughRiverReportsTheWholeSync(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	e := newSyncEnv(t)
	reg, _, logs := e.instrument()
	const name = "metrics"
	key, err := allsim.CredentialKey("plaid", allsim.Credentials("plaid", name))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.sim.SetConnection(sim.ConnectionSettings{Provider: "plaid", Credential: key, Transactions: 3000, HistoryDays: 120}); err != nil {
		t.Fatal(err)
	}
	c := e.connect("plaid", name)
	e.syncer.Slice = time.Nanosecond
	client, err := worker.NewClient(worker.Config{Store: e.st, Log: e.syncer.Log, Syncer: e.syncer})
	if err != nil {
		t.Fatal(err)
	}
	events, stopEvents := client.Subscribe(river.EventKindJobCompleted, river.EventKindJobFailed, river.EventKindJobSnoozed)
	defer stopEvents()
	if err := client.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Stop(context.Background()) })
	runSync := func() int {
		t.Helper()
		job, err := client.Insert(ctx, jobargs.SyncConnection{ConnectionID: c.ID}, nil)
		if err != nil {
			t.Fatal(err)
		}
		snoozes := 0
		for {
			select {
			case ev := <-events:
				if ev.Job.ID != job.Job.ID {
					continue
				}
				switch ev.Kind {
				case river.EventKindJobSnoozed:
					snoozes++
					continue
				case river.EventKindJobCompleted:
					return snoozes
				}
				t.Fatalf("sync job ended %s: %v", ev.Job.State, ev.Job.Errors)
			case <-ctx.Done():
				t.Fatal("the sync did not complete")
			}
		}
	}
	rows := `SELECT count(*) FROM transactions WHERE bank_connection_id = $1`
	deleted := `SELECT count(*) FROM transactions WHERE bank_connection_id = $1 AND status = 'deleted'`
	before := time.Now()
	snoozes := runSync()
	if snoozes < 3 {
		t.Fatalf("%d snoozes: the sync was not sliced", snoozes)
	}
	lines := logs.lines(t, "sync finished")
	if len(lines) != 1 {
		t.Fatalf("%d sync lines for one sync of %d slices, want 1", len(lines), snoozes+1)
	}
	first := lines[0]
	requireKeys(t, first, syncKeys...)
	stored := int64(e.count(rows, c.ID))
	if first["connection_id"] != c.ID.String() || first["provider"] != "plaid" || first["outcome"] != "ok" || first["error_class"] != "" ||
		num(first, "added") != stored || num(first, "pages") < int64(snoozes) || num(first, "removed") != 0 || num(first, "duration_ms") < 1 {
		t.Fatalf("sync line %v: want the whole sync (%d rows stored over at least %d pages)", first, stored, snoozes)
	}
	ok := map[string]string{"provider": "plaid", "outcome": "ok"}
	if n, _ := sample(t, reg, "finsync_sync_duration_seconds", ok); n != 1 {
		t.Fatalf("%v syncs observed, want 1", n)
	}
	if n, _ := sample(t, reg, "finsync_sync_rows_total", map[string]string{"provider": "plaid", "change": "added"}); int64(n) != stored {
		t.Fatalf("rows added counted %v, %d stored", n, stored)
	}
	last, _ := sample(t, reg, "finsync_last_successful_sync_timestamp_seconds", map[string]string{"provider": "plaid"})
	if last < float64(before.Unix()) || last > float64(time.Now().Unix()+1) {
		t.Fatalf("last successful sync at %v, want between %v and now", last, before.Unix())
	}
	calls, _ := sample(t, reg, "finsync_provider_request_duration_seconds", map[string]string{"provider": "plaid", "operation": "transactions", "outcome": "ok"})
	if int64(calls) < num(first, "pages") {
		t.Fatalf("%v transactions calls observed for %d pages", calls, num(first, "pages"))
	}
	if n, _ := sample(t, reg, "finsync_provider_request_duration_seconds", map[string]string{"provider": "plaid", "operation": "accounts", "outcome": "ok"}); n < 1 {
		t.Fatal("no accounts call observed")
	}

	// Days pass: new rows, posted pending ones (their pending rows removed).
	if err := e.sim.Advance(5); err != nil {
		t.Fatal(err)
	}
	deletedBefore := int64(e.count(deleted, c.ID))
	runSync()
	lines = logs.lines(t, "sync finished")
	if len(lines) != 2 {
		t.Fatalf("%d sync lines after two syncs", len(lines))
	}
	second := lines[1]
	requireKeys(t, second, syncKeys...)
	added, removed := int64(e.count(rows, c.ID))-stored, int64(e.count(deleted, c.ID))-deletedBefore
	if added == 0 || removed == 0 || num(second, "added") != added || num(second, "removed") != removed {
		t.Fatalf("second sync line %v: %d rows added and %d removed in the database", second, added, removed)
	}
	for change, want := range map[string]int64{"added": stored + added, "removed": removed, "modified": num(second, "modified")} {
		if n, _ := sample(t, reg, "finsync_sync_rows_total", map[string]string{"provider": "plaid", "change": change}); int64(n) != want {
			t.Fatalf("rows %s counted %v, want %d", change, n, want)
		}
	}
	if n, _ := sample(t, reg, "finsync_sync_duration_seconds", ok); n != 2 {
		t.Fatalf("%v syncs observed, want 2", n)
	}
}

// TestProviderOutageMovesOutcomesAndBreaker syncs during a simulated
// outage: the provider calls are observed with the unavailable outcome,
// the syncs end unavailable (logged with that class), and the breaker
// gauge goes from closed to open.
func TestProviderOutageMovesOutcomesAndBreaker(t *testing.T) {
	e := newSyncEnv(t)
	reg, _, logs := e.instrument()
	c := e.connect("stripe", "outage-metrics")
	e.mustSync(c)
	breaker := map[string]string{"provider": "stripe"}
	if v, ok := sample(t, reg, "finsync_provider_breaker_state", breaker); !ok || v != 0 {
		t.Fatalf("breaker gauge before the outage: %v (present %v), want 0", v, ok)
	}
	if err := e.sim.SetFault(sim.Fault{Provider: "stripe", Mode: sim.FaultOutage}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10; i++ {
		if v, _ := sample(t, reg, "finsync_provider_breaker_state", breaker); v == 2 {
			break
		}
		if err := e.sync(c); err == nil {
			t.Fatal("sync succeeded during an outage")
		}
	}
	if v, _ := sample(t, reg, "finsync_provider_breaker_state", breaker); v != 2 {
		t.Fatalf("breaker gauge %v after the outage's syncs, want 2 (open)", v)
	}
	failed, _ := sample(t, reg, "finsync_provider_request_duration_seconds", map[string]string{"provider": "stripe", "operation": "accounts", "outcome": "unavailable"})
	if failed < 5 {
		t.Fatalf("%v unavailable accounts calls observed, want at least the breaker's 5", failed)
	}
	unavailable, _ := sample(t, reg, "finsync_sync_duration_seconds", map[string]string{"provider": "stripe", "outcome": "unavailable"})
	if unavailable < 1 {
		t.Fatal("no unavailable sync observed")
	}
	var failedLines int
	for _, l := range logs.lines(t, "sync finished") {
		requireKeys(t, l, syncKeys...)
		if l["outcome"] == "unavailable" {
			if l["error_class"] != "unavailable" || l["level"] != "WARN" {
				t.Fatalf("failed sync line %v", l)
			}
			failedLines++
		}
	}
	if float64(failedLines) != unavailable {
		t.Fatalf("%d failed sync lines, %v failed syncs observed", failedLines, unavailable)
	}
}

// TestDeliveryMovesLagAndLogs changes an account with a webhook destination
// linked through the API: the delivery worker logs the drain with its keys
// and the request's id, and sets the
// lag gauge of the webhook kind to the event's age at delivery.
func TestDeliveryMovesLagAndLogs(t *testing.T) {
	w := newDestWorld(t)
	reg := prometheus.NewRegistry()
	w.metrics = worker.NewMetrics(reg, nil)
	logs := &logBuffer{}
	w.log = slog.New(slog.NewJSONHandler(logs, nil))
	dest := w.webhook(true)
	before := time.Now()
	w.start()
	w.createAccount("Lagged")
	w.waitDelivered()
	lag, ok := sample(t, reg, "finsync_destination_delivery_lag_seconds", map[string]string{"kind": "webhook"})
	if !ok || lag <= 0 || lag > time.Since(before).Seconds() {
		t.Fatalf("delivery lag %v (present %v), want within the %s the test took", lag, ok, time.Since(before))
	}
	lines := logs.lines(t, "destination delivery")
	if len(lines) == 0 {
		t.Fatal("no delivery line")
	}
	var items int64
	for _, l := range lines {
		// The account change came from an API request: its delivery job
		// carries the request's id.
		requireKeys(t, l, "destination_id", "kind", "duration_ms", "items", "outcome", "error_class", "request_id")
		if id, _ := l["request_id"].(string); id == "" {
			t.Fatalf("delivery line without the request id: %v", l)
		}
		if l["destination_id"] != dest.String() || l["kind"] != "webhook" || l["outcome"] != "ok" || l["error_class"] != "" {
			t.Fatalf("delivery line %v", l)
		}
		items += num(l, "items")
	}
	if got := int64(len(w.hook.events())); items != got {
		t.Fatalf("delivery lines count %d items, the receiver got %d events", items, got)
	}
}

// TestRiverJobsGaugeHasEveryStateAndKind scrapes the River jobs collector
// of an empty queue (a zero for every state of every kind), then of a queue
// with jobs.
func TestRiverJobsGaugeHasEveryStateAndKind(t *testing.T) {
	e := newSyncEnv(t)
	cfg := worker.Config{Store: e.st, Syncer: e.syncer, Destinations: &worker.Destinations{}}
	kinds := worker.JobKinds(cfg)
	if len(kinds) != 4 {
		t.Fatalf("kinds %v, want finsync's four", kinds)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(worker.NewJobCollector(e.st, kinds))
	for _, state := range rivertype.JobStates() {
		for _, kind := range kinds {
			v, ok := sample(t, reg, "finsync_river_jobs", map[string]string{"state": string(state), "kind": kind})
			if !ok || v != 0 {
				t.Fatalf("%s %s: %v (present %v), want a zero", state, kind, v, ok)
			}
		}
	}
	inserter, err := worker.NewInsertClient(storage.New(e.pool))
	if err != nil {
		t.Fatal(err)
	}
	c := e.connect("plaid", "queued")
	if _, err := inserter.Insert(context.Background(), jobargs.SyncConnection{ConnectionID: c.ID}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := e.pool.Exec(context.Background(), `INSERT INTO river_job (state, kind, queue, args, max_attempts, finalized_at)
		SELECT 'completed', 'apply_rules', 'rules', '{}', 1, now() FROM generate_series(1, $1)`, worker.JobCountCap+5); err != nil {
		t.Fatal(err)
	}
	// A new collector: the first one serves its counts for JobCountTTL.
	fresh := prometheus.NewRegistry()
	fresh.MustRegister(worker.NewJobCollector(e.st, kinds))
	for series, want := range map[[2]string]float64{
		{"available", "sync_connection"}: 1,
		{"completed", "apply_rules"}:     worker.JobCountCap,
		{"available", "apply_rules"}:     0,
	} {
		if v, _ := sample(t, fresh, "finsync_river_jobs", map[string]string{"state": series[0], "kind": series[1]}); v != want {
			t.Fatalf("%s %s: %v, want %v", series[0], series[1], v, want)
		}
	}
}

// TestLastSuccessGaugeComesFromTheDatabase checks that the last-success
// gauge has a series from a process's start for every provider with
// connections, before any success (the oldest connection's creation), and
// that a new process (a restart) reads the last success stored by another.
func TestLastSuccessGaugeComesFromTheDatabase(t *testing.T) {
	e := newSyncEnv(t)
	names := all.NewRegistry().Names()
	fresh := func() *prometheus.Registry {
		reg := prometheus.NewRegistry()
		reg.MustRegister(worker.NewLastSyncCollector(e.st, names))
		return reg
	}
	plaid := map[string]string{"provider": "plaid"}
	if _, ok := sample(t, fresh(), "finsync_last_successful_sync_timestamp_seconds", plaid); ok {
		t.Fatal("a series for a provider with no connection")
	}
	before := time.Now().Add(-time.Second)
	c := e.connect("plaid", "gauge")
	created, ok := sample(t, fresh(), "finsync_last_successful_sync_timestamp_seconds", plaid)
	if !ok || created < float64(before.Unix()) || created > float64(time.Now().Unix()+1) {
		t.Fatalf("never-synced provider: %v (present %v), want its connection's creation time", created, ok)
	}
	if err := e.sync(c); err != nil {
		t.Fatal(err)
	}
	// A new collector, as in a restarted worker that synced nothing.
	last, ok := sample(t, fresh(), "finsync_last_successful_sync_timestamp_seconds", plaid)
	if !ok || last < created || last > float64(time.Now().Unix()+1) {
		t.Fatalf("after a sync: %v (present %v), want the sync's time (after %v)", last, ok, created)
	}
	var stored time.Time
	if err := e.pool.QueryRow(context.Background(), `SELECT last_synced_at FROM bank_connections WHERE id = $1`, c.ID).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if want := float64(stored.UnixNano()) / 1e9; last != want {
		t.Fatalf("gauge %v, stored last sync %v", last, want)
	}
}

// TestSyncHeldBackByAnOpenBreakerIsNoFailure opens stripe's breaker, then
// runs a sync job through River: it snoozes without calling the provider,
// and logs no sync line, observes no sync, counts no failure and keeps the
// connection's last real provider error, while its health shows the
// breaker open.
func TestSyncHeldBackByAnOpenBreakerIsNoFailure(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	e := newSyncEnv(t)
	reg, _, logs := e.instrument()
	c := e.connect("stripe", "held-back")
	e.mustSync(c)
	if err := e.sim.SetFault(sim.Fault{Provider: "stripe", Mode: sim.FaultOutage}); err != nil {
		t.Fatal(err)
	}
	breaker := map[string]string{"provider": "stripe"}
	for i := 0; i < 10; i++ {
		if v, _ := sample(t, reg, "finsync_provider_breaker_state", breaker); v == 2 {
			break
		}
		if err := e.sync(c); err == nil {
			t.Fatal("sync succeeded during an outage")
		}
	}
	if v, _ := sample(t, reg, "finsync_provider_breaker_state", breaker); v != 2 {
		t.Fatalf("breaker gauge %v, want 2 (open)", v)
	}
	type state struct {
		failures int
		code     string
	}
	read := func() state {
		var s state
		if err := e.pool.QueryRow(ctx, `SELECT consecutive_failures, coalesce(last_provider_error_code, '') FROM bank_connections WHERE id = $1`,
			c.ID).Scan(&s.failures, &s.code); err != nil {
			t.Fatal(err)
		}
		return s
	}
	before := read()
	if before.failures == 0 || before.code == "" {
		t.Fatalf("after the outage's syncs: %+v, want failures and an error code", before)
	}
	// The provider's own error, as the last one a call returned: a held-back
	// sync must leave it in place.
	const real = "PROVIDER_DOWN_FOR_TEST"
	if _, err := e.pool.Exec(ctx, `UPDATE bank_connections SET last_provider_error_code = $2 WHERE id = $1`, c.ID, real); err != nil {
		t.Fatal(err)
	}
	before.code = real
	lines := len(logs.lines(t, "sync finished"))
	syncs := 0.0
	for _, o := range []string{"ok", "unavailable"} {
		n, _ := sample(t, reg, "finsync_sync_duration_seconds", map[string]string{"provider": "stripe", "outcome": o})
		syncs += n
	}
	calls := func() float64 {
		n, _ := sample(t, reg, "finsync_provider_request_duration_seconds", map[string]string{"provider": "stripe", "operation": "accounts", "outcome": "unavailable"})
		return n
	}
	callsBefore := calls()

	client, err := worker.NewClient(worker.Config{Store: e.st, Log: e.syncer.Log, Syncer: e.syncer})
	if err != nil {
		t.Fatal(err)
	}
	events, stopEvents := client.Subscribe(river.EventKindJobCompleted, river.EventKindJobFailed, river.EventKindJobSnoozed, river.EventKindJobCancelled)
	defer stopEvents()
	if err := client.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Stop(context.Background()) })
	job, err := client.Insert(ctx, jobargs.SyncConnection{ConnectionID: c.ID}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for done := false; !done; {
		select {
		case ev := <-events:
			if ev.Job.ID != job.Job.ID {
				continue
			}
			if ev.Kind != river.EventKindJobSnoozed {
				t.Fatalf("sync job ended %s behind an open breaker, want a snooze: %v", ev.Job.State, ev.Job.Errors)
			}
			done = true
		case <-ctx.Done():
			t.Fatal("the sync job did not snooze")
		}
	}
	if after := read(); after != before {
		t.Fatalf("connection after a held-back sync: %+v, want unchanged %+v", after, before)
	}
	if n := len(logs.lines(t, "sync finished")); n != lines {
		t.Fatalf("%d sync lines after a held-back sync, want %d", n, lines)
	}
	after := 0.0
	for _, o := range []string{"ok", "unavailable"} {
		n, _ := sample(t, reg, "finsync_sync_duration_seconds", map[string]string{"provider": "stripe", "outcome": o})
		after += n
	}
	if after != syncs {
		t.Fatalf("%v syncs observed after a held-back sync, want %v", after, syncs)
	}
	if n := calls(); n != callsBefore {
		t.Fatalf("held-back sync called the provider (%v calls, %v before)", n, callsBefore)
	}
	health, err := e.st.GetConnectionHealth(ctx, []domain.BankConnection{c})
	if err != nil {
		t.Fatal(err)
	}
	if h := health[c.ID]; h.Breaker != storage.BreakerOpen || h.ConsecutiveFailures != before.failures {
		t.Fatalf("health %+v, want the breaker open and %d failures", h, before.failures)
	}
	if h := health[c.ID]; h.HeldBackReason == nil || *h.HeldBackReason != storage.HeldBackBreakerOpen ||
		h.HeldBackUntil == nil || !h.HeldBackUntil.After(time.Now()) {
		t.Fatalf("health %+v, want the sync held back by the open breaker, until a time to come", h)
	}
}
