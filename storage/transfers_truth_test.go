package storage_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/providers/sim/simkit"
	"github.com/finsync/finsync/storage"
	"github.com/finsync/finsync/storage/storagetest"
)

// scenarioProviders name the connections of a scenario (storage only
// stores the name).
var scenarioProviders = []string{"plaid", "mercury", "gocardless"}

// scenarioUser is a simulated person stored through sync sessions as the
// worker drives them.
type scenarioUser struct {
	f     *storagetest.Fixtures
	user  uuid.UUID
	sc    simkit.TransferScenario
	conns []domain.BankConnection
	// accounts are the stored account ids by scenario key.
	accounts map[string]uuid.UUID
	// opts are the options of its sync sessions; windowFrom, when set, is
	// from how many copied rows a batch is searched by window.
	opts       storage.SyncSessionOptions
	windowFrom int
	// batchPages, when set, is how many pages each ApplyBatch stores (else
	// one batch a sync), so that later batches meet the session's earlier
	// rows.
	batchPages int
	// round counts the syncs run, which changes every summary when
	// touched is set (so that the rows are written again).
	round int
}

// newScenarioUser stores the person's accounts, one connection each of
// their scenario's connections.
func newScenarioUser(t *testing.T, f *storagetest.Fixtures, sc simkit.TransferScenario) *scenarioUser {
	t.Helper()
	u := f.User(domain.PlanPro, true)
	su := &scenarioUser{f: f, user: u.ID, sc: sc, accounts: map[string]uuid.UUID{}}
	for _, a := range sc.Accounts {
		for len(su.conns) <= a.Connection {
			p := scenarioProviders[len(su.conns)]
			id := f.Connection(u.ID, p, domain.ConnectionActive)
			su.conns = append(su.conns, domain.BankConnection{ID: id, UserID: u.ID, Provider: p})
		}
	}
	return su
}

