package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"

	v2 "github.com/finsync/finsync/api/v2"
	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/providers/all"
	"github.com/finsync/finsync/providers/all/allsim"
	"github.com/finsync/finsync/providers/sim"
	"github.com/finsync/finsync/secrets"
	"github.com/finsync/finsync/storage"
	"github.com/finsync/finsync/storage/storagetest"
	"github.com/finsync/finsync/worker"
)

// syncEnv is a fresh database, a simulator over real HTTP and a Syncer.
type syncEnv struct {
	t      *testing.T
	pool   *pgxpool.Pool
	st     *storage.Store
	sim    *sim.Simulator
	root   string
	box    *secrets.Box
	syncer *worker.Syncer
	user   domain.User
}

func newSyncEnv(t *testing.T) *syncEnv {
	t.Helper()
	pool, _ := storagetest.NewDB(t)
	return newSyncEnvOn(t, pool)
}

// newSyncEnvOn is newSyncEnv over a given migrated database.
func newSyncEnvOn(t *testing.T, pool *pgxpool.Pool) *syncEnv {
	t.Helper()
	return newSyncEnvFrom(t, pool, time.Date(2026, 6, 15, 0, 0, 0, 0, time.UTC))
}

// newSyncEnvFrom is newSyncEnvOn with the simulator's first day start
// (the Syncer's clock stays at noon of 2026-06-15 unless a test sets it).
func newSyncEnvFrom(t *testing.T, pool *pgxpool.Pool, start time.Time) *syncEnv {
	t.Helper()
	s := allsim.New(sim.Options{Seed: 7, Start: start, HistoryTransactions: 200})
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	box, err := secrets.FromHex(strings.Repeat("1f", 32))
	if err != nil {
		t.Fatal(err)
	}
	provs, err := worker.NewProviders(all.NewRegistry(), worker.ProviderOptions{Unlimited: true})
	if err != nil {
		t.Fatal(err)
	}
	st := storage.New(pool)
	e := &syncEnv{t: t, pool: pool, st: st, sim: s, root: srv.URL, box: box}
	e.syncer = &worker.Syncer{
		Store: st, Providers: provs, Box: box,
		Log:          slog.New(slog.NewTextHandler(io.Discard, nil)),
		ReconnectURL: "https://app.example.com/reconnect/{connection_id}",
		Now:          func() time.Time { return time.Date(2026, 6, 15, 12, 0, 0, 0, time.UTC) },
	}
	e.user, err = st.CreateUser(context.Background(), uuid.NewString()+"@example.com", domain.PlanPro, true)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// connect registers a connection to the simulator.
func (e *syncEnv) connect(provider, name string) domain.BankConnection {
	e.t.Helper()
	sealed, err := e.box.Seal(allsim.Credentials(provider, name))
	if err != nil {
		e.t.Fatal(err)
	}
	c, err := e.st.CreateConnection(context.Background(), storage.NewConnection{
		UserID: e.user.ID, Provider: provider, BaseURL: allsim.BaseURL(provider, e.root), SealedCredentials: sealed,
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return c
}

func (e *syncEnv) sync(c domain.BankConnection) error {
	return e.syncer.Sync(context.Background(), c.ID)
}

func (e *syncEnv) mustSync(c domain.BankConnection) {
	e.t.Helper()
	if err := e.sync(c); err != nil {
		e.t.Fatalf("sync %s: %v", c.Provider, err)
	}
}

func (e *syncEnv) count(sql string, args ...any) int {
	e.t.Helper()
	var n int
	if err := e.pool.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		e.t.Fatal(err)
	}
	return n
}

// snapshot is every stored transaction of a connection, by provider id.
// requireSameRows fails the test unless got stored exactly the
// rows (by provider id, with their values) that want did.
func (e *syncEnv) requireSameRows(want, got domain.BankConnection) {
	e.t.Helper()
	a, b := e.snapshot(want), e.snapshot(got)
	if len(a) != len(b) {
		e.t.Fatalf("%d rows stored, %d in the reference sync", len(b), len(a))
	}
	for id, v := range a {
		if b[id] != v {
			e.t.Fatalf("row %s differs: %s vs %s", id, v, b[id])
		}
	}
}

func (e *syncEnv) snapshot(c domain.BankConnection) map[string]string {
	e.t.Helper()
	rows, err := e.pool.Query(context.Background(), `
		SELECT provider_id, concat_ws('|', status, amount::text, currency, authorized_date::text, posted_date::text,
			summary, category_id::text, merchant_name)
		FROM transactions WHERE bank_connection_id = $1`, c.ID)
	if err != nil {
		e.t.Fatal(err)
	}
	out := map[string]string{}
	for rows.Next() {
		var id, v string
		if err := rows.Scan(&id, &v); err != nil {
			e.t.Fatal(err)
		}
		out[id] = v
	}
	return out
}

func TestFirstSyncOfEachProvider(t *testing.T) {
	e := newSyncEnv(t)
	for _, provider := range all.NewRegistry().Names() {
		t.Run(provider, func(t *testing.T) {
			c := e.connect(provider, "first-"+provider)
			e.mustSync(c)
			n := e.count(`SELECT count(*) FROM transactions WHERE bank_connection_id = $1`, c.ID)
			if n < 50 {
				t.Fatalf("%d transactions stored", n)
			}
			if e.count(`SELECT count(*) FROM accounts WHERE bank_connection_id = $1`, c.ID) == 0 {
				t.Fatal("no accounts")
			}
			if e.count(`SELECT count(*) FROM balance_history b JOIN accounts a ON a.id = b.account_id WHERE a.bank_connection_id = $1 AND b.date = '2026-06-15'`, c.ID) == 0 {
				t.Fatal("no balance recorded for today")
			}
			if e.count(`SELECT count(*) FROM transactions WHERE bank_connection_id = $1 AND amount < 0`, c.ID) == 0 ||
				e.count(`SELECT count(*) FROM transactions WHERE bank_connection_id = $1 AND amount > 0`, c.ID) == 0 {
				t.Fatal("want both outflows and inflows")
			}
			got, err := e.st.GetConnectionAnyUser(context.Background(), c.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.Status != domain.ConnectionActive || got.LastSyncedAt == nil || got.NextSyncAt == nil || got.LastProviderErrorCode != nil {
				t.Fatalf("connection after sync: %+v", got)
			}
			// A re-sync stores nothing twice.
			before := e.snapshot(c)
			e.mustSync(c)
			after := e.snapshot(c)
			if len(after) != len(before) {
				t.Fatalf("re-sync changed the count: %d -> %d", len(before), len(after))
			}
			for id, v := range before {
				if after[id] != v {
					t.Fatalf("re-sync changed %s: %s -> %s", id, v, after[id])
				}
			}
		})
	}
}

// TestSignsAndMinorUnits compares stored amounts with the providers' raw
// wire values for one transaction each.
func TestSignsAndMinorUnits(t *testing.T) {
	e := newSyncEnv(t)
	plaid := e.connect("plaid", "signs")
	e.mustSync(plaid)
	// Plaid: positive amount = money out, so a stored outflow is the negated wire amount.
	var raw struct {
		Added []struct {
			ID     string      `json:"transaction_id"`
			Amount json.Number `json:"amount"`
		} `json:"added"`
	}
	creds := map[string]string{}
	_ = json.Unmarshal(allsim.Credentials("plaid", "signs"), &creds)
	body := `{"client_id":"` + creds["client_id"] + `","secret":"` + creds["secret"] + `","access_token":"` + creds["access_token"] + `","count":5}`
	resp := post(t, e.root+"/transactions/sync", body)
	if err := json.Unmarshal(resp, &raw); err != nil || len(raw.Added) == 0 {
		t.Fatalf("raw sync: %v %s", err, resp)
	}
	for _, a := range raw.Added {
		wire, _ := domain.NewMoney(a.Amount.String())
		var stored domain.Money
		if err := e.pool.QueryRow(context.Background(), `SELECT amount FROM transactions WHERE bank_connection_id = $1 AND provider_id = $2`, plaid.ID, a.ID).Scan(&stored); err != nil {
			t.Fatalf("stored %s: %v", a.ID, err)
		}
		if !stored.Equal(wire.Neg()) {
			t.Fatalf("plaid %s: wire %s stored %s", a.ID, wire, stored)
		}
	}
	// Stripe: integer minor units, negative = out; stored in major units.
	stripe := e.connect("stripe", "signs")
	e.mustSync(stripe)
	var key struct {
		APIKey  string `json:"api_key"`
		Account string `json:"account"`
	}
	_ = json.Unmarshal(allsim.Credentials("stripe", "signs"), &key)
	var list struct {
		Data []struct {
			ID       string `json:"id"`
			Amount   int64  `json:"amount"`
			Currency string `json:"currency"`
		} `json:"data"`
	}
	if err := json.Unmarshal(getAuth(t, e.root+"/v1/balance_transactions?limit=20", key.APIKey, key.Account), &list); err != nil || len(list.Data) == 0 {
		t.Fatalf("raw stripe: %v", err)
	}
	for _, bt := range list.Data {
		exp := int32(2)
		switch strings.ToUpper(bt.Currency) {
		case "JPY", "KRW", "VND", "CLP":
			exp = 0
		case "BHD", "KWD", "JOD", "OMR", "TND":
			exp = 3
		}
		var stored domain.Money
		var currency string
		if err := e.pool.QueryRow(context.Background(), `SELECT amount, currency FROM transactions WHERE bank_connection_id = $1 AND provider_id = $2`, stripe.ID, bt.ID).Scan(&stored, &currency); err != nil {
			t.Fatalf("stored %s: %v", bt.ID, err)
		}
		if want := domain.MoneyFromMinor(bt.Amount, exp); !stored.Equal(want) || currency != strings.ToUpper(bt.Currency) {
			t.Fatalf("stripe %s: wire %d %s stored %s %s", bt.ID, bt.Amount, bt.Currency, stored, currency)
		}
	}
}

func TestAdvancePostsPendingAndDeletesRemoved(t *testing.T) {
	e := newSyncEnv(t)
	c := e.connect("plaid", "advance")
	e.mustSync(c)
	pendingBefore := e.count(`SELECT count(*) FROM transactions WHERE bank_connection_id = $1 AND status = 'pending'`, c.ID)
	if pendingBefore == 0 {
		t.Fatal("no pending transactions to post")
	}
	// The user categorises a pending transaction; the choice must survive its posting.
	var pendingID uuid.UUID
	var pendingProviderID string
	if err := e.pool.QueryRow(context.Background(), `SELECT id, provider_id FROM transactions WHERE bank_connection_id = $1 AND status = 'pending' ORDER BY provider_id LIMIT 1`, c.ID).Scan(&pendingID, &pendingProviderID); err != nil {
		t.Fatal(err)
	}
	var catID uuid.UUID
	if err := e.pool.QueryRow(context.Background(), `INSERT INTO categories (user_id, name) VALUES ($1, 'Mine') RETURNING id`, e.user.ID).Scan(&catID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.pool.Exec(context.Background(), `UPDATE transactions SET category_id = $2, category_source = 'user' WHERE id = $1`, pendingID, catID); err != nil {
		t.Fatal(err)
	}
	if err := e.sim.Advance(5); err != nil {
		t.Fatal(err)
	}
	e.mustSync(c)
	if n := e.count(`SELECT count(*) FROM transactions WHERE bank_connection_id = $1 AND status = 'deleted'`, c.ID); n == 0 {
		t.Fatal("nothing marked deleted after advance")
	}
	var posted int
	var status string
	if err := e.pool.QueryRow(context.Background(), `SELECT status FROM transactions WHERE id = $1`, pendingID).Scan(&status); err != nil {
		t.Fatal(err)
	}
	if status != domain.TxDeleted {
		t.Fatalf("pending transaction status %s after posting, want deleted", status)
	}
	posted = e.count(`SELECT count(*) FROM transactions WHERE bank_connection_id = $1 AND pending_provider_id = $2 AND status = 'posted' AND category_id = $3 AND category_source = 'user'`, c.ID, pendingProviderID, catID)
	if posted != 1 {
		t.Fatalf("posted replacement carrying the user's category: %d", posted)
	}
	// The user's category survives further re-syncs.
	e.mustSync(c)
	if e.count(`SELECT count(*) FROM transactions WHERE category_id = $1`, catID) != 2 {
		t.Fatal("user category lost on re-sync")
	}
}

func TestInterruptedSyncResumesToTheSameState(t *testing.T) {
	e := newSyncEnv(t)
	const name = "resume"
	for _, p := range []string{"plaid"} {
		cs := sim.ConnectionSettings{Provider: p, Transactions: 3000, HistoryDays: 200}
		key, err := allsim.CredentialKey(p, allsim.Credentials(p, name))
		if err != nil {
			t.Fatal(err)
		}
		cs.Credential = key
		if err := e.sim.SetConnection(cs); err != nil {
			t.Fatal(err)
		}
	}
	whole := e.connect("plaid", name)
	e.mustSync(whole)
	// A second connection with the same credentials is interrupted after
	// a couple of pages (its context is cancelled), then resumed.
	cut := e.connect("plaid", name)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for e.count(`SELECT count(*) FROM transactions WHERE bank_connection_id = $1`, cut.ID) < 1000 {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	err := e.syncer.Sync(ctx, cut.ID)
	if err == nil {
		t.Fatal("interrupted sync reported success")
	}
	partial := e.count(`SELECT count(*) FROM transactions WHERE bank_connection_id = $1`, cut.ID)
	if partial >= len(e.snapshot(whole)) {
		t.Fatalf("sync was not interrupted: %d rows", partial)
	}
	e.mustSync(cut)
	e.requireSameRows(whole, cut)
}

// TestFirstSyncRestartedByAMutationStoresEachRowOnce checks the first
// sync's copy path against a provider that restarts pagination midway
// (Plaid's TRANSACTIONS_SYNC_MUTATION_DURING_PAGINATION): the pages sent
// again meet rows already copied in, and the sync must end in exactly the
// state of one that was not restarted.
func TestFirstSyncRestartedByAMutationStoresEachRowOnce(t *testing.T) {
	e := newSyncEnv(t)
	const name = "mutation"
	key, err := allsim.CredentialKey("plaid", allsim.Credentials("plaid", name))
	if err != nil {
		t.Fatal(err)
	}
	// 60 pages: the fetcher runs at most 16 pages ahead of the writer, so
	// the mutation lands while pages are still being fetched.
	if err := e.sim.SetConnection(sim.ConnectionSettings{Provider: "plaid", Credential: key, Transactions: 30000, HistoryDays: 200}); err != nil {
		t.Fatal(err)
	}
	whole := e.connect("plaid", name)
	e.mustSync(whole)
	restarted := e.connect("plaid", name)
	injected := make(chan error, 1)
	go func() {
		for e.count(`SELECT count(*) FROM transactions WHERE bank_connection_id = $1`, restarted.ID) < 1000 {
			time.Sleep(time.Millisecond)
		}
		injected <- e.sim.SetFault(sim.Fault{Provider: "plaid", Mode: sim.FaultMutation})
	}()
	e.mustSync(restarted)
	if err := <-injected; err != nil {
		t.Fatal(err)
	}
	if f, pending := e.sim.State().Faults["plaid"]; pending {
		t.Fatalf("the sync finished before the mutation (%+v) was answered", f)
	}
	e.requireSameRows(whole, restarted)
}

func TestConcurrentEnqueuesRunOneSync(t *testing.T) {
	e := newSyncEnv(t)
	c := e.connect("mercury", "concurrent")
	client, err := worker.NewClient(worker.Config{Store: e.st, Log: e.syncer.Log, Syncer: e.syncer})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	first, err := client.Insert(ctx, syncArgs(c.ID), nil)
	if err != nil {
		t.Fatal(err)
	}
	second, err := client.Insert(ctx, syncArgs(c.ID), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !second.UniqueSkippedAsDuplicate || second.Job.ID != first.Job.ID {
		t.Fatalf("second enqueue was not deduplicated: %+v", second)
	}
	events, cancel := client.Subscribe(river.EventKindJobCompleted, river.EventKindJobFailed)
	defer cancel()
	if err := client.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = client.Stop(context.Background()) }()
	select {
	case ev := <-events:
		if ev.Kind != river.EventKindJobCompleted {
			t.Fatalf("sync job ended %s: %v", ev.Kind, ev.Job.Errors)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("sync job did not finish")
	}
	n := e.count(`SELECT count(*) FROM transactions WHERE bank_connection_id = $1`, c.ID)
	if dup := e.count(`SELECT count(*) FROM (SELECT provider_id FROM transactions WHERE bank_connection_id = $1 GROUP BY 1 HAVING count(*) > 1) d`, c.ID); dup != 0 || n == 0 {
		t.Fatalf("%d rows, %d duplicated", n, dup)
	}
}

func TestLoginRequiredRecordsReconnectWithoutRetry(t *testing.T) {
	e := newSyncEnv(t)
	c := e.connect("plaid", "login")
	if err := e.sim.SetFault(sim.Fault{Provider: "plaid", Mode: sim.FaultLoginRequired}); err != nil {
		t.Fatal(err)
	}
	err := e.sync(c)
	var cancelErr *river.JobCancelError
	if !errors.As(err, &cancelErr) {
		t.Fatalf("want a cancelled job (no retries), got %v", err)
	}
	got, _ := e.st.GetConnectionAnyUser(context.Background(), c.ID)
	if got.Status != domain.ConnectionError || got.LastProviderErrorCode == nil || *got.LastProviderErrorCode != "ITEM_LOGIN_REQUIRED" ||
		got.ReconnectURL == nil || *got.ReconnectURL != "https://app.example.com/reconnect/"+c.ID.String() {
		t.Fatalf("connection: %+v", got)
	}
	// Once the user re-links, the next sync clears the error.
	if err := e.sim.SetFault(sim.Fault{Provider: "plaid", Mode: sim.FaultNone}); err != nil {
		t.Fatal(err)
	}
	e.mustSync(c)
	got, _ = e.st.GetConnectionAnyUser(context.Background(), c.ID)
	if got.Status != domain.ConnectionActive || got.LastProviderErrorCode != nil || got.ReconnectURL != nil {
		t.Fatalf("connection after recovery: %+v", got)
	}
}

func TestOutageSnoozesKeepsDataAndRecovers(t *testing.T) {
	e := newSyncEnv(t)
	c := e.connect("stripe", "outage")
	e.mustSync(c)
	stored := e.count(`SELECT count(*) FROM transactions WHERE bank_connection_id = $1`, c.ID)
	if err := e.sim.SetFault(sim.Fault{Provider: "stripe", Mode: sim.FaultOutage}); err != nil {
		t.Fatal(err)
	}
	var snoozed bool
	for i := 0; i < 10 && !snoozed; i++ {
		err := e.sync(c)
		var snooze *river.JobSnoozeError
		snoozed = errors.As(err, &snooze)
		if err == nil {
			t.Fatal("sync succeeded during an outage")
		}
	}
	if !snoozed {
		t.Fatal("the breaker never opened to snooze the job")
	}
	got, _ := e.st.GetConnectionAnyUser(context.Background(), c.ID)
	if got.Status != domain.ConnectionError || got.LastProviderErrorCode == nil {
		t.Fatalf("connection during outage: %+v", got)
	}
	if n := e.count(`SELECT count(*) FROM transactions WHERE bank_connection_id = $1`, c.ID); n != stored {
		t.Fatalf("stored data changed during outage: %d -> %d", stored, n)
	}
	if err := e.sim.SetFault(sim.Fault{Provider: "stripe", Mode: sim.FaultNone}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		err := e.sync(c)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no recovery after the outage: %v", err)
		}
		time.Sleep(500 * time.Millisecond)
	}
	got, _ = e.st.GetConnectionAnyUser(context.Background(), c.ID)
	if got.Status != domain.ConnectionActive || got.LastProviderErrorCode != nil {
		t.Fatalf("connection after recovery: %+v", got)
	}
}

func TestRateLimitIsHonoured(t *testing.T) {
	e := newSyncEnv(t)
	c := e.connect("mercury", "ratelimit")
	if err := e.sim.SetFault(sim.Fault{Provider: "mercury", Mode: sim.FaultRateLimit}); err != nil {
		t.Fatal(err)
	}
	err := e.sync(c)
	var snooze *river.JobSnoozeError
	if !errors.As(err, &snooze) || snooze.Duration <= 0 {
		t.Fatalf("want a snooze honouring Retry-After, got %v", err)
	}
	got, _ := e.st.GetConnectionAnyUser(context.Background(), c.ID)
	if got.NextSyncAt == nil || !got.NextSyncAt.After(time.Date(2026, 6, 15, 12, 0, 0, 0, time.UTC)) {
		t.Fatalf("next sync not pushed past the limit: %+v", got.NextSyncAt)
	}
}

func TestHoldingsNeverStoredWhileProviderDown(t *testing.T) {
	e := newSyncEnv(t)
	c := e.connect("plaid", "holdings-down")
	if err := e.sim.SetFault(sim.Fault{Provider: "plaid", Mode: sim.FaultOutage}); err != nil {
		t.Fatal(err)
	}
	if err := e.sync(c); err == nil {
		t.Fatal("sync succeeded during outage")
	}
	var class string
	if err := e.pool.QueryRow(context.Background(), `SELECT COALESCE(last_error_class, '') FROM connection_datasets WHERE bank_connection_id = $1 AND dataset = 'accounts'`, c.ID).Scan(&class); err != nil {
		t.Fatal(err)
	}
	if class != "unavailable" {
		t.Fatalf("dataset error class %q", class)
	}
	down, err := v2.NeverStoredAndUnavailable(context.Background(), e.st, storage.Scope{UserID: e.user.ID}, "holdings", &c.ID)
	if err != nil || !down {
		t.Fatalf("holdings should answer 502 while never stored and the provider is down: %v %v", down, err)
	}
	if err := e.sim.SetFault(sim.Fault{Provider: "plaid", Mode: sim.FaultNone}); err != nil {
		t.Fatal(err)
	}
	// Wait out the breaker, then sync: holdings are stored.
	deadline := time.Now().Add(time.Minute)
	for e.sync(c) != nil {
		if time.Now().After(deadline) {
			t.Fatal("no recovery")
		}
		time.Sleep(500 * time.Millisecond)
	}
	if e.count(`SELECT count(*) FROM holdings h JOIN accounts a ON a.id = h.account_id WHERE a.bank_connection_id = $1`, c.ID) == 0 {
		t.Fatal("no holdings stored")
	}
	if e.count(`SELECT count(*) FROM investment_transactions WHERE bank_connection_id = $1`, c.ID) == 0 {
		t.Fatal("no investment transactions stored")
	}
}

func TestUnreadableCredentialsAreRecordedWithoutRetry(t *testing.T) {
	e := newSyncEnv(t)
	c := e.connect("mercury", "other-key")
	other, err := secrets.FromHex(strings.Repeat("2e", 32))
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := other.Seal(allsim.Credentials("mercury", "other-key"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.pool.Exec(context.Background(), `UPDATE bank_connections SET credentials_encrypted = $2 WHERE id = $1`, c.ID, sealed); err != nil {
		t.Fatal(err)
	}
	var cancelErr *river.JobCancelError
	if err := e.sync(c); !errors.As(err, &cancelErr) {
		t.Fatalf("want a cancelled job, got %v", err)
	}
	got, _ := e.st.GetConnectionAnyUser(context.Background(), c.ID)
	if got.Status != domain.ConnectionError || got.LastProviderErrorCode == nil || *got.LastProviderErrorCode != worker.CodeCredentialsUnreadable {
		t.Fatalf("connection: %+v", got)
	}
}
