package storage_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/providers/sim/simkit"
	"github.com/finsync/finsync/storage"
	"github.com/finsync/finsync/storage/storagetest"
)

// linkUser is a simulated person whose links are stored through sync
// sessions as the worker drives them, each sync ending with FinishSync.
type linkUser struct {
	f     *storagetest.Fixtures
	user  uuid.UUID
	sc    simkit.LinkScenario
	conns []uuid.UUID
	// accounts are the stored account ids by scenario key, keys by id.
	accounts map[string]uuid.UUID
	keys     map[uuid.UUID]string
}

// newLinkUser stores the person's connections, created one minute apart
// in the scenario's order.
func newLinkUser(t *testing.T, f *storagetest.Fixtures, sc simkit.LinkScenario) *linkUser {
	t.Helper()
	u := f.User(domain.PlanPro, true)
	lu := &linkUser{f: f, user: u.ID, sc: sc, accounts: map[string]uuid.UUID{}, keys: map[uuid.UUID]string{}}
	base := time.Now().Add(-time.Hour)
	for i, c := range sc.Connections {
		id := f.Connection(u.ID, c.Provider, domain.ConnectionActive)
		if _, err := f.Pool.Exec(context.Background(), `UPDATE bank_connections SET created_at = $2, institution_name = $3 WHERE id = $1`,
			id, base.Add(time.Duration(i)*time.Minute), c.Institution); err != nil {
			t.Fatal(err)
		}
		lu.conns = append(lu.conns, id)
	}
	return lu
}

// sync runs one whole sync of connection ci: its accounts, its
// transactions in pages of 100 (again, when they are stored already), and
// the successful outcome.
func (lu *linkUser) sync(t *testing.T, ci int) {
	t.Helper()
	ctx := context.Background()
	conn, err := lu.f.St.GetConnectionAnyUser(ctx, lu.conns[ci])
	if err != nil {
		t.Fatal(err)
	}
	ss := lu.f.St.OpenSyncSession(storage.SyncTarget{Connection: conn, HasTransactions: conn.LastSyncedAt != nil}, storage.SyncSessionOptions{})
	var accts []domain.ReportedAccount
	for _, a := range lu.sc.Accounts {
		if a.Connection == ci {
			accts = append(accts, domain.ReportedAccount{ProviderAccountID: a.Key, Name: a.Name, Mask: a.Mask,
				Type: a.Type, Subtype: a.Subtype, Currency: a.Currency, BalancesUnknown: true})
		}
	}
	ids, err := ss.ApplyAccounts(ctx, lu.sc.Connections[ci].Institution, accts, domain.DateOf(time.Now()))
	if err != nil {
		t.Fatal(err)
	}
	for k, id := range ids {
		lu.accounts[k], lu.keys[id] = id, k
	}
	base := time.Now().AddDate(0, 0, -simkit.LinkScenarioDays)
	var rows []domain.ReportedTransaction
	for _, x := range lu.sc.Transactions {
		if _, ok := ids[x.Account]; !ok {
			continue
		}
		day := domain.DateOf(base.AddDate(0, 0, x.Day))
		rows = append(rows, domain.ReportedTransaction{ProviderAccountID: x.Account, ProviderID: x.ID, Status: domain.TxPosted, Summary: x.Description,
			Amount: domain.MoneyFromMinor(x.Amount, 2), Currency: "USD", AuthorizedDate: &day, PostedDate: &day, CreatedAt: day.Time})
	}
	var pages []domain.ReportedPage
	for len(rows) > 0 {
		n := min(100, len(rows))
		pages = append(pages, domain.ReportedPage{Upserts: rows[:n], Next: "c"})
		rows = rows[n:]
	}
	if _, err := ss.ApplyBatch(ctx, pages); err != nil {
		t.Fatal(err)
	}
	if err := ss.Close(ctx); err != nil {
		t.Fatal(err)
	}
	lu.f.SyncSucceeded(conn.ID)
}

