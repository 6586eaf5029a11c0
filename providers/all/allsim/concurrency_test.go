package allsim_test

import (
	"fmt"
	"net/http"
	"sync"
	"testing"

	"github.com/finsync/finsync/providers/all/allsim"
	"github.com/finsync/finsync/providers/sim"
	"github.com/finsync/finsync/providers/sim/simtest"
)

// TestConcurrentUse checks that syncs, clock moves and faults may run at
// once (run it with -race).
func TestConcurrentUse(t *testing.T) {
	s, srv := simtest.New(t, sim.Options{DailyQuota: -1}, allsim.Providers()...)
	var wg sync.WaitGroup
	for n := 0; n < 4; n++ {
		wg.Add(1)
		go func(n int) {
			defer wg.Done()
			c := creds(t, "plaid", fmt.Sprintf("conc-%d", n))
			cursor := ""
			for round := 0; round < 20; round++ {
				body := plaidBody(c, map[string]any{"count": 50})
				if cursor != "" {
					body["cursor"] = cursor
				}
				var r syncResp
				resp := simtest.DoJSON(t, http.MethodPost, srv.URL+"/transactions/sync", body, nil, &r)
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
		_ = s.SetFault(sim.Fault{Provider: "stripe", Mode: sim.FaultOutage})
		_ = s.State()
	}
	wg.Wait()
}
