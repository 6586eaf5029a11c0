package storage

import (
	"context"
	"encoding/json"
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
	err := s.InTx(ctx, func(tx pgx.Tx) error {
		var err error
		out, err = CreateManualAccountTx(ctx, tx, userID, credentialID, m)
		return err
	})
	return out, err
}

// CreateManualAccountTx is CreateManualAccount inside the caller's transaction.
func CreateManualAccountTx(ctx context.Context, tx pgx.Tx, userID, credentialID uuid.UUID, m ManualAccount) (AccountWithConnection, error) {
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
		if err := RecordBalance(ctx, tx, userID, id, domain.DateOf(now()), *m.CurrentBalance, m.Currency); err != nil {
			return AccountWithConnection{}, err
		}
	}
	if credentialID != uuid.Nil {
		if err := AddAccountToScope(ctx, tx, credentialID, id); err != nil {
			return AccountWithConnection{}, err
		}
	}
	return getAccount(ctx, tx, Scope{UserID: userID}, id, "")
}
