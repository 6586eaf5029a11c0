package storagetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/storage"
)

// Fixtures inserts test data straight into the database.
type Fixtures struct {
	TB   testing.TB
	Pool *pgxpool.Pool
	St   *storage.Store
}

// NewFixtures wraps a pool.
func NewFixtures(tb testing.TB, pool *pgxpool.Pool) *Fixtures {
	return &Fixtures{TB: tb, Pool: pool, St: storage.New(pool)}
}

func (f *Fixtures) ctx() context.Context { return context.Background() }

func (f *Fixtures) must(err error) {
	f.TB.Helper()
	if err != nil {
		f.TB.Fatal(err)
	}
}

// User creates a user with the plan and storage mode.
func (f *Fixtures) User(plan string, storageMode bool) domain.User {
	f.TB.Helper()
	u, err := f.St.CreateUser(f.ctx(), uuid.NewString()+"@example.com", plan, storageMode)
	f.must(err)
	return u
}

// Key issues an API key for the user, limited to accounts when non-nil. It
// turns storage mode on, as issuing a key does.
func (f *Fixtures) Key(userID uuid.UUID, accounts []uuid.UUID) string {
	f.TB.Helper()
	ic, err := f.St.IssueCredential(f.ctx(), storage.NewCredential{UserID: userID, Kind: storage.CredentialAPIKey, AccountIDs: accounts})
	f.must(err)
	return ic.Secret
}

// KeyWithID is Key returning the credential id too.
func (f *Fixtures) KeyWithID(userID uuid.UUID, accounts []uuid.UUID, expires *time.Time) (uuid.UUID, string) {
	f.TB.Helper()
	ic, err := f.St.IssueCredential(f.ctx(), storage.NewCredential{UserID: userID, Kind: storage.CredentialAPIKey, AccountIDs: accounts, ExpiresAt: expires})
	f.must(err)
	return ic.ID, ic.Secret
}

// Connection creates a bank connection.
func (f *Fixtures) Connection(userID uuid.UUID, provider, status string) uuid.UUID {
	f.TB.Helper()
	var id uuid.UUID
	f.must(f.Pool.QueryRow(f.ctx(), `INSERT INTO bank_connections (user_id, provider, institution_name, status)
		VALUES ($1, $2, $3, $4) RETURNING id`, userID, provider, "Bank of "+provider, status).Scan(&id))
	return id
}

// Account creates a bank-synced account on the connection.
func (f *Fixtures) Account(userID, connectionID uuid.UUID, provider, name string) uuid.UUID {
	f.TB.Helper()
	var id uuid.UUID
	f.must(f.Pool.QueryRow(f.ctx(), `INSERT INTO accounts (user_id, bank_connection_id, provider_account_id, provider, manual,
		institution_name, name, mask, type, subtype, currency, current_balance, available_balance, balance_as_of)
		VALUES ($1, $2, $3, $4, false, 'Test Bank', $5, '1234', 'depository', 'checking', 'USD', 100.5, 90.25, now()) RETURNING id`,
		userID, connectionID, uuid.NewString(), provider, name).Scan(&id))
	return id
}

// Tx describes a transaction to insert; zero fields get defaults.
type Tx struct {
	Status     string
	Amount     string
	Date       time.Time
	CategoryID *uuid.UUID
	Hidden     bool
	Summary    string
}

// Transactions inserts transactions on the account with COPY and returns their ids.
func (f *Fixtures) Transactions(userID, connectionID, accountID uuid.UUID, provider string, txs []Tx) []uuid.UUID {
	f.TB.Helper()
	ids := make([]uuid.UUID, len(txs))
	rows := make([][]any, len(txs))
	for i, t := range txs {
		ids[i] = uuid.New()
		status := t.Status
		if status == "" {
			status = domain.TxPosted
		}
		amount := t.Amount
		if amount == "" {
			amount = "-12.34"
		}
		day := t.Date
		if day.IsZero() {
			day = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, i%300)
		}
		var posted *time.Time
		if status != domain.TxPending {
			posted = &day
		}
		summary := t.Summary
		if summary == "" {
			summary = fmt.Sprintf("Purchase %d", i)
		}
		rows[i] = []any{ids[i], userID, connectionID, accountID, provider, ids[i].String(), status, summary,
			amount, "USD", day, posted, t.CategoryID, t.Hidden}
	}
	_, err := f.Pool.CopyFrom(f.ctx(), pgx.Identifier{"transactions"},
		[]string{"id", "user_id", "bank_connection_id", "account_id", "provider", "provider_id", "status", "summary",
			"amount", "currency", "authorized_date", "posted_date", "category_id", "hidden"},
		pgx.CopyFromRows(rows))
	f.must(err)
	return ids
}

