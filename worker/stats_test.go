package worker_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/finsync/finsync/providers/all/allsim"
	"github.com/finsync/finsync/providers/sim"
)

// TestLargeFirstSyncRefreshesPlannerStatistics: after a first sync of
// 20,000 transactions the planner knows the user has about that many rows
// (it would plan for a handful, and read them all to list the newest 50,
// until autovacuum came around).
func TestLargeFirstSyncRefreshesPlannerStatistics(t *testing.T) {
	e := newSyncEnv(t)
	const name = "stats"
	key, err := allsim.CredentialKey("plaid", allsim.Credentials("plaid", name))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.sim.SetConnection(sim.ConnectionSettings{Provider: "plaid", Credential: key, Transactions: 20000, HistoryDays: 200}); err != nil {
		t.Fatal(err)
	}
	e.mustSync(e.connect("plaid", name))
	stored := e.count(`SELECT count(*) FROM transactions WHERE user_id = $1`, e.user.ID)

	var plan []struct {
		Plan struct {
			Rows float64 `json:"Plan Rows"`
		}
	}
	var out []byte
	if err := e.pool.QueryRow(context.Background(), `EXPLAIN (FORMAT JSON) SELECT * FROM transactions WHERE user_id = $1`, e.user.ID).Scan(&out); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(out, &plan); err != nil || len(plan) != 1 {
		t.Fatalf("plan %s: %v", out, err)
	}
	if est := plan[0].Plan.Rows; est < float64(stored)/2 {
		t.Fatalf("the planner expects %.0f rows for a user with %d", est, stored)
	}
}
