package worker_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/shopspring/decimal"

	"github.com/finsync/finsync/api"
	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/providers/all"
	"github.com/finsync/finsync/providers/all/allsim"
	"github.com/finsync/finsync/providers/plaid/plaidsim"
	"github.com/finsync/finsync/providers/sim"
	"github.com/finsync/finsync/storage/storagetest"
	"github.com/finsync/finsync/worker"
)

// balanceRow is one GET /v2/accounts/balance-history entry.
type balanceRow struct {
	ID      string
	Date    string
	Balance decimal.Decimal
	Derived bool
}

// same reports whether two entries are the same row with the same values.
func (r balanceRow) same(o balanceRow) bool {
	return r.ID == o.ID && r.Date == o.Date && r.Derived == o.Derived && r.Balance.Equal(o.Balance)
}

// derivedWorld is a syncEnv driven through a real River worker and read
// through the real router over HTTP.
type derivedWorld struct {
	*syncEnv
	client *river.Client[pgx.Tx]
	api    string
	key    string
}

func newDerivedWorld(t *testing.T) *derivedWorld {
	e := newSyncEnv(t)
	client, err := worker.NewClient(worker.Config{Store: e.st, Log: e.syncer.Log, Syncer: e.syncer})
	if err != nil {
		t.Fatal(err)
	}
	if err := client.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Stop(context.Background()) })
	a := api.MustNew(api.Config{Providers: all.NewRegistry().Profiles(), Store: e.st, Log: discard(), CursorKey: []byte("test cursor key, 32 bytes long!!")})
	srv := httptest.NewServer(a.Handler)
	t.Cleanup(srv.Close)
	key := storagetest.NewFixtures(t, e.pool).Key(e.user.ID, nil)
	return &derivedWorld{syncEnv: e, client: client, api: srv.URL, key: key}
}

// syncByJob enqueues a sync of c and waits for the River worker to
// complete it.
func (w *derivedWorld) syncByJob(c domain.BankConnection) {
	w.t.Helper()
	events, cancel := w.client.Subscribe(river.EventKindJobCompleted, river.EventKindJobFailed, river.EventKindJobCancelled)
	defer cancel()
	res, err := w.client.Insert(context.Background(), syncArgs(c.ID), nil)
	if err != nil {
		w.t.Fatal(err)
	}
	timeout := time.After(60 * time.Second)
	for {
		select {
		case ev := <-events:
			if ev.Job.ID != res.Job.ID {
				continue
			}
			if ev.Kind != river.EventKindJobCompleted {
				w.t.Fatalf("sync job ended %s: %v", ev.Kind, ev.Job.Errors)
			}
			return
		case <-timeout:
			w.t.Fatal("sync job did not finish")
		}
	}
}

// history reads an account's whole balance history over HTTP, page by
// page, by date; it fails when an entry lacks the derived field.
func (w *derivedWorld) history(accountID string) map[string]balanceRow {
	w.t.Helper()
	out := map[string]balanceRow{}
	cursor := ""
	for {
		u := w.api + "/v2/accounts/balance-history?limit=250&bankAccountId=" + accountID
		if cursor != "" {
			u += "&cursor=" + url.QueryEscape(cursor)
		}
		raw := getAuth(w.t, u, w.key, "")
		var body struct {
			BalanceHistory []map[string]json.RawMessage `json:"balanceHistory"`
			PageInfo       struct {
				NextCursor *string `json:"nextCursor"`
				HasMore    bool    `json:"hasMore"`
			} `json:"pageInfo"`
		}
		if err := json.Unmarshal(raw, &body); err != nil {
			w.t.Fatalf("balance history: %v: %s", err, raw)
		}
		for _, e := range body.BalanceHistory {
			var r balanceRow
			d, ok := e["derived"]
			if !ok {
				w.t.Fatalf("entry without the derived field: %v", e)
			}
			for _, f := range []struct {
				raw json.RawMessage
				to  any
			}{{e["id"], &r.ID}, {e["date"], &r.Date}, {e["balance"], &r.Balance}, {d, &r.Derived}} {
				if err := json.Unmarshal(f.raw, f.to); err != nil {
					w.t.Fatalf("entry %v: %v", e, err)
				}
			}
			if _, dup := out[r.Date]; dup {
				w.t.Fatalf("two entries on %s", r.Date)
			}
			out[r.Date] = r
		}
		if !body.PageInfo.HasMore || body.PageInfo.NextCursor == nil {
			return out
		}
		cursor = *body.PageInfo.NextCursor
	}
}

