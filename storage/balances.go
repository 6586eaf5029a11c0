package storage

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/finsync/finsync/domain"
)

// BalanceFilter narrows a balance-history listing.
type BalanceFilter struct {
	BankConnectionID *uuid.UUID
	AccountID        *uuid.UUID
	StartDate        *domain.Date
	EndDate          *domain.Date
}

// ListBalanceHistory lists stored daily balances, newest day first, after
// the keyset position.
func (s *Store) ListBalanceHistory(ctx context.Context, sc Scope, f BalanceFilter, after Keyset, limit int) ([]domain.BalanceEntry, error) {
	var w where
	w.scope("b", sc)
	if f.BankConnectionID != nil {
		w.add("a.bank_connection_id = ?", *f.BankConnectionID)
	}
	if f.AccountID != nil {
		w.add("b.account_id = ?", *f.AccountID)
	}
	if f.StartDate != nil {
		w.add("b.date >= ?", f.StartDate.Time)
	}
	if f.EndDate != nil {
		w.add("b.date <= ?", f.EndDate.Time)
	}
	w.keyset("b.date", "b.id", after)
	q := `SELECT b.id, b.account_id, a.name, b.date, b.balance, b.currency, b.derived
		FROM balance_history b JOIN accounts a ON a.id = b.account_id
		WHERE ` + w.sql() + ` ORDER BY b.date DESC, b.id DESC LIMIT ` + w.arg(limit)
	rows, err := s.reader(ctx).Query(ctx, q, w.args...)
	if err != nil {
		return nil, fmt.Errorf("list balance history: %w", err)
	}
	defer rows.Close()
	out := make([]domain.BalanceEntry, 0, limit)
	for rows.Next() {
		var e domain.BalanceEntry
		if err := rows.Scan(&e.ID, &e.AccountID, &e.AccountName, &e.Date, &e.Balance, &e.Currency, &e.Derived); err != nil {
			return nil, fmt.Errorf("list balance history: %w", err)
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// recordBalanceConflict is how a recorded balance meets the day's stored
// one: it replaces it, a derived one included.
const recordBalanceConflict = `ON CONFLICT (account_id, date, user_id) DO UPDATE SET
	balance = excluded.balance, currency = excluded.currency, derived = false, updated_at = now()`

// recordBalance upserts an account's recorded balance for one day (a second
// record the same day replaces the first, and a record replaces a derived
// balance of that day).
func recordBalance(ctx context.Context, q querier, userID, accountID uuid.UUID, day domain.Date, balance domain.Money, currency string) error {
	_, err := q.Exec(ctx, `
		INSERT INTO balance_history (user_id, account_id, date, balance, currency)
		VALUES ($1, $2, $3, $4, $5) `+recordBalanceConflict,
		userID, accountID, day.Time, balance, currency)
	if err != nil {
		return fmt.Errorf("record balance of account %s on %s: %w", accountID, day, err)
	}
	return nil
}