// sync runs one sync of each connection: accounts, then pages of 100 of
// the transactions pick keeps (removing the ids removed lists), as the
// worker's run does with its session.
func (su *scenarioUser) sync(t *testing.T, pick func(*simkit.ScenarioTransaction) bool, removed []string, touched bool) {
	t.Helper()
	ctx := context.Background()
	su.round++
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for ci, conn := range su.conns {
		now := time.Now()
		target := storage.SyncTarget{Connection: conn, HasTransactions: su.round > 1}
		if su.round > 1 {
			target.Connection.LastSyncedAt = &now
		}
		ss := su.f.St.OpenSyncSession(target, su.opts)
		if su.windowFrom > 0 {
			ss.SetWindowFrom(su.windowFrom)
		}
		var accts []domain.ReportedAccount
		for _, a := range su.sc.Accounts {
			if a.Connection == ci {
				accts = append(accts, domain.ReportedAccount{ProviderAccountID: a.Key, Name: a.Name, Mask: a.Mask,
					Type: a.Type, Subtype: a.Subtype, Currency: a.Currency, BalancesUnknown: true})
			}
		}
		ids, err := ss.ApplyAccounts(ctx, "", accts, domain.DateOf(now))
		if err != nil {
			t.Fatal(err)
		}
		var rows []domain.ReportedTransaction
		for i := range su.sc.Transactions {
			x := &su.sc.Transactions[i]
			acct, ok := ids[x.Account]
			if !ok || !pick(x) {
				continue
			}
			su.accounts[x.Account] = acct
			day := domain.DateOf(base.AddDate(0, 0, x.Day))
			row := domain.ReportedTransaction{ProviderAccountID: x.Account, ProviderID: x.ID, Status: domain.TxPosted, Summary: x.Description,
				Amount: domain.MoneyFromMinor(x.Amount, 2), Currency: x.Currency, AuthorizedDate: &day, PostedDate: &day,
				CreatedAt: day.Time}
			if touched {
				row.Summary += fmt.Sprintf(" %d", su.round%2)
			}
			if x.Pending {
				row.Status, row.PostedDate = domain.TxPending, nil
			}
			if x.Replaces != "" {
				p := x.Replaces
				row.PendingProviderID = &p
			}
			rows = append(rows, row)
		}
		var pages []domain.ReportedPage
		for len(rows) > 0 {
			n := min(100, len(rows))
			pages = append(pages, domain.ReportedPage{Upserts: rows[:n]})
			rows = rows[n:]
		}
		pages = append(pages, domain.ReportedPage{Removed: removed, Next: fmt.Sprintf("c%d", su.round)})
		per := len(pages)
		if su.batchPages > 0 {
			per = su.batchPages
		}
		for len(pages) > 0 {
			n := min(per, len(pages))
			if _, err := ss.ApplyBatch(ctx, pages[:n]); err != nil {
				t.Fatal(err)
			}
			pages = pages[n:]
		}
		if err := ss.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// firstSyncs runs the two syncs of a scenario: the first sees pending
// outflows, the second their posted rows (and the pending ones removed).
func (su *scenarioUser) firstSyncs(t *testing.T) {
	t.Helper()
	su.sync(t, func(x *simkit.ScenarioTransaction) bool { return x.Replaces == "" }, nil, false)
	var pending []string
	for _, x := range su.sc.Transactions {
		if x.Pending {
			pending = append(pending, x.ID)
		}
	}
	su.sync(t, func(x *simkit.ScenarioTransaction) bool { return x.Replaces != "" }, pending, false)
}

// resync sends every posted row again (touched: with changed summaries).
func (su *scenarioUser) resync(t *testing.T, touched bool) {
	t.Helper()
	su.sync(t, func(x *simkit.ScenarioTransaction) bool { return !x.Pending }, nil, touched)
}

// pairs returns the user's stored transfers as "outflow>inflow" provider
// ids.
func (su *scenarioUser) pairs(t *testing.T) []string {
	t.Helper()
	rows, err := su.f.Pool.Query(context.Background(), `
		SELECT o.provider_id || '>' || i.provider_id FROM transfers tr
		JOIN transactions o ON o.id = tr.outflow_transaction_id
		JOIN transactions i ON i.id = tr.inflow_transaction_id
		WHERE tr.user_id = $1 ORDER BY 1`, su.user)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// truthSeed is the scenario seed the detection is measured on. The
// detector's thresholds were tuned on seed 1 only; this seed was not
// looked at while tuning.
const truthSeed = 20261127

// TestTransferDetectionGroundTruth stores 45 simulated people's accounts
// and transactions (simkit.NewTransferScenario on a seed the detector was
// not tuned on) through sync sessions as the worker runs them (pending
// outflows first, then their posted rows) and measures the detected pairs
// against the scenario's labelled transfers: precision at least 0.98 and
// recall at least 0.95 over at least 500 labelled pairs. A further sync of
// every row, and a detection pass over all of them, change nothing.
func TestTransferDetectionGroundTruth(t *testing.T) {
	pool, _ := storagetest.NewDB(t)
	f := storagetest.NewFixtures(t, pool)
	var tp, fp, fn, labelled int
	var users []*scenarioUser
	var before [][]string
	for p := range 45 {
		sc := simkit.NewTransferScenario(truthSeed, p)
		su := newScenarioUser(t, f, sc)
		su.firstSyncs(t)
		got := su.pairs(t)
		want := map[string]bool{}
		for _, pr := range sc.Pairs {
			want[pr.Outflow+">"+pr.Inflow] = true
		}
		labelled += len(want)
		for _, g := range got {
			if want[g] {
				tp++
			} else {
				fp++
				t.Logf("false pair: %s", g)
			}
		}
		fn += len(want) - countIn(got, want)
		users, before = append(users, su), append(before, got)
	}
	precision := float64(tp) / float64(tp+fp)
	recall := float64(tp) / float64(tp+fn)
	t.Logf("transfer detection, seed %d: %d labelled pairs; TP %d, FP %d, FN %d; precision %.4f, recall %.4f",
		truthSeed, labelled, tp, fp, fn, precision, recall)
	if labelled < 500 {
		t.Fatalf("only %d labelled pairs", labelled)
	}
	if precision < 0.98 || recall < 0.95 {
		t.Errorf("precision %.4f (want >= 0.98), recall %.4f (want >= 0.95)", precision, recall)
	}
	// Idempotent: a re-sync of every row (written again, so detected
	// again) and a detection pass over every row change nothing.
	ctx := context.Background()
	for i, su := range users[:5] {
		su.resync(t, true)
		var all []uuid.UUID
		if err := pool.QueryRow(ctx, `SELECT array_agg(id) FROM transactions WHERE user_id = $1`, su.user).Scan(&all); err != nil {
			t.Fatal(err)
		}
		n, err := f.St.DetectTransfers(ctx, su.user, all)
		if err != nil {
			t.Fatal(err)
		}
		if after := su.pairs(t); n != 0 || !slices.Equal(after, before[i]) {
			t.Errorf("person %d: a second pass paired %d rows; pairs %v, were %v", i, n, after, before[i])
		}
	}
}

// countIn counts the items of got in want.
func countIn(got []string, want map[string]bool) int {
	n := 0
	for _, g := range got {
		if want[g] {
			n++
		}
	}
	return n
}

// TestTransferWindowSearchInSyncs stores the same scenarios through sync
// sessions twice, once with every fresh batch matched against the rows its
// session keeps (the other connections' rows read) and once with each
// batch's window read from the database: the pairs are the same.
func TestTransferWindowSearchInSyncs(t *testing.T) {
	pool, _ := storagetest.NewDB(t)
	f := storagetest.NewFixtures(t, pool)
	total := 0
	for p := range 8 {
		var got [2][]string
		for k, from := range []int{0, 1} {
			su := newScenarioUser(t, f, simkit.NewTransferScenario(truthSeed, p))
			su.windowFrom, su.batchPages = from, 2
			su.firstSyncs(t)
			got[k] = su.pairs(t)
		}
		if !slices.Equal(got[0], got[1]) {
			t.Errorf("person %d: windows read paired %v, windows kept %v", p, got[0], got[1])
		}
		total += len(got[0])
	}
	if total < 50 {
		t.Fatalf("only %d pairs found over 8 people", total)
	}
}