// accountIDs maps the connection's Plaid account ids to finsync's.
func (w *derivedWorld) accountIDs(c domain.BankConnection) map[string]string {
	w.t.Helper()
	rows, err := w.pool.Query(context.Background(), `SELECT provider_account_id, id::text FROM accounts WHERE bank_connection_id = $1`, c.ID)
	if err != nil {
		w.t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var p, id string
		if err := rows.Scan(&p, &id); err != nil {
			w.t.Fatal(err)
		}
		out[p] = id
	}
	return out
}

// firstPosted is the date of an account's earliest stored posted
// transaction.
func (w *derivedWorld) firstPosted(accountID string) string {
	w.t.Helper()
	var d time.Time
	if err := w.pool.QueryRow(context.Background(), `SELECT min(tx_date) FROM transactions WHERE account_id = $1 AND status = 'posted'`, accountID).Scan(&d); err != nil {
		w.t.Fatal(err)
	}
	return d.Format(time.DateOnly)
}

// reconcile checks one account's history against the simulator's own
// running balance: every entry equals it to the cent, the recorded days
// are exactly want, and derived days run without a gap from the first
// posted transaction's day to the day before the first recorded one.
func (w *derivedWorld) reconcile(name, accountID string, hist map[string]balanceRow, simBal map[string]int64, recorded []string) {
	w.t.Helper()
	if len(hist) == 0 {
		w.t.Fatalf("%s: no balance history", name)
	}
	for _, day := range recorded {
		if r, ok := hist[day]; !ok || r.Derived {
			w.t.Fatalf("%s: %s is not a recorded day: %+v", name, day, r)
		}
	}
	first := w.firstPosted(accountID)
	start, _ := time.Parse(time.DateOnly, first)
	end, _ := time.Parse(time.DateOnly, recorded[0])
	want := len(recorded) + int(end.Sub(start).Hours()/24)
	if len(hist) != want {
		w.t.Fatalf("%s: %d entries, want %d recorded and every day from %s to the day before %s", name, len(hist), want, first, recorded[0])
	}
	for d := start; d.Before(end); d = d.AddDate(0, 0, 1) {
		day := d.Format(time.DateOnly)
		if r, ok := hist[day]; !ok || !r.Derived {
			w.t.Fatalf("%s: %s is not a derived day: %+v", name, day, r)
		}
	}
	for day, r := range hist {
		s, ok := simBal[day]
		if !ok {
			w.t.Fatalf("%s: the simulator has no balance on %s", name, day)
		}
		if !r.Balance.Equal(decimal.New(s, -2)) {
			w.t.Fatalf("%s: %s balance %s (derived %v), the simulator's running balance %s", name, day, r.Balance, r.Derived, decimal.New(s, -2))
		}
	}
}

