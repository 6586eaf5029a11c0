package storage_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/storage"
	"github.com/finsync/finsync/storage/storagetest"
)

// TestActiveRulesIgnoreArchived checks that loading a user's active rules
// (what every batch of the rule job and every preview does) reads only the
// active rules, however many the user archived: the plan of the statement
// reads the partial index and discards no row.
func TestActiveRulesIgnoreArchived(t *testing.T) {
	pool, _ := storagetest.NewDB(t)
	fx := storagetest.NewFixtures(t, pool)
	ctx := context.Background()
	user := fx.User(domain.PlanPro, true).ID
	other := fx.User(domain.PlanPro, true).ID
	insert := func(user any, n int, archived bool) {
		t.Helper()
		if _, err := pool.Exec(ctx, `INSERT INTO rules (user_id, conditions, outcomes, priority, archived_at)
			SELECT $1, '[{"field":"Summary","operator":"is","value":"x"}]', '[{"action":"hideTransaction","value":true}]',
				1 + i % 100, CASE WHEN $3 THEN now() END
			FROM generate_series(1, $2) i`, user, n, archived); err != nil {
			t.Fatal(err)
		}
	}
	insert(user, 3, false)
	insert(user, 5000, true) // past saves: rules created and archived
	insert(other, 3, false)
	if _, err := pool.Exec(ctx, `ANALYZE rules`); err != nil {
		t.Fatal(err)
	}
	var plan []struct{ Plan map[string]any }
	var raw []byte
	if err := pool.QueryRow(ctx, `EXPLAIN (ANALYZE, FORMAT JSON) `+storage.ActiveRulesSQL, user).Scan(&raw); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &plan); err != nil || len(plan) != 1 {
		t.Fatalf("plan %s: %v", raw, err)
	}
	var walk func(n map[string]any)
	read := 0.0
	walk = func(n map[string]any) {
		if rel, _ := n["Relation Name"].(string); rel == "rules" {
			rows, _ := n["Actual Rows"].(float64)
			removed, _ := n["Rows Removed by Filter"].(float64)
			read += rows + removed
		}
		subs, _ := n["Plans"].([]any)
		for _, s := range subs {
			walk(s.(map[string]any))
		}
	}
	walk(plan[0].Plan)
	if read != 3 {
		t.Fatalf("loading 3 active rules among 5000 archived read %v rows: %s", read, raw)
	}
}
