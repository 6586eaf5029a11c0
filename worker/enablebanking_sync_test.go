package worker_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/riverqueue/river"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/providers/all"
	"github.com/finsync/finsync/providers/enablebanking"
	"github.com/finsync/finsync/providers/sim"
	"github.com/finsync/finsync/storage"
	"github.com/finsync/finsync/storage/storagetest"
	"github.com/finsync/finsync/worker"
)

// pendingIDs lists the connection's stored pending provider ids.
func (e *syncEnv) pendingIDs(c domain.BankConnection) []string {
	e.t.Helper()
	rows, err := e.pool.Query(context.Background(), `SELECT provider_id FROM transactions WHERE bank_connection_id = $1 AND status = 'pending'`, c.ID)
	if err != nil {
		e.t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			e.t.Fatal(err)
		}
		out = append(out, id)
	}
	return out
}

// TestEnableBankingSyncThroughTheWorker syncs an Enable Banking connection
// through the real Syncer and PostgreSQL, the worker's clock following the
// simulator's: a first sync stores the session's accounts with their best
// balances (the card's as the amount owed), transactions signed by their
// indicator, pending rows and today's balances; a re-sync stores nothing
// twice; after the clock advances, the pending rows book in place (same
// ids, posted) and new days get their balances.
func TestEnableBankingSyncThroughTheWorker(t *testing.T) {
	e := newSyncEnv(t)
	e.syncer.Now = e.sim.WallNow
	c := e.connect("enablebanking", "worker")
	e.mustSync(c)
	if n := e.count(`SELECT count(*) FROM accounts WHERE bank_connection_id = $1`, c.ID); n != 3 {
		t.Fatalf("%d accounts stored, want 3", n)
	}
	if n := e.count(`SELECT count(*) FROM accounts WHERE bank_connection_id = $1 AND type = 'credit' AND current_balance > 0 AND available_balance > 0`, c.ID); n != 1 {
		t.Fatalf("%d credit cards with an amount owed and credit left, want 1", n)
	}
	if n := e.count(`SELECT count(*) FROM accounts WHERE bank_connection_id = $1 AND subtype = 'checking' AND available_balance < current_balance`, c.ID); n != 1 {
		t.Fatalf("%d current accounts with ITAV below CLBD, want 1", n)
	}
	if e.count(`SELECT count(*) FROM transactions WHERE bank_connection_id = $1`, c.ID) < 20 {
		t.Fatal("too few transactions stored")
	}
	if n := e.count(`SELECT count(*) FROM transactions WHERE bank_connection_id = $1 AND summary IN ('Interest Payment', 'Payment Thank You') AND amount <= 0`, c.ID); n != 0 {
		t.Fatalf("%d credits (CRDT) stored as outflows", n)
	}
	if n := e.count(`SELECT count(*) FROM transactions WHERE bank_connection_id = $1 AND summary IN ('Starbucks', 'Netflix', 'Amazon') AND (amount >= 0 OR merchant_name IS NULL)`, c.ID); n != 0 {
		t.Fatalf("%d debits (DBIT) stored as deposits or without their merchant", n)
	}
	today := e.sim.DateOf(e.sim.Clock()).Format(time.DateOnly)
	if n := e.count(`SELECT count(*) FROM balance_history b JOIN accounts a ON a.id = b.account_id WHERE a.bank_connection_id = $1 AND b.date = $2`, c.ID, today); n != 3 {
		t.Fatalf("%d balances recorded today, want 3", n)
	}
	pending := e.pendingIDs(c)
	if len(pending) == 0 {
		t.Fatal("no pending transactions stored")
	}
	before := e.snapshot(c)
	e.mustSync(c)
	if after := e.snapshot(c); len(after) != len(before) {
		t.Fatalf("re-sync changed the count: %d -> %d", len(before), len(after))
	}
	if err := e.sim.Advance(5); err != nil {
		t.Fatal(err)
	}
	e.mustSync(c)
	still := e.count(`SELECT count(*) FROM transactions WHERE bank_connection_id = $1 AND status = 'pending' AND provider_id = ANY($2)`, c.ID, pending)
	posted := e.count(`SELECT count(*) FROM transactions WHERE bank_connection_id = $1 AND status = 'posted' AND posted_date IS NOT NULL AND provider_id = ANY($2)`, c.ID, pending)
	if still != 0 || posted == 0 {
		t.Fatalf("after advance: %d of %d pending still pending, %d booked in place", still, len(pending), posted)
	}
	newDay := e.sim.DateOf(e.sim.Clock()).Format(time.DateOnly)
	if n := e.count(`SELECT count(*) FROM transactions WHERE bank_connection_id = $1 AND posted_date > $2`, c.ID, today); n == 0 {
		t.Fatal("no transaction booked after the first sync's day")
	}
	if n := e.count(`SELECT count(*) FROM balance_history b JOIN accounts a ON a.id = b.account_id WHERE a.bank_connection_id = $1 AND b.date = $2`, c.ID, newDay); n != 3 {
		t.Fatalf("%d balances recorded on the new day, want 3", n)
	}
}

