package storage

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/finsync/finsync/domain"
)

// ErrUnknownCategory is returned when a category id is not one of the user's
// categories (another user's category is unknown too).
var ErrUnknownCategory = errors.New("unknown category")

// SetTransactionCategory records the user's choice of category for a
// transaction within the scope: categoryID, or no category when nil. The
// choice (category_source 'user') is kept by later syncs and rules. It
// returns ErrNotFound for a transaction outside the scope and
// ErrUnknownCategory for a category that is not the user's.
func (s *Store) SetTransactionCategory(ctx context.Context, sc Scope, id uuid.UUID, categoryID *uuid.UUID) (domain.Transaction, error) {
	var out domain.Transaction
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var w where
		w.add("t.id = ?", id)
		w.scope("t", sc)
		var found bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM transactions t WHERE `+w.sql()+` FOR UPDATE)`, w.args...).Scan(&found); err != nil {
			return fmt.Errorf("find transaction %s: %w", id, err)
		}
		if !found {
			return fmt.Errorf("set category of transaction %s: %w", id, ErrNotFound)
		}
		if categoryID != nil {
			ok, err := categoriesOwned(ctx, tx, sc.UserID, []uuid.UUID{*categoryID})
			if err == nil && !ok {
				err = ErrUnknownCategory
			}
			if err != nil {
				return err
			}
		}
		q := `UPDATE transactions t SET category_id = ` + w.arg(categoryID) + `, category_source = 'user',
			category_rule_id = NULL,
			provider_category_id = CASE WHEN category_kept(t.category_source, 'provider')
				THEN t.provider_category_id ELSE COALESCE(t.provider_category_id, t.category_id) END,
			updated_at = now()
			WHERE ` + w.sql() + ` RETURNING ` + transactionColumns + `, ` + transferIDColumn(&w, sc)
		var r txRow
		if err := r.scanWithTransfer(tx.QueryRow(ctx, q, w.args...), &out); err != nil {
			return fmt.Errorf("set category of transaction %s: %w", id, err)
		}
		return nil
	})
	return out, err
}
