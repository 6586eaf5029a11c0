package worker_test

import (
	"context"
	"testing"

	"github.com/google/uuid"
)

// TestSameBankLinkedTwiceIsMarked links one simulated Plaid item twice,
// beside another Plaid item and a GoCardless connection, and syncs each
// through the real worker and simulator: at the end of the second link's
// sync, each of its accounts with transactions is marked a duplicate of
// the first link's same account, and nothing else is marked, then or
// after every connection syncs again.
func TestSameBankLinkedTwiceIsMarked(t *testing.T) {
	e := newSyncEnv(t)
	first := e.connect("plaid", "twice")
	e.mustSync(first)
	other := e.connect("plaid", "someone-else")
	e.mustSync(other)
	second := e.connect("plaid", "twice")
	e.mustSync(second)
	gc := e.connect("gocardless", "twice")
	e.mustSync(gc)

	type mark struct{ account, of uuid.UUID }
	marks := func() map[string]mark {
		t.Helper()
		rows, err := e.pool.Query(context.Background(), `
			SELECT a.provider_account_id, a.id, a.duplicate_of_account_id FROM accounts a
			WHERE a.user_id = $1 AND a.duplicate_of_account_id IS NOT NULL`, e.user.ID)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		out := map[string]mark{}
		for rows.Next() {
			var pid string
			var m mark
			if err := rows.Scan(&pid, &m.account, &m.of); err != nil {
				t.Fatal(err)
			}
			out[pid] = m
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	// The truth: the second link's accounts that hold posted transactions,
	// each a copy of the first link's account of the same provider id.
	want := map[string]mark{}
	rows, err := e.pool.Query(context.Background(), `
		SELECT n.provider_account_id, n.id, o.id FROM accounts n
		JOIN accounts o ON o.bank_connection_id = $2 AND o.provider_account_id = n.provider_account_id
		WHERE n.bank_connection_id = $1
			AND EXISTS (SELECT 1 FROM transactions t WHERE t.account_id = n.id AND t.status = 'posted')`, second.ID, first.ID)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var pid string
		var m mark
		if err := rows.Scan(&pid, &m.account, &m.of); err != nil {
			t.Fatal(err)
		}
		want[pid] = m
	}
	rows.Close()
	if len(want) == 0 {
		t.Fatal("the simulated item has no account with transactions")
	}
	check := func(when string) {
		t.Helper()
		got := marks()
		if len(got) != len(want) {
			t.Fatalf("%s: %d marks, want %d: %v", when, len(got), len(want), got)
		}
		for pid, m := range want {
			if got[pid] != m {
				t.Fatalf("%s: account %s marked %v, want %v", when, pid, got[pid], m)
			}
		}
	}
	check("after the first syncs")
	t.Logf("marked %d of the second link's accounts; no other account marked", len(want))
	e.mustSync(first)
	e.mustSync(second)
	e.mustSync(other)
	e.mustSync(gc)
	check("after a second round of syncs")
}
