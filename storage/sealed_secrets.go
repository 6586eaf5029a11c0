package storage

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// SealedColumn names a column that holds values sealed by package secrets.
type SealedColumn string

// The columns that hold sealed values.
const (
	// SealedConnectionCredentials are bank connections' provider credentials.
	SealedConnectionCredentials SealedColumn = "connection credentials"
	// SealedDestinationSecrets are destinations' secrets.
	SealedDestinationSecrets SealedColumn = "destination secrets"
	// SealedWebhookSecrets are consumer webhooks' signing secrets.
	SealedWebhookSecrets SealedColumn = "webhook secrets"
	// SealedProviderSettings are providers' settings (an application's
	// signing key), set once for all their connections.
	SealedProviderSettings SealedColumn = "provider settings"
)

// SealedColumns lists every column that holds sealed values.
func SealedColumns() []SealedColumn {
	return []SealedColumn{SealedConnectionCredentials, SealedDestinationSecrets, SealedWebhookSecrets, SealedProviderSettings}
}

// SealedValue is one row's sealed value.
type SealedValue struct {
	ID     uuid.UUID
	Sealed []byte
}

// SealedReplacement replaces one row's sealed value, Old, by New.
type SealedReplacement struct {
	ID       uuid.UUID
	Old, New []byte
}

// sealedTable returns the table and column names of a sealed column.
func sealedTable(col SealedColumn) (table, column string, err error) {
	switch col {
	case SealedConnectionCredentials:
		return "bank_connections", "credentials_encrypted", nil
	case SealedDestinationSecrets:
		return "destinations", "sealed_secret", nil
	case SealedWebhookSecrets:
		return "webhook_subscriptions", "sealed_secret", nil
	case SealedProviderSettings:
		return "provider_settings", "settings_encrypted", nil
	}
	return "", "", fmt.Errorf("unknown sealed column %q", col)
}

// ListSealedValuesAfter returns up to limit non-null sealed values of col whose
// row id is greater than after (uuid.Nil to start), ordered by id: one page
// of a keyset walk over every row, users regardless.
func (s *Store) ListSealedValuesAfter(ctx context.Context, col SealedColumn, after uuid.UUID, limit int) ([]SealedValue, error) {
	table, column, err := sealedTable(col)
	if err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `SELECT id, `+column+` FROM `+table+`
		WHERE id > $1 AND `+column+` IS NOT NULL ORDER BY id LIMIT $2`, after, limit)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", col, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[SealedValue])
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", col, err)
	}
	return out, nil
}

// ListSealedValuesByID returns the current non-null sealed values of col for
// ids; rows deleted or emptied since are absent.
func (s *Store) ListSealedValuesByID(ctx context.Context, col SealedColumn, ids []uuid.UUID) ([]SealedValue, error) {
	table, column, err := sealedTable(col)
	if err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `SELECT id, `+column+` FROM `+table+`
		WHERE id = ANY($1) AND `+column+` IS NOT NULL ORDER BY id`, ids)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", col, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[SealedValue])
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", col, err)
	}
	return out, nil
}

// ReplaceSealedValues writes each replacement in one statement, each only
// if its row still holds Old (compare-and-set: a value written meanwhile,
// by a reconnect for instance, is never overwritten), and returns the ids
// of the rows it changed.
func (s *Store) ReplaceSealedValues(ctx context.Context, col SealedColumn, reps []SealedReplacement) ([]uuid.UUID, error) {
	table, column, err := sealedTable(col)
	if err != nil {
		return nil, err
	}
	if len(reps) == 0 {
		return nil, nil
	}
	ids := make([]uuid.UUID, len(reps))
	olds := make([][]byte, len(reps))
	news := make([][]byte, len(reps))
	for i, r := range reps {
		ids[i], olds[i], news[i] = r.ID, r.Old, r.New
	}
	rows, err := s.pool.Query(ctx, `UPDATE `+table+` t SET `+column+` = r.new
		FROM unnest($1::uuid[], $2::bytea[], $3::bytea[]) AS r(id, old, new)
		WHERE t.id = r.id AND t.`+column+` = r.old
		RETURNING t.id`, ids, olds, news)
	if err != nil {
		return nil, fmt.Errorf("replace %s: %w", col, err)
	}
	changed, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil {
		return nil, fmt.Errorf("replace %s: %w", col, err)
	}
	return changed, nil
}
