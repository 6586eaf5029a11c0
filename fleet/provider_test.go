//go:build fleet

package fleet

import (
	"net/http"
	"strconv"
	"testing"
)

// accountBalances are the balances of GET /v2/accounts, by account id.
type accountBalances map[string]struct {
	Current, Available *float64
	AsOf               *string
}

func (h *harness) balances(t *testing.T, c *client) accountBalances {
	t.Helper()
	var out struct {
		Accounts []struct {
			ID               string   `json:"id"`
			CurrentBalance   *float64 `json:"currentBalance"`
			AvailableBalance *float64 `json:"availableBalance"`
			BalanceAsOf      *string  `json:"balanceAsOf"`
		} `json:"accounts"`
	}
	c.MustJSON(h.anyServe(), "GET", "/v2/accounts", nil, http.StatusOK, &out)
	bs := accountBalances{}
	for _, a := range out.Accounts {
		bs[a.ID] = struct {
			Current, Available *float64
			AsOf               *string
		}{a.CurrentBalance, a.AvailableBalance, a.BalanceAsOf}
	}
	return bs
}

// testSpentQuotaKeepsBalances syncs a GoCardless connection six times in
// one day, past the bank's daily balance quota of four calls per account,
// and checks that every account keeps its last known balances.
func testSpentQuotaKeepsBalances(t *testing.T, h *harness) {
	userID, key, _ := h.User("quota@example.com", "pro")
	c := newClient(t, key)
	var conn struct{ ID string }
	h.CLIJSON(&conn, "connections", "add", "--user", userID, "--provider", "gocardless", "--sim", "--sim-name", "fleet-quota")
	awaitConnections(t, c, h.anyServe(), 1)
	first := h.balances(t, c)
	if len(first) == 0 {
		t.Fatal("the GoCardless connection has no accounts")
	}
	for id, b := range first {
		if b.Current == nil {
			t.Fatalf("account %s has no balance after the first sync", id)
		}
	}
	for i := 2; i <= 6; i++ {
		h.CLI("sync", "--connection", conn.ID, "--wait", "--timeout", "2m")
		now := h.balances(t, c)
		for id, b := range first {
			got := now[id]
			if got.Current == nil || *got.Current != *b.Current {
				t.Fatalf("sync %d: account %s current balance %v, want the last known %v", i, id, ptr(got.Current), *b.Current)
			}
			if b.Available != nil && (got.Available == nil || *got.Available != *b.Available) {
				t.Fatalf("sync %d: account %s available balance %v, want the last known %v", i, id, ptr(got.Available), *b.Available)
			}
		}
	}
	t.Logf("%d GoCardless accounts keep their balances through 6 syncs in one day (quota: 4 balance calls per account per day)", len(first))
}

func ptr(f *float64) string {
	if f == nil {
		return "null"
	}
	return strconv.FormatFloat(*f, 'f', -1, 64)
}
