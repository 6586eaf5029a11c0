package storage

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/finsync/finsync/domain"
)

// SyncTarget is everything a sync needs about one connection.
type SyncTarget struct {
	Connection        domain.BankConnection
	StorageMode       bool
	SealedCredentials []byte
	Cursor            string
	// ProviderState is adapter state kept between syncs (opaque JSON).
	ProviderState json.RawMessage
	// HasTransactions reports whether any transaction of the connection is
	// stored (a first sync can then copy rows in without upserting).
	HasTransactions bool
	// Request is the connection's outstanding request for a sync by a
	// provider notification, if any.
	Request SyncRequest
}

// GetSyncTarget loads a connection for syncing.
func (s *Store) GetSyncTarget(ctx context.Context, id uuid.UUID) (SyncTarget, error) {
	var t SyncTarget
	var err error
	var requested *time.Time
	if t.Connection, err = s.GetConnectionAnyUser(ctx, id); err != nil {
		return t, err
	}
	err = s.pool.QueryRow(ctx, `
		SELECT u.storage_mode, c.credentials_encrypted, c.sync_cursor, c.sync_state,
			EXISTS (SELECT 1 FROM transactions t WHERE t.bank_connection_id = c.id), c.sync_requested_at, now()
		FROM bank_connections c JOIN users u ON u.id = c.user_id WHERE c.id = $1`, id,
	).Scan(&t.StorageMode, &t.SealedCredentials, &t.Cursor, &t.ProviderState, &t.HasTransactions, &requested, &t.Request.Now)
	if err != nil {
		return t, fmt.Errorf("load sync target %s: %w", id, err)
	}
	if requested != nil {
		t.Request.RequestedAt = *requested
	}
	return t, nil
}

// ListDueConnections returns active (or errored) connections whose next sync is
// due, of users with storage mode on, oldest due first.
func (s *Store) ListDueConnections(ctx context.Context, now time.Time, limit int) ([]uuid.UUID, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT c.id FROM bank_connections c JOIN users u ON u.id = c.user_id
		WHERE c.status <> 'disabled' AND u.storage_mode AND c.next_sync_at IS NOT NULL AND c.next_sync_at <= $1
		ORDER BY c.next_sync_at LIMIT $2`, now, limit)
	if err != nil {
		return nil, fmt.Errorf("due connections: %w", err)
	}
	defer rows.Close()
	return pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
}

// ListActiveConnectionIDs lists every connection that is not disabled.
func (s *Store) ListActiveConnectionIDs(ctx context.Context) ([]uuid.UUID, error) {
	rows, err := s.pool.Query(ctx, `SELECT id FROM bank_connections WHERE status <> 'disabled' ORDER BY created_at, id`)
	if err != nil {
		return nil, fmt.Errorf("active connections: %w", err)
	}
	defer rows.Close()
	return pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
}
