package main

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/jobargs"
	"github.com/finsync/finsync/providers/all"
	"github.com/finsync/finsync/providers/all/allsim"
	"github.com/finsync/finsync/providers/sim"
	"github.com/finsync/finsync/secrets"
	"github.com/finsync/finsync/storage"
	"github.com/finsync/finsync/storage/storagetest"
	"github.com/finsync/finsync/worker"
)

// recoveryWorld is a database, a simulator over HTTP, the finsync binary
// and the environment its worker processes share.
type recoveryWorld struct {
	t    *testing.T
	pool *pgxpool.Pool
	st   *storage.Store
	box  *secrets.Box
	bin  string
	env  []string
	root string
	sim  *sim.Simulator
	user domain.User
}

func newRecoveryWorld(t *testing.T) *recoveryWorld {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "finsync")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	pool, dbURL := storagetest.NewDB(t)
	encKey, err := secrets.Generate()
	if err != nil {
		t.Fatal(err)
	}
	cursorKey, err := secrets.Generate()
	if err != nil {
		t.Fatal(err)
	}
	box, err := secrets.FromHex(encKey)
	if err != nil {
		t.Fatal(err)
	}
	s := allsim.New(sim.Options{Seed: 3, Start: time.Date(2026, 6, 15, 0, 0, 0, 0, time.UTC)})
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	st := storage.New(pool)
	user, err := st.CreateUser(context.Background(), uuid.NewString()+"@example.com", domain.PlanPro, true)
	if err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "DATABASE_URL="+dbURL, "FINSYNC_ENCRYPTION_KEY="+encKey, "FINSYNC_CURSOR_KEY="+cursorKey)
	return &recoveryWorld{t: t, pool: pool, st: st, box: box, bin: bin, env: env, root: srv.URL, sim: s, user: user}
}

// connect registers a Plaid connection named name, whose simulated history
// holds n transactions.
func (w *recoveryWorld) connect(name string, n int) domain.BankConnection {
	w.t.Helper()
	creds := allsim.Credentials("plaid", name)
	key, err := allsim.CredentialKey("plaid", creds)
	if err != nil {
		w.t.Fatal(err)
	}
	if err := w.sim.SetConnection(sim.ConnectionSettings{Provider: "plaid", Credential: key, Transactions: n, HistoryDays: 365}); err != nil {
		w.t.Fatal(err)
	}
	sealed, err := w.box.Seal(creds)
	if err != nil {
		w.t.Fatal(err)
	}
	c, err := w.st.CreateConnection(context.Background(), storage.NewConnection{
		UserID: w.user.ID, Provider: "plaid", BaseURL: allsim.BaseURL("plaid", w.root), SealedCredentials: sealed,
	})
	if err != nil {
		w.t.Fatal(err)
	}
	return c
}

// workerProc is one running `finsync worker`.
type workerProc struct {
	cmd *exec.Cmd
	// exited closes when the process has exited, with its error in err.
	exited chan struct{}
	err    error
}

// startWorker starts a worker process; the test's end kills it if it runs.
func (w *recoveryWorld) startWorker(name string) *workerProc {
	w.t.Helper()
	cmd := exec.Command(w.bin, "worker", "--metrics-addr", "", "--no-provider-rate-limits")
	cmd.Env = w.env
	logf, err := os.Create(filepath.Join(w.t.TempDir(), name+".log"))
	if err != nil {
		w.t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		w.t.Fatal(err)
	}
	p := &workerProc{cmd: cmd, exited: make(chan struct{})}
	go func() { p.err = cmd.Wait(); logf.Close(); close(p.exited) }()
	w.t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.exited
	})
	return p
}

func (w *recoveryWorld) count(sql string, args ...any) int {
	w.t.Helper()
	var n int
	if err := w.pool.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		w.t.Fatal(err)
	}
	return n
}

// job is the state of a River job and when its current attempt began.
func (w *recoveryWorld) job(id int64) (string, time.Time) {
	w.t.Helper()
	var state string
	var at *time.Time
	if err := w.pool.QueryRow(context.Background(), `SELECT state, attempted_at FROM river_job WHERE id = $1`, id).Scan(&state, &at); err != nil {
		w.t.Fatal(err)
	}
	if at == nil {
		return state, time.Time{}
	}
	return state, *at
}

