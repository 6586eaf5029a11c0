package stripesim

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/finsync/finsync/providers/sim"
	"github.com/finsync/finsync/providers/sim/simtest"
)

func TestStripeZeroDecimalCurrency(t *testing.T) {
	_, srv := newTestSim(t, sim.Options{})
	found := false
	for n := 0; n < 12 && !found; n++ {
		c := creds(t, fmt.Sprintf("yen-%d", n))
		var page struct {
			Data []map[string]any `json:"data"`
		}
		simtest.DoJSON(t, http.MethodGet, srv.URL+"/v1/balance_transactions?limit=100&currency=jpy", nil,
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