// marks returns the stored marks as scenario keys: duplicate → original.
func (lu *linkUser) marks(t *testing.T) map[string]string {
	t.Helper()
	rows, err := lu.f.Pool.Query(context.Background(),
		`SELECT id, duplicate_of_account_id FROM accounts WHERE user_id = $1 AND duplicate_of_account_id IS NOT NULL`, lu.user)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var id, of uuid.UUID
		if err := rows.Scan(&id, &of); err != nil {
			t.Fatal(err)
		}
		out[lu.keys[id]] = lu.keys[of]
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// linkConfusion counts accounts by truth and mark.
type linkConfusion struct{ tp, fp, fn, tn, wrongOriginal int }

// add compares one person's marks with the truth.
func (c *linkConfusion) add(sc simkit.LinkScenario, marks map[string]string) {
	for _, a := range sc.Accounts {
		want, dup := sc.Duplicates[a.Key]
		got, marked := marks[a.Key]
		switch {
		case dup && marked && got == want:
			c.tp++
		case dup && marked:
			c.wrongOriginal++
		case marked:
			c.fp++
		case dup:
			c.fn++
		default:
			c.tn++
		}
	}
}

// TestDoubleLinkGroundTruth stores simulated people with banks linked
// twice (and three times) through one provider or two, and look-alike
// accounts that are other real accounts, then checks the marks the syncs'
// ends set against the scenarios' truth: no false mark, every double link
// marked with the earliest account. Half the people sync their newest
// link first: "newer" is the link's creation, not the sync order. A
// second round of syncs changes nothing; a cleared mark never returns.
func TestDoubleLinkGroundTruth(t *testing.T) {
	pool, _ := storagetest.NewDB(t)
	f := storagetest.NewFixtures(t, pool)
	const seed, people = 20261127, 6 * simkit.LinkScenarioKinds
	var users []*linkUser
	var c linkConfusion
	for p := 0; p < people; p++ {
		sc := simkit.NewLinkScenario(seed, p)
		lu := newLinkUser(t, f, sc)
		order := make([]int, len(sc.Connections))
		for i := range order {
			order[i] = i
			if p%2 == 1 {
				order[i] = len(order) - 1 - i
			}
		}
		for _, ci := range order {
			lu.sync(t, ci)
		}
		marks := lu.marks(t)
		c.add(sc, marks)
		for k, v := range marks {
			if sc.Duplicates[k] != v {
				t.Errorf("person %d (kind %d): %s marked a duplicate of %q, truth %q", p, p%simkit.LinkScenarioKinds, k, v, sc.Duplicates[k])
			}
		}
		for k, v := range sc.Duplicates {
			if marks[k] == "" {
				t.Errorf("person %d (kind %d): %s not marked (a duplicate of %s)", p, p%simkit.LinkScenarioKinds, k, v)
			}
		}
		users = append(users, lu)
	}
	t.Logf("double links, seed %d, %d people: TP %d FP %d FN %d TN %d wrong original %d",
		seed, people, c.tp, c.fp, c.fn, c.tn, c.wrongOriginal)
	fmt.Printf("double-link confusion: TP %d FP %d FN %d TN %d wrong-original %d\n", c.tp, c.fp, c.fn, c.tn, c.wrongOriginal)
	if c.fp != 0 || c.wrongOriginal != 0 || c.fn != 0 || c.tp == 0 {
		t.Fatalf("TP %d FP %d FN %d wrong original %d: want no false or missed mark", c.tp, c.fp, c.fn, c.wrongOriginal)
	}

	// Clear one mark of every person who has some, then sync every link
	// again: the marks are as before, less the cleared ones.
	ctx := context.Background()
	cleared := map[*linkUser]string{}
	for _, lu := range users {
		for k := range lu.sc.Duplicates {
			a, err := f.St.ClearDuplicateMark(ctx, storage.Scope{UserID: lu.user}, lu.accounts[k])
			if err != nil {
				t.Fatal(err)
			}
			if a.DuplicateOfAccountID != nil {
				t.Fatalf("%s still marked after clearing", k)
			}
			cleared[lu] = k
			break
		}
	}
	for round := 0; round < 2; round++ {
		for _, lu := range users {
			for ci := range lu.sc.Connections {
				lu.sync(t, ci)
			}
			marks := lu.marks(t)
			for k, v := range lu.sc.Duplicates {
				if k == cleared[lu] {
					if marks[k] != "" {
						t.Errorf("round %d: cleared mark of %s came back (%s)", round, k, marks[k])
					}
				} else if marks[k] != v {
					t.Errorf("round %d: %s marked %q, want %q", round, k, marks[k], v)
				}
			}
			if len(marks) > len(lu.sc.Duplicates) {
				t.Errorf("round %d: marks %v, truth %v", round, marks, lu.sc.Duplicates)
			}
		}
	}
}

// TestDuplicateMarkFollowsOriginal deletes the original account's
// connection: the mark and the rejected pairs go with it, and the
// remaining copy's transactions are listed.
func TestDuplicateMarkFollowsOriginal(t *testing.T) {
	pool, _ := storagetest.NewDB(t)
	f := storagetest.NewFixtures(t, pool)
	lu := newLinkUser(t, f, simkit.NewLinkScenario(1, 0))
	for ci := range lu.sc.Connections {
		lu.sync(t, ci)
	}
	ctx := context.Background()
	dup := lu.accounts["chk@2"]
	if m := lu.marks(t); m["chk@2"] != "chk@0" {
		t.Fatalf("marks %v", m)
	}
	sc := storage.Scope{UserID: lu.user}
	listed := func() int {
		rows, _, err := f.St.ListTransactions(ctx, sc, storage.TransactionFilter{AccountID: &dup}, storage.Keyset{}, 250)
		if err != nil {
			t.Fatal(err)
		}
		return len(rows)
	}
	if n := listed(); n != 0 {
		t.Fatalf("duplicate's rows listed by default: %d", n)
	}
	if _, err := f.St.ClearDuplicateMark(ctx, sc, lu.accounts["sav@2"]); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `DELETE FROM bank_connections WHERE id = $1`, lu.conns[0]); err != nil {
		t.Fatal(err)
	}
	var rejections int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM account_duplicate_rejections WHERE user_id = $1`, lu.user).Scan(&rejections); err != nil {
		t.Fatal(err)
	}
	if rejections != 0 {
		t.Fatalf("%d rejected pairs kept after their original was deleted", rejections)
	}
	a, err := f.St.GetAccount(ctx, sc, dup)
	if err != nil {
		t.Fatal(err)
	}
	if a.DuplicateOfAccountID != nil {
		t.Fatalf("mark kept after its original was deleted: %v", a.DuplicateOfAccountID)
	}
	if n := listed(); n == 0 {
		t.Fatal("remaining copy's rows not listed")
	}
}