// Category creates a manual category in a group.
func (f *Fixtures) Category(userID uuid.UUID, name, group string) uuid.UUID {
	f.TB.Helper()
	var gid, id uuid.UUID
	f.must(f.Pool.QueryRow(f.ctx(), `INSERT INTO category_groups (user_id, name) VALUES ($1, $2)
		ON CONFLICT (user_id, provider, name) DO UPDATE SET name = excluded.name RETURNING id`, userID, group).Scan(&gid))
	f.must(f.Pool.QueryRow(f.ctx(), `INSERT INTO categories (user_id, name, group_id) VALUES ($1, $2, $3) RETURNING id`,
		userID, name, gid).Scan(&id))
	return id
}

// Balance records an account's balance on a day.
func (f *Fixtures) Balance(userID, accountID uuid.UUID, day time.Time, amount string) {
	f.TB.Helper()
	_, err := f.Pool.Exec(f.ctx(), `INSERT INTO balance_history (user_id, account_id, date, balance, currency)
		VALUES ($1, $2, $3, $4, 'USD')
		ON CONFLICT (account_id, date, user_id) DO UPDATE SET balance = excluded.balance, derived = false`,
		userID, accountID, domain.DateOf(day).Time, domain.MustMoney(amount))
	f.must(err)
}

// Holding creates a security and a holding of it on the account, and marks
// the connection's holdings as stored.
func (f *Fixtures) Holding(userID, connectionID, accountID uuid.UUID, symbol string) uuid.UUID {
	f.TB.Helper()
	var sid, hid uuid.UUID
	f.must(f.Pool.QueryRow(f.ctx(), `INSERT INTO securities (user_id, provider, provider_security_id, symbol, name, type, close_price, currency)
		VALUES ($1, 'plaid', $2, $2, $2 || ' Inc', 'equity', 10.5, 'USD') RETURNING id`, userID, symbol).Scan(&sid))
	f.must(f.Pool.QueryRow(f.ctx(), `INSERT INTO holdings (user_id, account_id, security_id, provider, quantity, cost_basis,
		institution_price, institution_value, currency, price_as_of)
		VALUES ($1, $2, $3, 'plaid', 3, 25, 10.5, 31.5, 'USD', '2026-01-02') RETURNING id`, userID, accountID, sid).Scan(&hid))
	f.Dataset(connectionID, "holdings", true, "")
	return hid
}

// InvestmentTransaction creates an investment event on the account.
func (f *Fixtures) InvestmentTransaction(userID, connectionID, accountID uuid.UUID, day time.Time) uuid.UUID {
	f.TB.Helper()
	var id uuid.UUID
	f.must(f.Pool.QueryRow(f.ctx(), `INSERT INTO investment_transactions (user_id, bank_connection_id, account_id, provider,
		provider_id, date, type, subtype, quantity, price, amount, fees, currency, description)
		VALUES ($1, $2, $3, 'plaid', $4, $5, 'buy', 'buy', 2, 10, -20, 0.5, 'USD', 'Buy') RETURNING id`,
		userID, connectionID, accountID, uuid.NewString(), day).Scan(&id))
	f.Dataset(connectionID, "investment_transactions", true, "")
	return id
}

// Dataset records whether a connection's dataset is stored and how the last
// fetch ended.
func (f *Fixtures) Dataset(connectionID uuid.UUID, dataset string, stored bool, errorClass string) {
	f.TB.Helper()
	var storedAt *time.Time
	if stored {
		n := time.Now()
		storedAt = &n
	}
	_, err := f.Pool.Exec(f.ctx(), `INSERT INTO connection_datasets (user_id, bank_connection_id, dataset, stored_at, last_attempt_at, last_error_class)
		SELECT c.user_id, c.id, $2, $3::timestamptz, now(), NULLIF($4, '') FROM bank_connections c WHERE c.id = $1
		ON CONFLICT (bank_connection_id, dataset, user_id) DO UPDATE SET stored_at = COALESCE(connection_datasets.stored_at, excluded.stored_at),
			last_attempt_at = now(), last_error_class = excluded.last_error_class`, connectionID, dataset, storedAt, errorClass)
	f.must(err)
}

// SyncSucceeded records a successful sync of the connection, as the worker
// does at a sync's end (Tx.FinishSync: status active, duplicate accounts
// marked, webhook events).
func (f *Fixtures) SyncSucceeded(connectionID uuid.UUID) {
	f.TB.Helper()
	f.must(f.St.Atomic(f.ctx(), func(tx *storage.Tx) error {
		_, err := tx.FinishSync(f.ctx(), connectionID, storage.SyncOutcome{OK: true})
		return err
	}))
}
