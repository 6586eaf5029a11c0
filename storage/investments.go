package storage

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/finsync/finsync/domain"
)

// InvestmentFilter narrows holdings and investment-transaction listings.
type InvestmentFilter struct {
	BankConnectionID *uuid.UUID
	AccountID        *uuid.UUID
	// AccountIDs, when non-nil, limits rows to these accounts (v1's accountIds).
	AccountIDs []uuid.UUID
	StartDate  *domain.Date
	EndDate    *domain.Date
}

func (f InvestmentFilter) apply(w *where, alias string) {
	if f.BankConnectionID != nil {
		w.add("a.bank_connection_id = ?", *f.BankConnectionID)
	}
	if f.AccountID != nil {
		w.add(alias+".account_id = ?", *f.AccountID)
	}
	if f.AccountIDs != nil {
		w.add(alias+".account_id = ANY(?)", f.AccountIDs)
	}
}

// ListHoldings lists holdings ordered by id after the keyset position (only
// its ID is used), with the securities they reference.
func (s *Store) ListHoldings(ctx context.Context, sc Scope, f InvestmentFilter, after Keyset, limit int) ([]domain.Holding, error) {
	var w where
	w.scope("h", sc)
	f.apply(&w, "h")
	if !after.IsZero() {
		w.add("h.id > ?", after.ID)
	}
	q := `SELECT h.id, h.account_id, h.security_id, h.provider, h.quantity, h.cost_basis,
			h.institution_price, h.institution_value, h.currency, h.price_as_of
		FROM holdings h JOIN accounts a ON a.id = h.account_id
		WHERE ` + w.sql() + ` ORDER BY h.id LIMIT ` + w.arg(limit)
	rows, err := s.reader(ctx).Query(ctx, q, w.args...)
	if err != nil {
		return nil, fmt.Errorf("list holdings: %w", err)
	}
	defer rows.Close()
	var out []domain.Holding
	for rows.Next() {
		var h domain.Holding
		if err := rows.Scan(&h.ID, &h.AccountID, &h.SecurityID, &h.Provider, &h.Quantity, &h.CostBasis,
			&h.InstitutionPrice, &h.InstitutionValue, &h.Currency, &h.PriceAsOf); err != nil {
			return nil, fmt.Errorf("list holdings: %w", err)
		}
		out = append(out, h)
	}
	return out, rows.Err()
}

// ListInvestmentTransactions lists investment events newest first after the
// keyset position.
func (s *Store) ListInvestmentTransactions(ctx context.Context, sc Scope, f InvestmentFilter, after Keyset, limit int) ([]domain.InvestmentTransaction, error) {
	var w where
	w.scope("it", sc)
	f.apply(&w, "it")
	if f.StartDate != nil {
		w.add("it.date >= ?", f.StartDate.Time)
	}
	if f.EndDate != nil {
		w.add("it.date <= ?", f.EndDate.Time)
	}
	w.keyset("it.date", "it.id", after)
	q := `SELECT it.id, it.account_id, it.security_id, it.provider_id, it.provider, it.date, it.type, it.subtype,
			it.quantity, it.price, it.amount, it.fees, it.currency, it.description
		FROM investment_transactions it JOIN accounts a ON a.id = it.account_id
		WHERE ` + w.sql() + ` ORDER BY it.date DESC, it.id DESC LIMIT ` + w.arg(limit)
	rows, err := s.reader(ctx).Query(ctx, q, w.args...)
	if err != nil {
		return nil, fmt.Errorf("list investment transactions: %w", err)
	}
	defer rows.Close()
	var out []domain.InvestmentTransaction
	for rows.Next() {
		var t domain.InvestmentTransaction
		if err := rows.Scan(&t.ID, &t.AccountID, &t.SecurityID, &t.ProviderID, &t.Provider, &t.Date, &t.Type, &t.Subtype,
			&t.Quantity, &t.Price, &t.Amount, &t.Fees, &t.Currency, &t.Description); err != nil {
			return nil, fmt.Errorf("list investment transactions: %w", err)
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// ListSecurities loads the user's securities with the given ids (none
// without a query when ids is empty).
func (s *Store) ListSecurities(ctx context.Context, userID uuid.UUID, ids []uuid.UUID) ([]domain.Security, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	rows, err := s.reader(ctx).Query(ctx, `SELECT id, provider_security_id, symbol, name, type, close_price, currency
		FROM securities WHERE user_id = $1 AND id = ANY($2) ORDER BY id`, userID, ids)
	if err != nil {
		return nil, fmt.Errorf("list securities: %w", err)
	}
	defer rows.Close()
	var out []domain.Security
	for rows.Next() {
		var sec domain.Security
		var currency *string
		if err := rows.Scan(&sec.ID, &sec.ProviderSecurityID, &sec.Symbol, &sec.Name, &sec.Type, &sec.ClosePrice, &currency); err != nil {
			return nil, fmt.Errorf("list securities: %w", err)
		}
		sec.Currency = deref(currency)
		out = append(out, sec)
	}
	return out, rows.Err()
}

// DatasetState says whether a connection's dataset was ever stored and how
// the last attempt to fetch it ended.
type DatasetState struct {
	BankConnectionID uuid.UUID
	Stored           bool
	LastErrorClass   string
}

// ListDatasetStates reports, for each of the scope's connections that could hold
// the dataset (a nil connection id means all of them), whether it was stored.
func (s *Store) ListDatasetStates(ctx context.Context, sc Scope, dataset string, connectionID *uuid.UUID) ([]DatasetState, error) {
	var w where
	connectionScope(&w, sc)
	if connectionID != nil {
		w.add("c.id = ?", *connectionID)
	}
	q := `SELECT c.id, d.stored_at IS NOT NULL, COALESCE(d.last_error_class, '')
		FROM bank_connections c LEFT JOIN connection_datasets d ON d.bank_connection_id = c.id AND d.dataset = ` + w.arg(dataset) +
		` WHERE ` + w.sql()
	rows, err := s.reader(ctx).Query(ctx, q, w.args...)
	if err != nil {
		return nil, fmt.Errorf("dataset states: %w", err)
	}
	defer rows.Close()
	var out []DatasetState
	for rows.Next() {
		var d DatasetState
		if err := rows.Scan(&d.BankConnectionID, &d.Stored, &d.LastErrorClass); err != nil {
			return nil, fmt.Errorf("dataset states: %w", err)
		}
		out = append(out, d)
	}
	return out, rows.Err()
}
