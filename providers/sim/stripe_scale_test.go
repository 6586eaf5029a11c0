package sim

import (
	"net/http"
	"strconv"
	"testing"
)

// TestStripeScaleMillionTransactions checks that pages anywhere in a
// million-row history cost about the same and that serving them keeps
// little memory.
func TestStripeScaleMillionTransactions(t *testing.T) {
	s, srv := newTestSim(t, Options{})
	before := heapInUse()
	sc := creds(t, Stripe, "big")
	if err := s.SetConnection(ConnectionSettings{Provider: Stripe, Credential: stripeKey(sc["api_key"], sc["account"]), Transactions: million, HistoryDays: 90}); err != nil {
		t.Fatal(err)
	}
	auth := map[string]string{"Authorization": "Bearer " + sc["api_key"], "Stripe-Account": sc["account"]}
	var page struct {
		Data    []map[string]any `json:"data"`
		HasMore bool             `json:"has_more"`
	}
	timed(t, "first list page", func() {
		doJSON(t, http.MethodGet, srv.URL+"/v1/balance_transactions?limit=100", nil, auth, &page)
	})
	if len(page.Data) != 100 || !page.HasMore {
		t.Fatalf("first page: %d", len(page.Data))
	}
	oldest := testStart.AddDate(0, 0, -89).Unix() + 7*3600 + 60
	timed(t, "last list page", func() {
		doJSON(t, http.MethodGet, srv.URL+"/v1/balance_transactions?limit=100&created[lt]="+strconv.FormatInt(oldest, 10), nil, auth, &page)
	})
	if len(page.Data) == 0 || page.HasMore {
		t.Fatalf("last page: %d rows, has_more %v", len(page.Data), page.HasMore)
	}
	if grown := int64(heapInUse()) - int64(before); grown > 32<<20 {
		t.Fatalf("heap grew by %d MiB serving a million-row connection", grown>>20)
	}
}
