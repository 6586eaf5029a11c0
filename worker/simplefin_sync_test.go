package worker_test

import (
	"context"
	"testing"
)

// TestSimpleFINSyncThroughTheWorker syncs a SimpleFIN connection through
// the real Syncer and PostgreSQL: a first sync stores accounts, signed
// transactions (deposits positive), pending rows and today's balances; an
// incremental sync after time advances posts the pending rows it saw.
func TestSimpleFINSyncThroughTheWorker(t *testing.T) {
	e := newSyncEnv(t)
	e.syncer.Now = e.sim.WallNow // "today" is the simulator's, as the adapter's windows must see it
	c := e.connect("simplefin", "worker")
	e.mustSync(c)
	ctx := context.Background()
	if n := e.count(`SELECT count(*) FROM accounts WHERE bank_connection_id = $1`, c.ID); n != 3 {
		t.Fatalf("%d accounts stored, want 3", n)
	}
	if n := e.count(`SELECT count(*) FROM accounts WHERE bank_connection_id = $1 AND type = 'credit' AND current_balance > 0`, c.ID); n != 1 {
		t.Fatalf("%d credit accounts with a positive amount owed, want 1", n)
	}
	if e.count(`SELECT count(*) FROM transactions WHERE bank_connection_id = $1`, c.ID) < 20 {
		t.Fatal("too few transactions stored")
	}
	if e.count(`SELECT count(*) FROM transactions WHERE bank_connection_id = $1 AND amount < 0`, c.ID) == 0 ||
		e.count(`SELECT count(*) FROM transactions WHERE bank_connection_id = $1 AND amount > 0`, c.ID) == 0 {
		t.Fatal("want both outflows and deposits")
	}
	// Deposits are positive: interest on savings and card payments come in.
	if n := e.count(`SELECT count(*) FROM transactions WHERE bank_connection_id = $1 AND summary IN ('Interest Payment', 'Payment Thank You') AND amount <= 0`, c.ID); n != 0 {
		t.Fatalf("%d deposits stored as outflows", n)
	}
	if n := e.count(`SELECT count(*) FROM transactions WHERE bank_connection_id = $1 AND summary IN ('Starbucks', 'Netflix', 'Amazon') AND amount >= 0`, c.ID); n != 0 {
		t.Fatalf("%d purchases stored as deposits", n)
	}
	if e.count(`SELECT count(*) FROM balance_history b JOIN accounts a ON a.id = b.account_id WHERE a.bank_connection_id = $1 AND b.date = '2026-06-15'`, c.ID) != 3 {
		t.Fatal("want a balance recorded today for each account")
	}
	var pending []string
	rows, err := e.pool.Query(ctx, `SELECT provider_id FROM transactions WHERE bank_connection_id = $1 AND status = 'pending'`, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		pending = append(pending, id)
	}
	if len(pending) == 0 {
		t.Fatal("no pending transactions stored")
	}
	// A re-sync stores nothing twice.
	before := e.snapshot(c)
	e.mustSync(c)
	if after := e.snapshot(c); len(after) != len(before) {
		t.Fatalf("re-sync changed the count: %d -> %d", len(before), len(after))
	}
	// Time advances: the pending rows post (same id) or vanish (deleted).
	if err := e.sim.Advance(5); err != nil {
		t.Fatal(err)
	}
	e.mustSync(c)
	still := e.count(`SELECT count(*) FROM transactions WHERE bank_connection_id = $1 AND status = 'pending' AND provider_id = ANY($2)`, c.ID, pending)
	posted := e.count(`SELECT count(*) FROM transactions WHERE bank_connection_id = $1 AND status = 'posted' AND posted_date IS NOT NULL AND provider_id = ANY($2)`, c.ID, pending)
	if still != 0 || posted == 0 {
		t.Fatalf("after advance: %d of %d pending still pending, %d posted", still, len(pending), posted)
	}
}
