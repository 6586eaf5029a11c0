package storage

import (
	"context"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// MarkDuplicateAccountsIn is markDuplicateAccounts inside tx, for
// benchmarks that roll the marks back.
func MarkDuplicateAccountsIn(ctx context.Context, tx pgx.Tx, userID uuid.UUID) ([]uuid.UUID, error) {
	return markDuplicateAccounts(ctx, tx, userID)
}
