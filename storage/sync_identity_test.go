package storage_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/storage"
	"github.com/finsync/finsync/storage/storagetest"
)

// TestRelinkMatchesWithinTheNewLinksReach: a sync whose provider
// re-issued every id matches accounts on their attributes (two stored
// accounts that fit one reported account equally match neither: it is
// added), and transactions on amount, dates and description. When the
// sync finishes, a stored row the new link reached but never reported is
// removed, and rows older than anything the new link reported (history it
// does not reach) stay under their old ids.
func TestRelinkMatchesWithinTheNewLinksReach(t *testing.T) {
	pool, _ := storagetest.NewDB(t)
	f := storagetest.NewFixtures(t, pool)
	ctx := context.Background()
	user := f.User(domain.PlanPro, true).ID
	connID := f.Connection(user, "plaid", domain.ConnectionError)
	if _, err := pool.Exec(ctx, `UPDATE bank_connections SET last_synced_at = now() WHERE id = $1`, connID); err != nil {
		t.Fatal(err)
	}
	conn, err := f.St.GetConnectionAnyUser(ctx, connID)
	if err != nil {
		t.Fatal(err)
	}
	acct := f.Account(user, connID, "plaid", "Everyday")
	f.Account(user, connID, "plaid", "Twin")
	f.Account(user, connID, "plaid", "Twin")
	day := func(d int) time.Time { return time.Date(2026, 3, d, 0, 0, 0, 0, time.UTC) }
	var stored []storagetest.Tx
	for d := 1; d <= 10; d++ {
		stored = append(stored, storagetest.Tx{Amount: fmt.Sprintf("-%d.50", 10+d), Date: day(d), Summary: fmt.Sprintf("SHOP %d MARKET", d)})
	}
	ids := f.Transactions(user, connID, acct, "plaid", stored)
	cat := f.Category(user, "Mine", "Mine")
	if _, err := pool.Exec(ctx, `UPDATE transactions SET category_id = $2, category_source = 'user' WHERE id = $1`, ids[6], cat); err != nil {
		t.Fatal(err)
	}

	s := f.St.OpenSyncSession(storage.SyncTarget{Connection: conn, HasTransactions: true}, storage.SyncSessionOptions{})
	reported := func(pid, name string) domain.ReportedAccount {
		return domain.ReportedAccount{ProviderAccountID: pid, Name: name, Mask: "1234", Type: "depository", Subtype: "checking", Currency: "USD", BalancesUnknown: true}
	}
	accts, err := s.ApplyAccounts(ctx, "", []domain.ReportedAccount{reported("new-everyday", "Everyday"), reported("new-twin", "Twin")}, domain.DateOf(day(11)))
	if err != nil {
		t.Fatal(err)
	}
	if accts["new-everyday"] != acct {
		t.Fatalf("the re-issued account is %s, want the stored %s", accts["new-everyday"], acct)
	}
	if n := count(t, pool, `SELECT count(*) FROM accounts WHERE bank_connection_id = $1`, connID); n != 4 {
		t.Fatalf("%d accounts: the ambiguous twin should be added as the fourth", n)
	}
	// The new link reports days 6 to 10 (day 8 a day later, day 9 not at
	// all) and a new day 11.
	var rows []domain.ReportedTransaction
	for d := 6; d <= 11; d++ {
		if d == 9 {
			continue
		}
		on := domain.DateOf(day(d))
		if d == 8 {
			on = domain.DateOf(day(9))
		}
		rows = append(rows, domain.ReportedTransaction{ProviderAccountID: "new-everyday",
			ProviderID: fmt.Sprintf("new-%d", d), Status: domain.TxPosted, Summary: fmt.Sprintf("Shop %d market", d),
			Amount: domain.MustMoney(fmt.Sprintf("-%d.5", 10+d)), Currency: "USD", AuthorizedDate: &on, PostedDate: &on, CreatedAt: on.Time})
	}
	if _, err := s.ApplyBatch(ctx, []domain.ReportedPage{{Upserts: rows, Next: "c1"}}); err != nil {
		t.Fatal(err)
	}
	f.SyncSucceeded(connID)

	type row struct {
		pid, status string
		source      *string
	}
	got := map[uuid.UUID]row{}
	q, err := pool.Query(ctx, `SELECT id, provider_id, status, category_source FROM transactions WHERE account_id = $1`, acct)
	if err != nil {
		t.Fatal(err)
	}
	for q.Next() {
		var id uuid.UUID
		var r row
		if err := q.Scan(&id, &r.pid, &r.status, &r.source); err != nil {
			t.Fatal(err)
		}
		got[id] = r
	}
	q.Close()
	for d := 1; d <= 10; d++ {
		r := got[ids[d-1]]
		switch {
		case d <= 5 && (r.pid != ids[d-1].String() || r.status != domain.TxPosted):
			t.Errorf("day %d, before the new link's reach: %+v, want kept as it was", d, r)
		case d == 9 && r.status != domain.TxDeleted:
			t.Errorf("day 9, reached but never reported: %+v, want removed", r)
		case d > 5 && d != 9 && (r.pid != fmt.Sprintf("new-%d", d) || r.status != domain.TxPosted):
			t.Errorf("day %d: %+v, want matched to new-%d", d, r, d)
		}
	}
	if r := got[ids[6]]; r.source == nil || *r.source != "user" {
		t.Errorf("the user's category of day 7 was lost: %+v", r)
	}
	if len(got) != 11 {
		t.Errorf("%d transactions, want the 10 stored and the new day 11", len(got))
	}
	if n := count(t, pool, `SELECT count(*) FROM relink_candidates`); n != 0 {
		t.Errorf("%d relink candidates left", n)
	}
	if c, _ := f.St.GetConnectionAnyUser(ctx, connID); c.Status != domain.ConnectionActive {
		t.Errorf("connection %s after the re-link's sync", c.Status)
	}
}

// count runs a count query.
func count(t *testing.T, pool *pgxpool.Pool, sql string, args ...any) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
