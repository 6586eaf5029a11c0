package storage_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/storage"
	"github.com/finsync/finsync/storage/storagetest"
)

// TestUpsertAccountsKeepsUnknownBalances: an account whose balances are
// unknown keeps the stored ones and their as-of time and records no daily
// balance; known balances replace them, a nil available balance (a bank
// that reports none) as null.
func TestUpsertAccountsKeepsUnknownBalances(t *testing.T) {
	ctx := context.Background()
	pool, f, conn, day := accountsConnection(t)
	connID := conn.ID
	money := func(s string) *domain.Money { m := domain.MustMoney(s); return &m }
	upsert := func(a domain.ReportedAccount) {
		t.Helper()
		a.ProviderAccountID, a.Name, a.Currency = "acc-1", "Main", "EUR"
		if err := f.St.InTx(ctx, func(tx pgx.Tx) error {
			_, err := storage.UpsertAccounts(ctx, tx, conn, []domain.ReportedAccount{a}, day)
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	type row struct {
		current, available, history *string
		asOf                        *time.Time
	}
	read := func() row {
		t.Helper()
		var r row
		if err := pool.QueryRow(ctx, `
			SELECT a.current_balance::text, a.available_balance::text, a.balance_as_of,
				(SELECT string_agg(h.balance::text, ',') FROM balance_history h WHERE h.account_id = a.id)
			FROM accounts a WHERE a.bank_connection_id = $1`, connID).Scan(&r.current, &r.available, &r.asOf, &r.history); err != nil {
			t.Fatal(err)
		}
		return r
	}
	str := func(p *string) string {
		if p == nil {
			return "null"
		}
		return *p
	}

	// A new account whose balances are unknown: nothing known, nothing recorded.
	upsert(domain.ReportedAccount{BalancesUnknown: true})
	if r := read(); r.current != nil || r.available != nil || r.asOf != nil || r.history != nil {
		t.Fatalf("new account with unknown balances: %s %s %v %s", str(r.current), str(r.available), r.asOf, str(r.history))
	}
	upsert(domain.ReportedAccount{CurrentBalance: money("10.50"), AvailableBalance: money("8.25")})
	known := read()
	if str(known.current) != "10.5000" || str(known.available) != "8.2500" || known.asOf == nil || str(known.history) != "10.5000" {
		t.Fatalf("known balances: %s %s %v %s", str(known.current), str(known.available), known.asOf, str(known.history))
	}
	upsert(domain.ReportedAccount{BalancesUnknown: true})
	if r := read(); str(r.current) != "10.5000" || str(r.available) != "8.2500" || r.asOf == nil || !r.asOf.Equal(*known.asOf) || str(r.history) != "10.5000" {
		t.Fatalf("unknown balances overwrote the known ones: %s %s %v %s", str(r.current), str(r.available), r.asOf, str(r.history))
	}
	upsert(domain.ReportedAccount{CurrentBalance: money("11.00")})
	if r := read(); str(r.current) != "11.0000" || r.available != nil || str(r.history) != "11.0000" || r.asOf == nil || !r.asOf.After(*known.asOf) {
		t.Fatalf("a bank reporting no available balance: %s %s %s", str(r.current), str(r.available), str(r.history))
	}
}

// TestUpsertAccountsReportedTwice: an account listed twice in one report is
// stored as the two reports one after the other would store it: a known
// balance then unknown ones keep the known balance, recorded for the day.
func TestUpsertAccountsReportedTwice(t *testing.T) {
	ctx := context.Background()
	pool, f, conn, day := accountsConnection(t)
	m := domain.MustMoney("10.50")
	reported := []domain.ReportedAccount{
		{ProviderAccountID: "acc-1", Name: "Main", Currency: "EUR", CurrentBalance: &m},
		{ProviderAccountID: "acc-2", Name: "Savings", Currency: "EUR", BalancesUnknown: true},
		{ProviderAccountID: "acc-1", Name: "Main account", Currency: "EUR", BalancesUnknown: true},
	}
	var ids map[string]uuid.UUID
	if err := f.St.InTx(ctx, func(tx pgx.Tx) error {
		var err error
		ids, err = storage.UpsertAccounts(ctx, tx, conn, reported, day)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if len(ids) != 2 {
		t.Fatalf("ids %v", ids)
	}
	var name string
	var current, history *string
	if err := pool.QueryRow(ctx, `
		SELECT a.name, a.current_balance::text, (SELECT string_agg(h.balance::text, ',') FROM balance_history h WHERE h.account_id = a.id)
		FROM accounts a WHERE a.id = $1`, ids["acc-1"]).Scan(&name, &current, &history); err != nil {
		t.Fatal(err)
	}
	if name != "Main account" || current == nil || *current != "10.5000" || history == nil || *history != "10.5000" {
		t.Fatalf("account reported twice: %q %v %v", name, current, history)
	}
}

// accountsConnection is a fresh database with a user's GoCardless
// connection, and the day its accounts are reported on.
func accountsConnection(t *testing.T) (*pgxpool.Pool, *storagetest.Fixtures, domain.BankConnection, domain.Date) {
	t.Helper()
	pool, _ := storagetest.NewDB(t)
	f := storagetest.NewFixtures(t, pool)
	u := f.User(domain.PlanPro, true)
	connID := f.Connection(u.ID, "gocardless", domain.ConnectionActive)
	return pool, f, domain.BankConnection{ID: connID, UserID: u.ID, Provider: "gocardless"},
		domain.DateOf(time.Date(2026, 6, 15, 0, 0, 0, 0, time.UTC))
}
