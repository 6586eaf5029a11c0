package mercurysim

import (
	"net/http"
	"strconv"
	"testing"

	"github.com/finsync/finsync/providers/sim"
	"github.com/finsync/finsync/providers/sim/simtest"
)

// TestMercuryScaleMillionTransactions checks that pages anywhere in a
// million-row history cost about the same and that serving them keeps
// little memory.
func TestMercuryScaleMillionTransactions(t *testing.T) {
	s, srv := newTestSim(t, sim.Options{})
	before := simtest.HeapInUse()
	mc := creds(t, "big")
	if err := s.SetConnection(sim.ConnectionSettings{Provider: Name, Credential: mc["token"], Transactions: million, HistoryDays: 90}); err != nil {
		t.Fatal(err)
	}
	auth := map[string]string{"Authorization": "Bearer " + mc["token"]}
	var accts struct {
		Accounts []map[string]any `json:"accounts"`
	}
	simtest.DoJSON(t, http.MethodGet, srv.URL+"/api/v1/accounts", nil, auth, &accts)
	base := srv.URL + "/api/v1/account/" + accts.Accounts[0]["id"].(string) + "/transactions?start=2025-01-01&limit=1000"
	var page mercuryTxList
	simtest.Timed(t, "first page", func() { simtest.DoJSON(t, http.MethodGet, base, nil, auth, &page) })
	total := page.Total
	if total < million/3 || len(page.Transactions) != 1000 {
		t.Fatalf("first page: total %d rows %d", total, len(page.Transactions))
	}
	simtest.Timed(t, "last page", func() {
		simtest.DoJSON(t, http.MethodGet, base+"&offset="+strconv.Itoa(total-10), nil, auth, &page)
	})
	if len(page.Transactions) != 10 {
		t.Fatalf("last page: %d rows", len(page.Transactions))
	}
	if grown := int64(simtest.HeapInUse()) - int64(before); grown > 32<<20 {
		t.Fatalf("heap grew by %d MiB serving a million-row connection", grown>>20)
	}
}
