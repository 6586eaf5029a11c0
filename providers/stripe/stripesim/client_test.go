package stripesim

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"testing"

	"github.com/stripe/stripe-go/v84"

	"github.com/finsync/finsync/providers/sim"
	"github.com/finsync/finsync/providers/sim/simtest"
)

// stripeClient returns the official Stripe client pointed at the simulator.
func stripeClient(url, key string) *stripe.Client {
	cfg := &stripe.BackendConfig{
		URL:               stripe.String(url),
		MaxNetworkRetries: stripe.Int64(0),
		LeveledLogger:     &stripe.LeveledLogger{Level: stripe.LevelNull},
	}
	return stripe.NewClient(key, stripe.WithBackends(stripe.NewBackendsWithConfig(cfg)))
}

func TestStripeOfficialClient(t *testing.T) {
	s, srv := newTestSim(t, sim.Options{})
	c := creds(t, "gina")
	cl := stripeClient(srv.URL, c["api_key"])
	ctx := context.Background()

	bal, err := cl.V1Balance.Retrieve(ctx, nil)
	if err != nil {
		t.Fatalf("balance: %v", err)
	}
	if len(bal.Available) == 0 || bal.Available[0].Currency != "usd" {
		t.Fatalf("balance = %+v", bal)
	}

	params := &stripe.BalanceTransactionListParams{}
	params.Limit = stripe.Int64(25)
	var n int
	var prev int64 = 1 << 62
	seen := map[string]bool{}
	pending := 0
	for tx, err := range cl.V1BalanceTransactions.List(ctx, params) {
		if err != nil {
			t.Fatalf("list: %v", err)
		}
		if seen[tx.ID] {
			t.Fatalf("duplicate %s", tx.ID)
		}
		seen[tx.ID] = true
		if tx.Created > prev {
			t.Fatalf("not newest first: %d after %d", tx.Created, prev)
		}
		prev = tx.Created
		if tx.Net != tx.Amount-tx.Fee {
			t.Fatalf("net %d != amount %d - fee %d", tx.Net, tx.Amount, tx.Fee)
		}
		if tx.Status == stripe.BalanceTransactionStatusPending {
			pending++
		}
		n++
	}
	if n != 300 || pending == 0 {
		t.Fatalf("listed %d transactions, %d pending", n, pending)
	}

	id := firstKey(seen)
	one, err := cl.V1BalanceTransactions.Retrieve(ctx, id, nil)
	if err != nil || one.ID != id {
		t.Fatalf("retrieve: %v", err)
	}
	_, err = cl.V1BalanceTransactions.Retrieve(ctx, "txn_1nope", nil)
	var se *stripe.Error
	if !errors.As(err, &se) || se.HTTPStatusCode != http.StatusNotFound || se.Code != stripe.ErrorCodeResourceMissing {
		t.Fatalf("retrieve missing: %v", err)
	}

	if err := s.Advance(3); err != nil {
		t.Fatal(err)
	}
	again, err := cl.V1BalanceTransactions.Retrieve(ctx, firstPending(t, cl), nil)
	if err != nil || again.Status != stripe.BalanceTransactionStatusAvailable {
		t.Fatalf("pending did not become available: %v %v", err, again)
	}
}

// firstKey returns any key of m.
func firstKey(m map[string]bool) string {
	for k := range m {
		return k
	}
	return ""
}

// firstPending returns the id of a transaction that was pending before the
// last 3-day advance (its available_on lies within those days).
func firstPending(t *testing.T, cl *stripe.Client) string {
	t.Helper()
	p := &stripe.BalanceTransactionListParams{}
	p.Limit = stripe.Int64(100)
	p.Type = stripe.String("charge")
	start := simtest.Start.Unix()
	for tx, err := range cl.V1BalanceTransactions.List(context.Background(), p) {
		if err != nil {
			t.Fatal(err)
		}
		if tx.AvailableOn > start && tx.Created < start+86400 {
			return tx.ID
		}
	}
	t.Fatal("no charge pending at the start")
	return ""
}

func TestStripePaging(t *testing.T) {
	_, srv := newTestSim(t, sim.Options{})
	c := creds(t, "hank")
	auth := map[string]string{"Authorization": "Bearer " + c["api_key"], "Stripe-Account": c["account"]}
	type list struct {
		Object  string           `json:"object"`
		Data    []map[string]any `json:"data"`
		HasMore bool             `json:"has_more"`
		URL     string           `json:"url"`
	}
	var first list
	simtest.DoJSON(t, http.MethodGet, srv.URL+"/v1/balance_transactions", nil, auth, &first)
	if first.Object != "list" || len(first.Data) != 10 || !first.HasMore || first.URL != "/v1/balance_transactions" {
		t.Fatalf("first page: %+v", first)
	}
	last := first.Data[9]["id"].(string)
	var next list
	simtest.DoJSON(t, http.MethodGet, srv.URL+"/v1/balance_transactions?limit=3&starting_after="+last, nil, auth, &next)
	var back list
	simtest.DoJSON(t, http.MethodGet, srv.URL+"/v1/balance_transactions?limit=3&ending_before="+next.Data[0]["id"].(string), nil, auth, &back)
	if len(back.Data) != 3 || back.Data[2]["id"] != last || back.Data[0]["id"] != first.Data[7]["id"] {
		t.Fatalf("ending_before page: %v", back.Data)
	}
	created := int64(first.Data[5]["created"].(float64))
	var window list
	simtest.DoJSON(t, http.MethodGet, srv.URL+"/v1/balance_transactions?limit=100&created[gte]="+strconv.FormatInt(created, 10), nil, auth, &window)
	for _, d := range window.Data {
		if int64(d["created"].(float64)) < created {
			t.Fatalf("created filter leaked %v", d["created"])
		}
	}
	if len(window.Data) < 6 {
		t.Fatalf("created window has %d rows", len(window.Data))
	}
	tests := []struct {
		name, query string
		status      int
	}{
		{"limit too big", "?limit=101", http.StatusBadRequest},
		{"limit not a number", "?limit=x", http.StatusBadRequest},
		{"both cursors", "?starting_after=" + last + "&ending_before=" + last, http.StatusBadRequest},
		{"foreign cursor", "?starting_after=txn_1AAAAAA00000000aaaaaaaaa", http.StatusBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var e map[string]map[string]any
			resp := simtest.DoJSON(t, http.MethodGet, srv.URL+"/v1/balance_transactions"+tt.query, nil, auth, &e)
			if resp.StatusCode != tt.status || e["error"]["type"] != "invalid_request_error" {
				t.Fatalf("%d %v", resp.StatusCode, e)
			}
		})
	}
}

func TestStripeAuth(t *testing.T) {
	_, srv := newTestSim(t, sim.Options{})
	tests := []struct {
		name string
		hdr  map[string]string
	}{
		{"missing", nil},
		{"malformed", map[string]string{"Authorization": "Bearer pk_test_abcdefghijkl"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var e map[string]map[string]any
			resp := simtest.DoJSON(t, http.MethodGet, srv.URL+"/v1/balance", nil, tt.hdr, &e)
			if resp.StatusCode != http.StatusUnauthorized || e["error"]["type"] != "invalid_request_error" {
				t.Fatalf("%d %v", resp.StatusCode, e)
			}
		})
	}
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/v1/balance", nil)
	req.SetBasicAuth("rk_live_abcdefghijklmnop", "")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("basic auth with a restricted key: %d", resp.StatusCode)
	}
}
