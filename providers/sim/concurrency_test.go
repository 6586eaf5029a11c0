package sim

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
)

func TestConcurrentUse(t *testing.T) {
	s, srv := newTestSim(t, Options{DailyQuota: -1})
	var wg sync.WaitGroup
	for n := 0; n < 4; n++ {
		wg.Add(1)
		go func(n int) {
			defer wg.Done()
			c := creds(t, Plaid, fmt.Sprintf("conc-%d", n))
			cursor := ""
			for round := 0; round < 20; round++ {
				body := plaidBody(c, map[string]any{"count": 50})
				if cursor != "" {
					body["cursor"] = cursor
				}
				var r syncResp
				resp := doJSON(t, http.MethodPost, srv.URL+"/transactions/sync", body, nil, &r)
				switch {
				case resp.StatusCode == http.StatusOK:
					cursor = r.NextCursor
				case r.ErrorCode == "TRANSACTIONS_SYNC_MUTATION_DURING_PAGINATION":
					cursor = ""
				default:
					t.Errorf("status %d %+v", resp.StatusCode, r)
					return
				}
			}
		}(n)
	}
	for n := 0; n < 10; n++ {
		if err := s.Advance(1); err != nil {
			t.Fatal(err)
		}
		_ = s.SetFault(Fault{Provider: Stripe, Mode: FaultOutage})
		_ = s.State()
	}
	wg.Wait()
}

func TestStripeZeroDecimalCurrency(t *testing.T) {
	_, srv := newTestSim(t, Options{})
	found := false
	for n := 0; n < 12 && !found; n++ {
		c := creds(t, Stripe, fmt.Sprintf("yen-%d", n))
		var page struct {
			Data []map[string]any `json:"data"`
		}
		doJSON(t, http.MethodGet, srv.URL+"/v1/balance_transactions?limit=100&currency=jpy", nil,
			map[string]string{"Authorization": "Bearer " + c["api_key"], "Stripe-Account": c["account"]}, &page)
		for _, d := range page.Data {
			if d["currency"] != "jpy" {
				t.Fatalf("currency filter leaked %v", d["currency"])
			}
			found = true
		}
	}
	if !found {
		t.Fatal("no connection has JPY rows")
	}
}
