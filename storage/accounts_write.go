package storage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/finsync/finsync/domain"
)

// ManualAccount is what a user gives when creating a manual account.
type ManualAccount struct {
	Name             string
	InstitutionName  string
	Type             string
	Subtype          string
	Mask             string
	Currency         string
	CurrentBalance   *domain.Money
	AvailableBalance *domain.Money
	Liability        *domain.Liability
}

// CreateManualAccount stores a manual account, records today's balance when
// one is given, and adds the account to the creating credential's scope when
// that credential is scoped (credentialID may be uuid.Nil).
func (s *Store) CreateManualAccount(ctx context.Context, userID, credentialID uuid.UUID, m ManualAccount) (AccountWithConnection, error) {
	var out AccountWithConnection
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		out, err = createManualAccountTx(ctx, tx, userID, credentialID, m)
		return err
	})
	return out, err
}

// createManualAccountTx is CreateManualAccount inside the caller's transaction.
func createManualAccountTx(ctx context.Context, tx pgx.Tx, userID, credentialID uuid.UUID, m ManualAccount) (AccountWithConnection, error) {
	var liability []byte
	if m.Liability != nil {
		var err error
		if liability, err = json.Marshal(m.Liability); err != nil {
			return AccountWithConnection{}, fmt.Errorf("encode liability: %w", err)
		}
	}
	var id uuid.UUID
	err := tx.QueryRow(ctx, `
		INSERT INTO accounts (user_id, provider, manual, institution_name, name, mask, type, subtype, currency,
			current_balance, available_balance, balance_as_of, liability)
		VALUES ($1, 'manual', true, $2, $3, $4, $5, $6, $7, $8, $9, CASE WHEN $8::numeric IS NULL THEN NULL ELSE now() END, $10)
		RETURNING id`,
		userID, nullIfEmpty(m.InstitutionName), m.Name, nullIfEmpty(m.Mask), nullIfEmpty(m.Type), nullIfEmpty(m.Subtype),
		m.Currency, m.CurrentBalance, m.AvailableBalance, liability).Scan(&id)
	if err != nil {
		return AccountWithConnection{}, fmt.Errorf("create manual account: %w", err)
	}
	if m.CurrentBalance != nil {
		if err := recordBalance(ctx, tx, userID, id, domain.DateOf(now()), *m.CurrentBalance, m.Currency); err != nil {
			return AccountWithConnection{}, err
		}
	}
	if credentialID != uuid.Nil {
		if err := addAccountToScope(ctx, tx, credentialID, id); err != nil {
			return AccountWithConnection{}, err
		}
	}
	return getAccount(ctx, tx, Scope{UserID: userID}, id, "")
}

// ErrNotManual is returned for a write to a bank-synced account.
var ErrNotManual = errors.New("account is synced from a bank and read-only")

// ErrClosed is returned for a change to a closed account.
var ErrClosed = errors.New("account is closed")

// AccountPatch is a change to a manual account: nil fields are left alone.
// The Set* flags distinguish "clear" (flag true, value nil) from "leave".
type AccountPatch struct {
	Name     *string
	Type     *string
	Currency *string

	SetInstitutionName bool
	InstitutionName    *string
	SetSubtype         bool
	Subtype            *string
	SetMask            bool
	Mask               *string

	SetCurrentBalance   bool
	CurrentBalance      *domain.Money
	SetAvailableBalance bool
	AvailableBalance    *domain.Money
	// SetLiability replaces the whole liability object (nil clears it).
	SetLiability bool
	Liability    *domain.Liability
}

// updateManualAccountTx applies the patch to a manual account within the
// scope, inside the caller's transaction (so that the change's outbox
// events commit with it). A changed current balance also records today's
// balance snapshot. It returns ErrNotFound outside the scope, ErrNotManual
// for a bank-synced account and ErrClosed for a closed one.
func updateManualAccountTx(ctx context.Context, tx pgx.Tx, sc Scope, id uuid.UUID, p AccountPatch) (AccountWithConnection, error) {
	a, err := lockManualAccount(ctx, tx, sc, id)
	if err != nil {
		return a, err
	}
	if a.Status == domain.AccountClosed {
		return a, ErrClosed
	}
	if err := updateAccountRow(ctx, tx, a, p); err != nil {
		return a, err
	}
	if p.SetCurrentBalance && p.CurrentBalance != nil {
		cur := a.Currency
		if p.Currency != nil {
			cur = *p.Currency
		}
		if err := recordBalance(ctx, tx, a.UserID, id, domain.DateOf(now()), *p.CurrentBalance, cur); err != nil {
			return a, err
		}
	}
	return getAccount(ctx, tx, sc, id, "")
}