// TestDerivedBalancesReconcileWithTheSimulator syncs a Plaid item whose
// first 20 days of history come first and whose older history arrives on
// day 2 (Plaid's historical update), through River and the real API.
// After the first sync, each transaction account (checking and savings:
// depository; the credit card: amount owed) shows derived days back to its
// first transaction, all equal to the simulator's running balance to the
// cent, and today's recorded balance. A second sync the same day changes
// nothing. Two days later the older history arrives: derived days reach
// back to it and still reconcile, and the recorded first day is neither
// rewritten nor turned derived.
func TestDerivedBalancesReconcileWithTheSimulator(t *testing.T) {
	w := newDerivedWorld(t)
	const name = "derived-history"
	var creds map[string]string
	if err := json.Unmarshal(allsim.Credentials("plaid", name), &creds); err != nil {
		t.Fatal(err)
	}
	token := creds["access_token"]
	if err := w.sim.SetConnection(sim.ConnectionSettings{Provider: "plaid", Credential: token,
		Transactions: 900, HistoryDays: 60, RecentDays: 20, RevealDay: 2}); err != nil {
		t.Fatal(err)
	}
	c := w.connect("plaid", name)
	w.syncByJob(c)

	ids := w.accountIDs(c)
	simBal := plaidsim.DailyBalances(w.sim, token)
	if len(simBal) != 3 {
		t.Fatalf("%d transaction accounts in the simulator, want 3", len(simBal))
	}
	first := map[string]map[string]balanceRow{}
	firstDay := map[string]string{}
	for pid, bal := range simBal {
		id := ids[pid]
		h := w.history(id)
		w.reconcile(pid, id, h, bal, []string{"2026-06-15"})
		first[pid], firstDay[pid] = h, w.firstPosted(id)
		if firstDay[pid] < "2026-05-26" {
			t.Fatalf("%s: a transaction of %s stored before the older history was revealed", pid, firstDay[pid])
		}
	}

	// A second sync the same day stores nothing new and changes no day.
	w.syncByJob(c)
	for pid := range simBal {
		h := w.history(ids[pid])
		if len(h) != len(first[pid]) {
			t.Fatalf("%s: %d entries after a second sync, %d before", pid, len(h), len(first[pid]))
		}
		for day, r := range first[pid] {
			if !h[day].same(r) {
				t.Fatalf("%s: %s is %+v after a second sync, %+v before", pid, day, h[day], r)
			}
		}
	}
	var recordedAt time.Time
	if err := w.pool.QueryRow(context.Background(), `SELECT max(h.updated_at) FROM balance_history h JOIN accounts a ON a.id = h.account_id
		WHERE a.bank_connection_id = $1 AND h.date = '2026-06-15'`, c.ID).Scan(&recordedAt); err != nil {
		t.Fatal(err)
	}

	// Day 2: the older history arrives with the next sync.
	if err := w.sim.Advance(2); err != nil {
		t.Fatal(err)
	}
	w.syncer.Now = func() time.Time { return time.Date(2026, 6, 17, 12, 0, 0, 0, time.UTC) }
	w.syncByJob(c)
	simBal = plaidsim.DailyBalances(w.sim, token)
	for pid, bal := range simBal {
		id := ids[pid]
		h := w.history(id)
		w.reconcile(pid, id, h, bal, []string{"2026-06-15", "2026-06-17"})
		if older := w.firstPosted(id); older >= firstDay[pid] {
			t.Fatalf("%s: the first posted day is %s after the historical update, %s before", pid, older, firstDay[pid])
		}
		if r := h["2026-06-15"]; !r.same(first[pid]["2026-06-15"]) {
			t.Fatalf("%s: the recorded first day became %+v, was %+v", pid, r, first[pid]["2026-06-15"])
		}
		if r, ok := h["2026-06-16"]; ok {
			t.Fatalf("%s: a day between two recorded days was filled: %+v", pid, r)
		}
	}
	var after time.Time
	if err := w.pool.QueryRow(context.Background(), `SELECT max(h.updated_at) FROM balance_history h JOIN accounts a ON a.id = h.account_id
		WHERE a.bank_connection_id = $1 AND h.date = '2026-06-15'`, c.ID).Scan(&after); err != nil {
		t.Fatal(err)
	}
	if !after.Equal(recordedAt) {
		t.Fatalf("the recorded first day was rewritten at %v (recorded at %v)", after, recordedAt)
	}
}
