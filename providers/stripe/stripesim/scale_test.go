package stripesim

import (
	"net/http"
	"strconv"
	"testing"

	"github.com/finsync/finsync/providers/sim"
	"github.com/finsync/finsync/providers/sim/simtest"
)

// TestStripeScaleMillionTransactions checks that pages anywhere in a
// million-row history cost about the same and that serving them keeps
// little memory.
func TestStripeScaleMillionTransactions(t *testing.T) {
	s, srv := newTestSim(t, sim.Options{})
	before := simtest.HeapInUse()
	sc := creds(t, "big")
	if err := s.SetConnection(sim.ConnectionSettings{Provider: Name, Credential: stripeKey(sc["api_key"], sc["account"]), Transactions: million, HistoryDays: 90}); err != nil {
		t.Fatal(err)
	}
	auth := map[string]string{"Authorization": "Bearer " + sc["api_key"], "Stripe-Account": sc["account"]}
	var page struct {
		Data    []map[string]any `json:"data"`
		HasMore bool             `json:"has_more"`
	}
	simtest.Timed(t, "first list page", func() {
		simtest.DoJSON(t, http.MethodGet, srv.URL+"/v1/balance_transactions?limit=100", nil, auth, &page)
	})
	if len(page.Data) != 100 || !page.HasMore {
		t.Fatalf("first page: %d", len(page.Data))
	}
	oldest := simtest.Start.AddDate(0, 0, -89).Unix() + 7*3600 + 60
	simtest.Timed(t, "last list page", func() {
		simtest.DoJSON(t, http.MethodGet, srv.URL+"/v1/balance_transactions?limit=100&created[lt]="+strconv.FormatInt(oldest, 10), nil, auth, &page)
	})
	if len(page.Data) == 0 || page.HasMore {
		t.Fatalf("last page: %d rows, has_more %v", len(page.Data), page.HasMore)
	}
	if grown := int64(simtest.HeapInUse()) - int64(before); grown > 32<<20 {
		t.Fatalf("heap grew by %d MiB serving a million-row connection", grown>>20)
	}
}