// TestEnableBankingExpiredSessionNeedsReauth: once the session passes its
// valid_until, the sync is cancelled (River does not retry it) without
// calling the provider, and the connection records CONSENT_EXPIRED for the
// user to re-link; where the end was not recorded, the provider's own
// answer (EXPIRED_SESSION) does the same.
func TestEnableBankingExpiredSessionNeedsReauth(t *testing.T) {
	e := newSyncEnv(t)
	e.syncer.Now = e.sim.WallNow
	c := e.connect("enablebanking", "expiring")
	e.mustSync(c)
	if err := e.sim.Advance(200); err != nil { // past the demo session's valid_until
		t.Fatal(err)
	}
	var cancelErr *river.JobCancelError
	if err := e.sync(c); !errors.As(err, &cancelErr) {
		t.Fatalf("want a cancelled job (no retries), got %v", err)
	}
	got, err := e.st.GetConnectionAnyUser(context.Background(), c.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != domain.ConnectionError || got.LastProviderErrorCode == nil || *got.LastProviderErrorCode != worker.CodeConsentExpired ||
		got.ReconnectURL == nil || got.ConsentExpiresAt == nil {
		t.Fatalf("connection: %+v", got)
	}
	if _, err := e.pool.Exec(context.Background(), `UPDATE bank_connections SET consent_expires_at = NULL WHERE id = $1`, c.ID); err != nil {
		t.Fatal(err)
	}
	if err := e.sync(c); !errors.As(err, &cancelErr) {
		t.Fatalf("without a recorded end: want a cancelled job, got %v", err)
	}
	if got, err = e.st.GetConnectionAnyUser(context.Background(), c.ID); err != nil {
		t.Fatal(err)
	}
	if got.LastProviderErrorCode == nil || *got.LastProviderErrorCode != "EXPIRED_SESSION" {
		t.Fatalf("without a recorded end: %+v", got)
	}
}

// quotaWatch counts, per simulated day, the unattended requests of each
// account and kind the simulator served, and its 429 answers.
type quotaWatch struct {
	next http.Handler
	sim  *sim.Simulator

	mu       sync.Mutex
	requests map[string]int // day, account and kind → requests
	refused  int
}

func (q *quotaWatch) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
	q.next.ServeHTTP(rec, r)
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/enablebanking/"), "/")
	if len(parts) != 3 || parts[0] != "accounts" || (parts[2] != "balances" && parts[2] != "transactions") || r.URL.Query().Has("continuation_key") {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if rec.status == http.StatusTooManyRequests {
		q.refused++
	}
	q.requests[q.sim.DateOf(q.sim.Clock()).Format(time.DateOnly)+" "+parts[1]+" "+parts[2]]++
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) { s.status = code; s.ResponseWriter.WriteHeader(code) }

// TestEnableBankingWeekNeverExceedsTheDailyQuota: over a simulated week
// of syncs, five a day (more than the banks' four unattended requests per
// account and kind allow), with the adapter counting in the shared quota
// store on the simulator's clock, no account is ever asked more than four
// times a day, the simulator never answers 429, and every sync succeeds
// (the fifth of a day keeps the stored balances and skips transactions).
func TestEnableBankingWeekNeverExceedsTheDailyQuota(t *testing.T) {
	pool, _ := storagetest.NewDB(t)
	e := newSyncEnvOn(t, pool)
	watch := &quotaWatch{next: e.sim, sim: e.sim, requests: map[string]int{}}
	srv := httptest.NewServer(watch)
	t.Cleanup(srv.Close)
	e.root = srv.URL
	// One clock, the simulator's, for the Syncer's "today" and the
	// adapters' windows and quota days; quotas counted in PostgreSQL.
	provs, err := worker.NewProviders(all.NewRegistry(), worker.ProviderOptions{Unlimited: true, Quotas: storage.New(pool), Now: e.sim.WallNow})
	if err != nil {
		t.Fatal(err)
	}
	e.syncer.Providers, e.syncer.Now = provs, e.sim.WallNow
	c := e.connect("enablebanking", "week")
	for range 7 {
		for range 5 {
			e.mustSync(c)
		}
		if err := e.sim.Advance(1); err != nil {
			t.Fatal(err)
		}
	}
	watch.mu.Lock()
	defer watch.mu.Unlock()
	if watch.refused != 0 {
		t.Fatalf("the simulator refused %d requests past the quota", watch.refused)
	}
	if len(watch.requests) != 7*3*2 {
		t.Fatalf("%d (day, account, kind) counts, want %d", len(watch.requests), 7*3*2)
	}
	for k, n := range watch.requests {
		if n != enablebanking.DailyQuota {
			t.Errorf("%s: %d unattended requests, want the quota of %d", k, n, enablebanking.DailyQuota)
		}
	}
	if n := e.count(`SELECT count(*) FROM transactions WHERE bank_connection_id = $1`, c.ID); n == 0 {
		t.Fatal("no transactions stored")
	}
}
