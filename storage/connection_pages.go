package storage

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/finsync/finsync/domain"
)

// This file holds the listings of one bank connection's rows paged by
// numeric offset (or, for transactions, after a given transaction), and
// the counts behind their totals: version 1's way of paging.

// ConnectionFilter selects the rows of one bank connection.
type ConnectionFilter struct {
	BankConnectionID uuid.UUID
	// AccountIDs, when non-nil, limits rows to these accounts.
	AccountIDs []uuid.UUID
	// StartDate and EndDate bound the row's date, both inclusive; nil
	// leaves that side open.
	StartDate *domain.Date
	EndDate   *domain.Date
	// Statuses lists the transaction statuses to include; empty means all.
	// Transaction listings only.
	Statuses []string
	// IncludeHidden includes transactions hidden by a rule. Transaction
	// listings only.
	IncludeHidden bool
}

// dates adds the inclusive date bounds on col.
func (f ConnectionFilter) dates(w *where, col string) {
	if f.StartDate != nil {
		w.add(col+" >= ?", f.StartDate.Time)
	}
	if f.EndDate != nil {
		w.add(col+" <= ?", f.EndDate.Time)
	}
}

// accounts adds the account filter on alias.account_id.
func (f ConnectionFilter) accounts(w *where, alias string) {
	if f.AccountIDs != nil {
		w.add(alias+".account_id = ANY(?)", f.AccountIDs)
	}
}

// transactionWhere builds the predicates of a connection's transaction listing.
func transactionWhere(sc Scope, f ConnectionFilter) *where {
	w := &where{}
	w.scope("t", sc)
	w.add("t.bank_connection_id = ?", f.BankConnectionID)
	f.accounts(w, "t")
	w.notDuplicate("t", sc, false)
	w.oneOf("t.status", f.Statuses)
	f.dates(w, "t.tx_date")
	if !f.IncludeHidden {
		w.add("NOT t.hidden")
	}
	return w
}

// ListTransactionsAtOffset lists a connection's transactions newest first
// (by date, then id), skipping the first offset rows.
func (s *Store) ListTransactionsAtOffset(ctx context.Context, sc Scope, f ConnectionFilter, offset, limit int) ([]domain.Transaction, error) {
	w := transactionWhere(sc, f)
	return s.queryTransactions(ctx, w, " OFFSET "+w.arg(offset), limit)
}

// ListTransactionsAfter lists a connection's transactions newest first (by
// date, then id) that come after the keyset position, exclusive.
func (s *Store) ListTransactionsAfter(ctx context.Context, sc Scope, f ConnectionFilter, after Keyset, limit int) ([]domain.Transaction, error) {
	w := transactionWhere(sc, f)
	w.keyset("t.tx_date", "t.id", after)
	return s.queryTransactions(ctx, w, "", limit)
}

