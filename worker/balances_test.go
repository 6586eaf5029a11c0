package worker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/finsync/finsync/api"
	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/providers/all"
	"github.com/finsync/finsync/providers/sim"
	"github.com/finsync/finsync/storage/storagetest"
	"github.com/finsync/finsync/worker"
)

// storedBalance is what an account holds of its balances.
type storedBalance struct {
	current, available *string
	asOf               *time.Time
}

func (b storedBalance) same(o storedBalance) bool {
	eq := func(x, y *string) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	return eq(b.current, o.current) && eq(b.available, o.available)
}

// balances reads each account's stored balances by provider account id.
func (e *syncEnv) balances(c domain.BankConnection) map[string]storedBalance {
	e.t.Helper()
	rows, err := e.pool.Query(context.Background(), `
		SELECT provider_account_id, current_balance::text, available_balance::text, balance_as_of
		FROM accounts WHERE bank_connection_id = $1`, c.ID)
	if err != nil {
		e.t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]storedBalance{}
	for rows.Next() {
		var id string
		var b storedBalance
		if err := rows.Scan(&id, &b.current, &b.available, &b.asOf); err != nil {
			e.t.Fatal(err)
		}
		out[id] = b
	}
	if err := rows.Err(); err != nil {
		e.t.Fatal(err)
	}
	return out
}

// requireKept fails unless every account of got holds the balances of
// want, with want's as-of time, and none of them is null.
func requireKept(t *testing.T, when string, want, got map[string]storedBalance) {
	t.Helper()
	if len(got) != len(want) || len(want) == 0 {
		t.Fatalf("%s: %d accounts, want %d", when, len(got), len(want))
	}
	for id, w := range want {
		g := got[id]
		if g.current == nil || g.available == nil {
			t.Fatalf("%s: account %s lost a balance: current %v available %v", when, id, g.current, g.available)
		}
		if !g.same(w) {
			t.Fatalf("%s: account %s balances %s/%s, want %s/%s", when, id, *g.current, *g.available, *w.current, *w.available)
		}
		if g.asOf == nil || !g.asOf.Equal(*w.asOf) {
			t.Fatalf("%s: account %s balanceAsOf %v, want the last fetch %v", when, id, g.asOf, w.asOf)
		}
	}
}

// apiBalances reads GET /v2/accounts over HTTP with a key of the env's
// user: currentBalance, availableBalance and balanceAsOf by provider
// account id.
func (e *syncEnv) apiBalances() map[string][3]string {
	e.t.Helper()
	fx := storagetest.NewFixtures(e.t, e.pool)
	key := fx.Key(e.user.ID, nil)
	a := api.MustNew(api.Config{Providers: all.NewRegistry().Profiles(), Store: e.st, Log: discard(), CursorKey: []byte("test cursor key, 32 bytes long!!")})
	srv := httptest.NewServer(a.Handler)
	defer srv.Close()
	var body struct {
		Accounts []struct {
			ProviderAccountID string           `json:"providerAccountId"`
			CurrentBalance    *json.RawMessage `json:"currentBalance"`
			AvailableBalance  *json.RawMessage `json:"availableBalance"`
			BalanceAsOf       *string          `json:"balanceAsOf"`
		} `json:"accounts"`
	}
	raw := getAuth(e.t, srv.URL+"/v2/accounts", key, "")
	if err := json.Unmarshal(raw, &body); err != nil {
		e.t.Fatalf("GET /v2/accounts: %v: %s", err, raw)
	}
	out := map[string][3]string{}
	for _, a := range body.Accounts {
		if a.CurrentBalance == nil || a.AvailableBalance == nil || a.BalanceAsOf == nil {
			e.t.Fatalf("GET /v2/accounts: account %s has a null balance: %s", a.ProviderAccountID, raw)
		}
		out[a.ProviderAccountID] = [3]string{string(*a.CurrentBalance), string(*a.AvailableBalance), *a.BalanceAsOf}
	}
	return out
}

