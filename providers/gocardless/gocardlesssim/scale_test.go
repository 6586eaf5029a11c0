package gocardlesssim

import (
	"net/http"
	"testing"

	"github.com/finsync/finsync/providers/sim"
	"github.com/finsync/finsync/providers/sim/simtest"
)

// TestGoCardlessScaleMillionTransactions checks that pages anywhere in a
// million-row history cost about the same and that serving them keeps
// little memory.
func TestGoCardlessScaleMillionTransactions(t *testing.T) {
	s, srv := newTestSim(t, sim.Options{})
	before := simtest.HeapInUse()
	gc := creds(t, "big")
	if err := s.SetConnection(sim.ConnectionSettings{Provider: Name, Credential: gc["requisition_id"], Transactions: million, HistoryDays: 90}); err != nil {
		t.Fatal(err)
	}
	access, _ := gcLogin(t, srv.URL, gc)
	auth := map[string]string{"Authorization": "Bearer " + access}
	var req gcRequisitionBody
	simtest.DoJSON(t, http.MethodGet, srv.URL+"/api/v2/requisitions/"+gc["requisition_id"]+"/", nil, auth, &req)
	for _, day := range []string{"2025-12-11", "2026-03-10"} {
		var tx gcTxBody
		simtest.Timed(t, "one day of transactions", func() {
			simtest.DoJSON(t, http.MethodGet, srv.URL+"/api/v2/accounts/"+req.Accounts[0]+"/transactions/?date_from="+day+"&date_to="+day, nil, auth, &tx)
		})
		if len(tx.Transactions.Booked) < 1000 {
			t.Fatalf("%s: %d booked rows", day, len(tx.Transactions.Booked))
		}
	}
	if grown := int64(simtest.HeapInUse()) - int64(before); grown > 32<<20 {
		t.Fatalf("heap grew by %d MiB serving a million-row connection", grown>>20)
	}
}