// lockManualAccount loads and locks an account of the scope, refusing
// bank-synced ones.
func lockManualAccount(ctx context.Context, tx pgx.Tx, sc Scope, id uuid.UUID) (AccountWithConnection, error) {
	a, err := getAccount(ctx, tx, sc, id, " FOR UPDATE OF a")
	if err != nil {
		return a, err
	}
	if !a.Manual {
		return a, fmt.Errorf("update account %s: %w", id, ErrNotManual)
	}
	return a, nil
}

func updateAccountRow(ctx context.Context, tx pgx.Tx, a AccountWithConnection, p AccountPatch) error {
	var liability []byte
	if p.SetLiability && p.Liability != nil {
		var err error
		if liability, err = json.Marshal(p.Liability); err != nil {
			return fmt.Errorf("encode liability: %w", err)
		}
	}
	_, err := tx.Exec(ctx, `
		UPDATE accounts SET
			name = COALESCE($2, name),
			type = COALESCE($3, type),
			currency = COALESCE($4, currency),
			institution_name = CASE WHEN $5 THEN $6 ELSE institution_name END,
			subtype = CASE WHEN $7 THEN $8 ELSE subtype END,
			mask = CASE WHEN $9 THEN $10 ELSE mask END,
			current_balance = CASE WHEN $11 THEN $12::numeric ELSE current_balance END,
			available_balance = CASE WHEN $13 THEN $14::numeric ELSE available_balance END,
			balance_as_of = CASE WHEN $11 OR $13 THEN now() ELSE balance_as_of END,
			liability = CASE WHEN $15 THEN $16::jsonb ELSE liability END,
			updated_at = now()
		WHERE id = $1`,
		a.ID, p.Name, p.Type, p.Currency,
		p.SetInstitutionName, p.InstitutionName, p.SetSubtype, p.Subtype, p.SetMask, p.Mask,
		p.SetCurrentBalance, p.CurrentBalance, p.SetAvailableBalance, p.AvailableBalance,
		p.SetLiability, liability)
	if err != nil {
		return fmt.Errorf("update account %s: %w", a.ID, err)
	}
	return nil
}

// closeManualAccountTx closes a manual account within the scope (status
// closed, closed_at set), inside the caller's transaction; its
// transactions and balance history are kept, and changed is false when it
// was already closed. It returns ErrNotFound outside the scope and
// ErrNotManual for a bank-synced account.
func closeManualAccountTx(ctx context.Context, tx pgx.Tx, sc Scope, id uuid.UUID) (out AccountWithConnection, changed bool, err error) {
	a, err := lockManualAccount(ctx, tx, sc, id)
	if err != nil {
		return a, false, err
	}
	if a.Status != domain.AccountClosed {
		if _, err := tx.Exec(ctx, `UPDATE accounts SET status = 'closed', closed_at = now(), updated_at = now() WHERE id = $1`, id); err != nil {
			return a, false, fmt.Errorf("close account %s: %w", id, err)
		}
		changed = true
	}
	out, err = getAccount(ctx, tx, sc, id, "")
	return out, changed, err
}

// CreateManualAccount is createManualAccountTx inside the transaction.
func (t *Tx) CreateManualAccount(ctx context.Context, userID, credentialID uuid.UUID, m ManualAccount) (AccountWithConnection, error) {
	return createManualAccountTx(ctx, t.tx, userID, credentialID, m)
}

// UpdateManualAccount is updateManualAccountTx inside the transaction.
func (t *Tx) UpdateManualAccount(ctx context.Context, sc Scope, id uuid.UUID, p AccountPatch) (AccountWithConnection, error) {
	return updateManualAccountTx(ctx, t.tx, sc, id, p)
}

// CloseManualAccount is closeManualAccountTx inside the transaction.
func (t *Tx) CloseManualAccount(ctx context.Context, sc Scope, id uuid.UUID) (out AccountWithConnection, changed bool, err error) {
	return closeManualAccountTx(ctx, t.tx, sc, id)
}