// await polls until cond holds, failing the test with what after limit.
func (w *recoveryWorld) await(limit time.Duration, what string, cond func() bool) time.Duration {
	w.t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > limit {
			w.t.Fatalf("%s: not within %s", what, limit)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return time.Since(start)
}

// snapshot is every stored transaction of a connection, by provider id.
func (w *recoveryWorld) snapshot(c domain.BankConnection) map[string]string {
	w.t.Helper()
	// A read of every row may outlast the pool's statement timeout on a
	// loaded machine; this one has none.
	tx, err := w.pool.Begin(context.Background())
	if err != nil {
		w.t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(context.Background()) }()
	if _, err := tx.Exec(context.Background(), `SET LOCAL statement_timeout = 0`); err != nil {
		w.t.Fatal(err)
	}
	rows, err := tx.Query(context.Background(), `
		SELECT provider_id, concat_ws('|', status, amount::text, currency, authorized_date::text, posted_date::text,
			summary, category_id::text, merchant_name, account_id::text IS NOT NULL, hidden)
		FROM transactions WHERE bank_connection_id = $1`, c.ID)
	if err != nil {
		w.t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var id, v string
		if err := rows.Scan(&id, &v); err != nil {
			w.t.Fatal(err)
		}
		out[id] = v
	}
	if err := rows.Err(); err != nil {
		w.t.Fatal(err)
	}
	return out
}

// TestWorkerStopAndKillMidSync runs a large first sync on worker processes
// and interrupts it twice: SIGTERM to the worker running it (the process
// exits within 30 s and another worker continues the sync at once), then
// kill -9 of the worker that took it over (a restarted worker continues it
// within 2 minutes, once River rescues the dead worker's job). The sync
// ends with exactly the rows of an uninterrupted sync of the same history.
func TestWorkerStopAndKillMidSync(t *testing.T) {
	if testing.Short() {
		t.Skip("starts worker processes and syncs 600,000 transactions")
	}
	const (
		history      = 600_000
		stopBound    = 30 * time.Second
		recoverBound = 2 * time.Minute
	)
	w := newRecoveryWorld(t)
	ctx := context.Background()
	const name = "recovery"
	reference := w.connect(name, history)
	provs, err := worker.NewProviders(all.NewRegistry(), worker.ProviderOptions{Unlimited: true})
	if err != nil {
		t.Fatal(err)
	}
	syncer := &worker.Syncer{Store: w.st, Providers: provs, Box: w.box, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	refStart := time.Now()
	if err := syncer.Sync(ctx, reference.ID); err != nil {
		t.Fatal(err)
	}
	refTook := time.Since(refStart)

	c := w.connect(name, history)
	rows := `SELECT count(*) FROM transactions WHERE bank_connection_id = $1`
	a := w.startWorker("a")
	jobs, err := worker.NewInsertClient(storage.New(w.pool))
	if err != nil {
		t.Fatal(err)
	}
	ins, err := jobs.Insert(ctx, jobargs.SyncConnection{ConnectionID: c.ID}, nil)
	if err != nil {
		t.Fatal(err)
	}
	id := ins.Job.ID
	w.await(time.Minute, "the sync storing its first rows on worker a", func() bool { return w.count(rows, c.ID) >= 20_000 })
	b := w.startWorker("b")

	// SIGTERM: a stops, checkpointing the sync, and b continues it.
	termAt := time.Now()
	atTerm := w.count(rows, c.ID)
	if err := a.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-a.exited:
		if a.err != nil {
			t.Fatalf("worker a after SIGTERM: %v", a.err)
		}
	case <-time.After(stopBound):
		t.Fatalf("worker a still running %s after SIGTERM", stopBound)
	}
	exitTook := time.Since(termAt)
	resumeTook := w.await(recoverBound, "the sync running again after SIGTERM", func() bool {
		state, at := w.job(id)
		return (state == "running" || state == "completed") && at.After(termAt)
	})
	w.await(time.Minute, "worker b storing rows", func() bool { return w.count(rows, c.ID) >= atTerm+20_000 })

	// kill -9 of b while it runs the sync; a worker restarted in its place
	// continues it.
	if state, _ := w.job(id); state != "running" {
		t.Fatalf("the sync is %s before the kill; the history is too small to interrupt it", state)
	}
	atKill := w.count(rows, c.ID)
	if err := b.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-b.exited
	killAt := time.Now()
	w.startWorker("a-restarted")
	rescueTook := w.await(recoverBound, "the sync running again after kill -9", func() bool {
		state, at := w.job(id)
		return (state == "running" || state == "completed") && at.After(killAt)
	})
	// A liveness bound, not a speed figure: this connection links the
	// reference's data a second time, which transfer detection finds full of
	// equal candidates; it stores about 2,700 rows/s here where the first link
	// stores about 12,000 (BENCHMARKS.md, "Transfer detection").
	w.await(12*time.Minute, "the sync completing", func() bool { state, _ := w.job(id); return state == "completed" })
	doneTook := time.Since(killAt)

	want, got := w.snapshot(reference), w.snapshot(c)
	if len(want) != len(got) {
		t.Fatalf("%d rows stored, %d by the uninterrupted sync", len(got), len(want))
	}
	for pid, v := range want {
		if got[pid] != v {
			t.Fatalf("row %s differs: %q, uninterrupted %q", pid, got[pid], v)
		}
	}
	var status string
	var lastErr *string
	if err := w.pool.QueryRow(ctx, `SELECT status, last_provider_error_code FROM bank_connections WHERE id = $1`, c.ID).Scan(&status, &lastErr); err != nil {
		t.Fatal(err)
	}
	if status != string(domain.ConnectionActive) || lastErr != nil {
		t.Fatalf("connection after the sync: %s, error %v", status, lastErr)
	}
	var attempts int
	var errs []string
	if err := w.pool.QueryRow(ctx, `SELECT attempt, ARRAY(SELECT e->>'error' FROM unnest(errors) e) FROM river_job WHERE id = $1`, id).Scan(&attempts, &errs); err != nil {
		t.Fatal(err)
	}
	if len(errs) != 1 {
		t.Fatalf("want exactly one recorded failure (the rescue after the kill), got %q", errs)
	}
	t.Logf("uninterrupted sync: %d rows in %s", len(want), refTook.Round(time.Millisecond))
	t.Logf("SIGTERM at %d rows: worker exited after %s, sync running again after %s", atTerm, exitTook.Round(time.Millisecond), resumeTook.Round(time.Millisecond))
	t.Logf("kill -9 at %d rows: sync running again after %s, completed %s after the kill; %d rows identical to the uninterrupted sync; job attempts %d, errors %q",
		atKill, rescueTook.Round(time.Millisecond), doneTook.Round(time.Millisecond), len(got), attempts, errs)
}