func (s *Store) queryTransactions(ctx context.Context, w *where, offset string, limit int) ([]domain.Transaction, error) {
	q := `SELECT ` + transactionColumns + ` FROM transactions t WHERE ` + w.sql() +
		` ORDER BY t.tx_date DESC, t.id DESC` + offset + ` LIMIT ` + w.arg(limit)
	rows, err := s.reader(ctx).Query(ctx, q, w.args...)
	if err != nil {
		return nil, fmt.Errorf("list connection transactions: %w", err)
	}
	defer rows.Close()
	out := make([]domain.Transaction, 0, limit)
	for rows.Next() {
		out = append(out, domain.Transaction{})
		if err := scanTransaction(rows, &out[len(out)-1]); err != nil {
			return nil, fmt.Errorf("list connection transactions: %w", err)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list connection transactions: %w", err)
	}
	return out, nil
}

// GetTransactionPosition returns the listing position (date, id) of one of the
// connection's transactions within the scope, whatever its status, or
// ErrNotFound.
func (s *Store) GetTransactionPosition(ctx context.Context, sc Scope, connectionID, id uuid.UUID) (Keyset, error) {
	var w where
	w.add("t.id = ?", id)
	w.add("t.bank_connection_id = ?", connectionID)
	w.scope("t", sc)
	var k Keyset
	var day domain.Date
	err := s.reader(ctx).QueryRow(ctx, `SELECT t.tx_date, t.id FROM transactions t WHERE `+w.sql(), w.args...).Scan(&day, &k.ID)
	if errors.Is(err, pgx.ErrNoRows) {
		return k, fmt.Errorf("transaction position %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return k, fmt.Errorf("transaction position %s: %w", id, err)
	}
	k.Date = day.Time
	return k, nil
}

// holdingWhere builds the predicates of a connection's holdings listing.
func holdingWhere(sc Scope, f ConnectionFilter) *where {
	w := &where{}
	w.scope("h", sc)
	w.add("a.bank_connection_id = ?", f.BankConnectionID)
	f.accounts(w, "h")
	return w
}

const holdingFrom = ` FROM holdings h JOIN accounts a ON a.id = h.account_id WHERE `

// ListHoldingsAtOffset lists a connection's holdings ordered by id,
// skipping the first offset rows.
func (s *Store) ListHoldingsAtOffset(ctx context.Context, sc Scope, f ConnectionFilter, offset, limit int) ([]domain.Holding, error) {
	w := holdingWhere(sc, f)
	q := `SELECT h.id, h.account_id, h.security_id, h.provider, h.quantity, h.cost_basis,
			h.institution_price, h.institution_value, h.currency, h.price_as_of` + holdingFrom + w.sql() +
		` ORDER BY h.id OFFSET ` + w.arg(offset) + ` LIMIT ` + w.arg(limit)
	rows, err := s.reader(ctx).Query(ctx, q, w.args...)
	if err != nil {
		return nil, fmt.Errorf("list connection holdings: %w", err)
	}
	defer rows.Close()
	out := make([]domain.Holding, 0, limit)
	for rows.Next() {
		var h domain.Holding
		if err := rows.Scan(&h.ID, &h.AccountID, &h.SecurityID, &h.Provider, &h.Quantity, &h.CostBasis,
			&h.InstitutionPrice, &h.InstitutionValue, &h.Currency, &h.PriceAsOf); err != nil {
			return nil, fmt.Errorf("list connection holdings: %w", err)
		}
		out = append(out, h)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list connection holdings: %w", err)
	}
	return out, nil
}

// CountHoldings counts the rows ListHoldingsAtOffset pages through.
func (s *Store) CountHoldings(ctx context.Context, sc Scope, f ConnectionFilter) (int, error) {
	w := holdingWhere(sc, f)
	return s.count(ctx, "holdings", `SELECT count(*)`+holdingFrom+w.sql(), w.args)
}

// investmentWhere builds the predicates of a connection's investment
// transaction listing.
func investmentWhere(sc Scope, f ConnectionFilter) *where {
	w := &where{}
	w.scope("it", sc)
	w.add("it.bank_connection_id = ?", f.BankConnectionID)
	f.accounts(w, "it")
	f.dates(w, "it.date")
	return w
}

// ListInvestmentTransactionsAtOffset lists a connection's investment
// transactions newest first (by date, then id), skipping the first offset rows.
func (s *Store) ListInvestmentTransactionsAtOffset(ctx context.Context, sc Scope, f ConnectionFilter, offset, limit int) ([]domain.InvestmentTransaction, error) {
	w := investmentWhere(sc, f)
	q := `SELECT it.id, it.account_id, it.security_id, it.provider_id, it.provider, it.date, it.type, it.subtype,
			it.quantity, it.price, it.amount, it.fees, it.currency, it.description
		FROM investment_transactions it WHERE ` + w.sql() +
		` ORDER BY it.date DESC, it.id DESC OFFSET ` + w.arg(offset) + ` LIMIT ` + w.arg(limit)
	rows, err := s.reader(ctx).Query(ctx, q, w.args...)
	if err != nil {
		return nil, fmt.Errorf("list connection investment transactions: %w", err)
	}
	defer rows.Close()
	out := make([]domain.InvestmentTransaction, 0, limit)
	for rows.Next() {
		var t domain.InvestmentTransaction
		if err := rows.Scan(&t.ID, &t.AccountID, &t.SecurityID, &t.ProviderID, &t.Provider, &t.Date, &t.Type, &t.Subtype,
			&t.Quantity, &t.Price, &t.Amount, &t.Fees, &t.Currency, &t.Description); err != nil {
			return nil, fmt.Errorf("list connection investment transactions: %w", err)
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list connection investment transactions: %w", err)
	}
	return out, nil
}

// CountInvestmentTransactions counts the rows
// ListInvestmentTransactionsAtOffset pages through.
func (s *Store) CountInvestmentTransactions(ctx context.Context, sc Scope, f ConnectionFilter) (int, error) {
	w := investmentWhere(sc, f)
	return s.count(ctx, "investment transactions", `SELECT count(*) FROM investment_transactions it WHERE `+w.sql(), w.args)
}

// CountAccounts counts the accounts ListAccounts lists for the filter.
func (s *Store) CountAccounts(ctx context.Context, sc Scope, f AccountFilter) (int, error) {
	w := accountsWhere(sc, f)
	return s.count(ctx, "accounts", `SELECT count(*) FROM accounts a WHERE `+w.sql(), w.args)
}

func (s *Store) count(ctx context.Context, what, q string, args []any) (int, error) {
	var n int
	if err := s.reader(ctx).QueryRow(ctx, q, args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("count %s: %w", what, err)
	}
	return n, nil
}
