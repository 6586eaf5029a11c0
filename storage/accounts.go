package storage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/finsync/finsync/domain"
)

// AccountWithConnection is an account and the status of the connection it
// is synced through (nil for manual accounts).
type AccountWithConnection struct {
	domain.Account
	ConnectionStatus *string
}

const accountColumns = `a.id, a.user_id, a.bank_connection_id, a.provider_account_id, a.provider,
	a.institution_name, a.name, a.mask, a.type, a.subtype, a.currency,
	a.current_balance, a.available_balance, a.credit_limit, a.balance_as_of,
	a.manual, a.status, a.closed_at, a.liability, a.created_at, a.updated_at, bc.status, a.duplicate_of_account_id`

const accountFrom = `accounts a LEFT JOIN bank_connections bc ON bc.id = a.bank_connection_id`

func scanAccount(row pgx.Row) (AccountWithConnection, error) {
	var a AccountWithConnection
	var providerAccountID, institution, mask, typ, subtype *string
	var liability []byte
	err := row.Scan(&a.ID, &a.UserID, &a.BankConnectionID, &providerAccountID, &a.Provider,
		&institution, &a.Name, &mask, &typ, &subtype, &a.Currency,
		&a.CurrentBalance, &a.AvailableBalance, &a.CreditLimit, &a.BalanceAsOf,
		&a.Manual, &a.Status, &a.ClosedAt, &liability, &a.CreatedAt, &a.UpdatedAt, &a.ConnectionStatus, &a.DuplicateOfAccountID)
	if errors.Is(err, pgx.ErrNoRows) {
		return a, ErrNotFound
	}
	if err != nil {
		return a, err
	}
	a.ProviderAccountID, a.InstitutionName, a.Mask, a.Type, a.Subtype =
		deref(providerAccountID), deref(institution), deref(mask), deref(typ), deref(subtype)
	if len(liability) > 0 {
		a.Liability = new(domain.Liability)
		if err := json.Unmarshal(liability, a.Liability); err != nil {
			return a, fmt.Errorf("decode liability of account %s: %w", a.ID, err)
		}
	}
	return a, nil
}

// AccountFilter narrows an account listing.
type AccountFilter struct {
	BankConnectionID *uuid.UUID
	// Status is "active", "closed" or "all".
	Status string
}

// accountsWhere selects the accounts the filter keeps of the scope's:
// ListAccounts lists them and CountAccounts counts them.
func accountsWhere(sc Scope, f AccountFilter) *where {
	var w where
	w.add("a.user_id = ?", sc.UserID)
	w.inScope("a.id", sc)
	if f.BankConnectionID != nil {
		w.add("a.bank_connection_id = ?", *f.BankConnectionID)
	}
	if f.Status != "" && f.Status != "all" {
		w.add("a.status = ?", f.Status)
	}
	return &w
}

// ListAccounts lists the scope's accounts in creation order after the
// keyset position (Date holds the creation time).
func (s *Store) ListAccounts(ctx context.Context, sc Scope, f AccountFilter, after Keyset, limit int) ([]AccountWithConnection, error) {
	w := accountsWhere(sc, f)
	if !after.IsZero() {
		w.add("(a.created_at, a.id) > (?, ?)", after.Date, after.ID)
	}
	q := `SELECT ` + accountColumns + ` FROM ` + accountFrom + ` WHERE ` + w.sql() +
		` ORDER BY a.created_at, a.id LIMIT ` + w.arg(limit)
	rows, err := s.reader(ctx).Query(ctx, q, w.args...)
	if err != nil {
		return nil, fmt.Errorf("list accounts: %w", err)
	}
	defer rows.Close()
	var out []AccountWithConnection
	for rows.Next() {
		a, err := scanAccount(rows)
		if err != nil {
			return nil, fmt.Errorf("list accounts: %w", err)
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// GetAccount loads one account within the scope.
func (s *Store) GetAccount(ctx context.Context, sc Scope, id uuid.UUID) (AccountWithConnection, error) {
	return getAccount(ctx, s.reader(ctx), sc, id, "")
}

func getAccount(ctx context.Context, q querier, sc Scope, id uuid.UUID, lock string) (AccountWithConnection, error) {
	var w where
	w.add("a.id = ?", id)
	w.add("a.user_id = ?", sc.UserID)
	w.inScope("a.id", sc)
	a, err := scanAccount(q.QueryRow(ctx, `SELECT `+accountColumns+` FROM `+accountFrom+` WHERE `+w.sql()+lock, w.args...))
	if err != nil {
		return a, fmt.Errorf("get account %s: %w", id, err)
	}
	return a, nil
}

// IsAccountVisible reports whether the account exists within the scope.
func (s *Store) IsAccountVisible(ctx context.Context, sc Scope, id uuid.UUID) (bool, error) {
	var w where
	w.add("a.id = ?", id)
	w.add("a.user_id = ?", sc.UserID)
	w.inScope("a.id", sc)
	var ok bool
	err := s.reader(ctx).QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM accounts a WHERE `+w.sql()+`)`, w.args...).Scan(&ok)
	if err != nil {
		return false, fmt.Errorf("check account %s: %w", id, err)
	}
	return ok, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func nullIfEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// now is the database-independent clock used for timestamps written by Go.
func now() time.Time { return time.Now().UTC() }