// TestGoCardlessBalancesSurviveASpentQuota syncs a GoCardless connection
// six times in one day, with the quotas in PostgreSQL: the bank allows four
// balance calls per account per day, so the fifth and sixth syncs cannot
// read balances. They succeed, every account keeps the balances and the
// balanceAsOf of the fourth sync (in storage and over the API), the daily
// balance history holds no null or zero, and the connection's next sync is
// not before the quota resets.
func TestGoCardlessBalancesSurviveASpentQuota(t *testing.T) {
	e := newSyncEnv(t)
	provs, err := worker.NewProviders(all.NewRegistry(), worker.ProviderOptions{Unlimited: true, Quotas: e.st})
	if err != nil {
		t.Fatal(err)
	}
	e.syncer.Providers = provs
	c := e.connect("gocardless", "six-a-day")

	var afterFour map[string]storedBalance
	var apiAfterFour map[string][3]string
	for i := 1; i <= 4; i++ {
		before := time.Now()
		e.mustSync(c)
		got := e.balances(c)
		for id, b := range got {
			if b.current == nil || b.asOf == nil || b.asOf.Before(before.Add(-time.Second)) {
				t.Fatalf("sync %d: account %s not fetched: %+v", i, id, b)
			}
			if afterFour != nil && !b.same(afterFour[id]) {
				t.Fatalf("sync %d: account %s balances changed within one simulated day", i, id)
			}
		}
		afterFour = got
	}
	apiAfterFour = e.apiBalances()
	if len(apiAfterFour) != len(afterFour) {
		t.Fatalf("API lists %d accounts, storage %d", len(apiAfterFour), len(afterFour))
	}
	var spent int
	if err := e.pool.QueryRow(context.Background(), `
		SELECT count(*) FROM provider_quotas WHERE provider = 'gocardless' AND endpoint = 'balances' AND remaining = 0`).Scan(&spent); err != nil {
		t.Fatal(err)
	}
	if spent != len(afterFour) {
		t.Fatalf("%d accounts' balance quota spent after four syncs, want %d", spent, len(afterFour))
	}

	for i := 5; i <= 6; i++ {
		e.mustSync(c)
		requireKept(t, fmt.Sprintf("sync %d", i), afterFour, e.balances(c))
		got, err := e.st.GetConnectionAnyUser(context.Background(), c.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != domain.ConnectionActive || got.LastProviderErrorCode != nil {
			t.Fatalf("sync %d: connection %+v, want active", i, got)
		}
		var reset time.Time
		if err := e.pool.QueryRow(context.Background(), `
			SELECT max(reset_at) FROM provider_quotas WHERE provider = 'gocardless' AND endpoint = 'balances'`).Scan(&reset); err != nil {
			t.Fatal(err)
		}
		if got.NextSyncAt == nil || got.NextSyncAt.Before(reset) {
			t.Fatalf("sync %d: nextSyncAt %v is before the balance quota resets at %v", i, got.NextSyncAt, reset)
		}
	}
	if got := e.apiBalances(); len(got) != len(apiAfterFour) {
		t.Fatalf("API lists %d accounts after the spent quota, %d before", len(got), len(apiAfterFour))
	} else {
		for id, w := range apiAfterFour {
			if got[id] != w {
				t.Fatalf("GET /v2/accounts: account %s is %v after the spent quota, %v before", id, got[id], w)
			}
		}
	}
	if n := e.count(`SELECT count(*) FROM balance_history h JOIN accounts a ON a.id = h.account_id
		WHERE a.bank_connection_id = $1 AND NOT h.derived AND (h.balance IS NULL OR h.balance = 0)`, c.ID); n != 0 {
		t.Fatalf("%d daily balances recorded as null or zero", n)
	}
	if n := e.count(`SELECT count(*) FROM balance_history h JOIN accounts a ON a.id = h.account_id
		WHERE a.bank_connection_id = $1 AND NOT h.derived`, c.ID); n != len(afterFour) {
		t.Fatalf("%d daily balances recorded, want one per account (%d)", n, len(afterFour))
	}
}

// TestFailedBalanceCallKeepsBalances: when the bank's balance endpoint is
// down (503) or answers 429 while every other call works, a sync still
// stores transactions and succeeds, and every account keeps its last
// balances and their as-of time.
func TestFailedBalanceCallKeepsBalances(t *testing.T) {
	for _, mode := range []string{sim.FaultOutage, sim.FaultRateLimit} {
		t.Run(mode, func(t *testing.T) {
			e := newSyncEnv(t)
			c := e.connect("gocardless", "balance-"+mode)
			e.mustSync(c)
			first := e.balances(c)
			if err := e.sim.Advance(1); err != nil {
				t.Fatal(err)
			}
			e.syncer.Now = func() time.Time { return time.Date(2026, 6, 16, 12, 0, 0, 0, time.UTC) }
			if err := e.sim.SetFault(sim.Fault{Provider: "gocardless", Mode: mode, Path: "/balances/"}); err != nil {
				t.Fatal(err)
			}
			stored := e.count(`SELECT count(*) FROM transactions WHERE bank_connection_id = $1`, c.ID)
			e.mustSync(c)
			requireKept(t, mode, first, e.balances(c))
			if n := e.count(`SELECT count(*) FROM transactions WHERE bank_connection_id = $1`, c.ID); n <= stored {
				t.Fatalf("no new transactions stored while balances failed: %d -> %d", stored, n)
			}
			got, err := e.st.GetConnectionAnyUser(context.Background(), c.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.Status != domain.ConnectionActive || got.LastProviderErrorCode != nil {
				t.Fatalf("connection %+v, want active", got)
			}
			if n := e.count(`SELECT count(*) FROM balance_history h JOIN accounts a ON a.id = h.account_id
				WHERE a.bank_connection_id = $1 AND NOT h.derived AND (h.balance IS NULL OR h.balance = 0)`, c.ID); n != 0 {
				t.Fatalf("%d daily balances recorded as null or zero", n)
			}

			// Once the endpoint answers again, fresh balances replace the kept ones.
			if err := e.sim.SetFault(sim.Fault{Provider: "gocardless", Mode: sim.FaultNone}); err != nil {
				t.Fatal(err)
			}
			if mode == sim.FaultRateLimit {
				return // the 429 marked the balance quota spent for a minute
			}
			e.mustSync(c)
			for id, b := range e.balances(c) {
				if b.current == nil || !b.asOf.After(*first[id].asOf) {
					t.Fatalf("account %s not refreshed after the endpoint recovered: %+v", id, b)
				}
			}
		})
	}
}
