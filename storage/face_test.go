package storage_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/jobargs"
	"github.com/finsync/finsync/storage"
	"github.com/finsync/finsync/storage/storagetest"
)

// TestConnectPingCloseAndStats opens a store by URL, checks that it
// answers, that its statistics and migrations read, and that Close
// closes it.
func TestConnectPingCloseAndStats(t *testing.T) {
	_, dbURL := storagetest.NewDB(t)
	ctx := context.Background()
	if err := storage.ValidateURL(dbURL); err != nil {
		t.Fatalf("ValidateURL(%s): %v", dbURL, err)
	}
	if err := storage.ValidateURL("postgres://user@host:notaport/db"); err == nil {
		t.Fatal("ValidateURL accepted a bad port")
	}
	st, err := storage.Connect(ctx, dbURL, storage.Options{MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	if s := st.PoolStats(); s.Total < 1 || s.Acquired != 0 {
		t.Fatalf("stats after a ping: %+v, want an open idle connection", s)
	}
	ok, err := st.AreMigrationsCurrent(ctx)
	if err != nil || !ok {
		t.Fatalf("migrations current: %v, %v", ok, err)
	}
	st.Close()
	if err := st.Ping(ctx); err == nil {
		t.Fatal("ping after Close succeeded")
	}
}

// TestMarkTimeoutMarksARealStatementTimeout runs a statement past a short
// statement timeout: its error is ErrStatementTimeout; another error is
// left alone.
func TestMarkTimeoutMarksARealStatementTimeout(t *testing.T) {
	_, dbURL := storagetest.NewDB(t)
	ctx := context.Background()
	pool, err := storage.Open(ctx, dbURL, storage.Options{StatementTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	_, err = pool.Exec(ctx, `SELECT pg_sleep(2)`)
	if got := storage.MarkTimeout(err); !errors.Is(got, storage.ErrStatementTimeout) {
		t.Fatalf("timed-out statement: %v, want ErrStatementTimeout", got)
	}
	_, err = pool.Exec(ctx, `SELECT 1/0`)
	if got := storage.MarkTimeout(err); errors.Is(got, storage.ErrStatementTimeout) || got != err {
		t.Fatalf("division by zero: %v, want the error itself", got)
	}
}

// TestAtomicCommitsOrRollsBackWritesAndJobsTogether writes a rule and
// enqueues a River job in one Atomic call: both stay when it returns nil,
// neither when it fails.
func TestAtomicCommitsOrRollsBackWritesAndJobsTogether(t *testing.T) {
	pool, _ := storagetest.NewDB(t)
	fx := storagetest.NewFixtures(t, pool)
	st := storage.New(pool)
	ctx := context.Background()
	jobs, err := river.NewClient(riverpgxv5.New(pool), &river.Config{})
	if err != nil {
		t.Fatal(err)
	}
	u := fx.User(domain.PlanPro, true)
	cat := fx.Category(u.ID, "Coffee", "Food")
	in := storage.RuleInput{Priority: 1,
		Conditions: json.RawMessage(`[{"field":"name","operator":"contains","value":"cafe"}]`),
		Outcomes:   json.RawMessage(`{"categoryId":"` + cat.String() + `"}`)}
	write := func(fail error) error {
		return st.Atomic(ctx, func(tx *storage.Tx) error {
			ok, err := tx.AreCategoriesOwned(ctx, u.ID, []uuid.UUID{cat})
			if err != nil || !ok {
				t.Fatalf("category owned: %v, %v", ok, err)
			}
			r, err := tx.CreateRule(ctx, u.ID, in, nil)
			if err != nil {
				return err
			}
			if err := tx.Enqueue(ctx, jobs, jobargs.ApplyRules{UserID: u.ID, RuleID: r.ID}); err != nil {
				return err
			}
			return fail
		})
	}
	count := func() (rules, queued int) {
		t.Helper()
		rs, err := st.ListRules(ctx, storage.Scope{UserID: u.ID}, true)
		if err != nil {
			t.Fatal(err)
		}
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE kind = $1`, jobargs.ApplyRules{}.Kind()).Scan(&queued); err != nil {
			t.Fatal(err)
		}
		return len(rs), queued
	}
	boom := errors.New("boom")
	if err := write(boom); !errors.Is(err, boom) {
		t.Fatalf("failing transaction: %v, want its own error", err)
	}
	if r, q := count(); r != 0 || q != 0 {
		t.Fatalf("after a rollback: %d rules, %d jobs; want none", r, q)
	}
	if err := write(nil); err != nil {
		t.Fatal(err)
	}
	if r, q := count(); r != 1 || q != 1 {
		t.Fatalf("after a commit: %d rules, %d jobs; want one of each", r, q)
	}
	// Without a job queue, Enqueue adds nothing and does not fail.
	if err := st.Atomic(ctx, func(tx *storage.Tx) error {
		return tx.Enqueue(ctx, nil, jobargs.ApplyRules{UserID: u.ID})
	}); err != nil {
		t.Fatal(err)
	}
	if _, q := count(); q != 1 {
		t.Fatalf("jobs after a nil queue: %d, want 1", q)
	}
}

// TestListenCredentialChangesSeesANotification listens, issues a key (its
// transaction notifies the channel) and waits for the change.
func TestListenCredentialChangesSeesANotification(t *testing.T) {
	pool, _ := storagetest.NewDB(t)
	fx := storagetest.NewFixtures(t, pool)
	st := storage.New(pool)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	listening, changed := make(chan struct{}), make(chan struct{}, 16)
	type result struct {
		connected bool
		err       error
	}
	done := make(chan result, 1)
	go func() {
		c, err := st.ListenCredentialChanges(ctx, func() { close(listening) }, func() { changed <- struct{}{} })
		done <- result{c, err}
	}()
	select {
	case <-listening:
	case <-ctx.Done():
		t.Fatal("never listening")
	}
	fx.Key(fx.User(domain.PlanPro, true).ID, nil)
	select {
	case <-changed:
	case <-ctx.Done():
		t.Fatal("no change seen after a key was issued")
	}
	cancel()
	r := <-done
	if !r.connected || r.err == nil {
		t.Fatalf("after ctx ended: connected %v, err %v; want true and an error", r.connected, r.err)
	}
}

// TestDevelopmentHelpers covers what the development seed needs: finding
// a user by e-mail, repointing a connection and a destination (ErrNotFound
// for unknown ones), and creating a database once.
func TestDevelopmentHelpers(t *testing.T) {
	pool, dbURL := storagetest.NewDB(t)
	fx := storagetest.NewFixtures(t, pool)
	st := storage.New(pool)
	ctx := context.Background()
	u := fx.User(domain.PlanPro, true)
	got, err := st.GetUserByEmail(ctx, u.Email)
	if err != nil || got.ID != u.ID {
		t.Fatalf("UserByEmail: %v, %v; want %s", got.ID, err, u.ID)
	}
	if _, err := st.GetUserByEmail(ctx, "nobody@example.com"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("unknown e-mail: %v, want ErrNotFound", err)
	}
	conn := fx.Connection(u.ID, "plaid", "active")
	if _, err := st.ReauthConnection(ctx, conn, []byte("sealed"), "http://127.0.0.1:1/plaid"); err != nil {
		t.Fatal(err)
	}
	c, err := st.GetConnection(ctx, storage.Scope{UserID: u.ID}, conn)
	if err != nil || c.BaseURL != "http://127.0.0.1:1/plaid" {
		t.Fatalf("repointed connection: %q, %v", c.BaseURL, err)
	}
	if _, err := st.ReauthConnection(ctx, uuid.New(), nil, "http://x"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("unknown connection: %v, want ErrNotFound", err)
	}
	d, err := st.CreateDestination(ctx, storage.NewDestination{UserID: u.ID, Kind: storage.DestinationWebhook, Name: "hook", Config: json.RawMessage(`{"url":"http://a"}`), SealedSecret: []byte("x")})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.ReconfigureDestination(ctx, d.ID, json.RawMessage(`{"url":"http://b"}`), []byte("s")); err != nil {
		t.Fatal(err)
	}
	d, err = st.GetDestination(ctx, d.ID)
	if err != nil || string(d.SealedSecret) != "s" {
		t.Fatalf("reconfigured destination: %s %q, %v", d.Config, d.SealedSecret, err)
	}
	var cfg struct{ URL string }
	if err := json.Unmarshal(d.Config, &cfg); err != nil || cfg.URL != "http://b" {
		t.Fatalf("reconfigured config %s: %v", d.Config, err)
	}
	if err := st.ReconfigureDestination(ctx, uuid.New(), json.RawMessage(`{}`), nil); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("unknown destination: %v, want ErrNotFound", err)
	}
	if err := storage.PingURL(ctx, dbURL); err != nil {
		t.Fatal(err)
	}
	name := "finsync_face_" + uuid.NewString()[:8]
	created, err := storage.EnsureDatabase(ctx, dbURL, name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := pool.Exec(context.Background(), `DROP DATABASE IF EXISTS "`+name+`"`); err != nil {
			t.Logf("drop %s: %v", name, err)
		}
	})
	if u, err := url.Parse(created); err != nil || u.Path != "/"+name {
		t.Fatalf("EnsureDatabase URL %s: %v", created, err)
	}
	if err := storage.PingURL(ctx, created); err != nil {
		t.Fatalf("the created database: %v", err)
	}
	if again, err := storage.EnsureDatabase(ctx, dbURL, name); err != nil || again != created {
		t.Fatalf("second EnsureDatabase: %s, %v", again, err)
	}
}

// TestQuickAnalyzeRefreshesCountsWithoutLeakingItsTarget runs the quick
// statistics refresh: the table's row count becomes known (reltuples is -1
// on a never-analyzed table), and the lowered statistics target stays
// inside its own transaction.
func TestQuickAnalyzeRefreshesCountsWithoutLeakingItsTarget(t *testing.T) {
	pool, _ := storagetest.NewDB(t)
	st := storage.New(pool)
	ctx := context.Background()
	var before float64
	if err := pool.QueryRow(ctx, `SELECT reltuples FROM pg_class WHERE relname = 'transactions'`).Scan(&before); err != nil {
		t.Fatal(err)
	}
	if err := st.QuickAnalyzeTransactions(ctx); err != nil {
		t.Fatal(err)
	}
	var after float64
	if err := pool.QueryRow(ctx, `SELECT reltuples FROM pg_class WHERE relname = 'transactions'`).Scan(&after); err != nil {
		t.Fatal(err)
	}
	if before != -1 || after != 0 {
		t.Fatalf("reltuples before and after: %v, %v; want -1 (never analyzed), then 0", before, after)
	}
	for _, conn := range pool.AcquireAllIdle(ctx) {
		var target string
		err := conn.QueryRow(ctx, `SHOW default_statistics_target`).Scan(&target)
		conn.Release()
		if err != nil || target != "100" {
			t.Fatalf("default_statistics_target after a quick refresh: %q, %v; want the default 100", target, err)
		}
	}
}
