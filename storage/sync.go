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

// NewConnection describes a bank connection to register.
type NewConnection struct {
	UserID          uuid.UUID
	Provider        string
	InstitutionName string
	BaseURL         string
	// SealedCredentials are the provider credentials, already encrypted.
	SealedCredentials []byte
	// SyncInterval overrides the default interval between periodic syncs.
	SyncInterval *time.Duration
}

// CreateConnection stores a new bank connection, due for its first sync now.
func (s *Store) CreateConnection(ctx context.Context, nc NewConnection) (domain.BankConnection, error) {
	var id uuid.UUID
	err := s.pool.QueryRow(ctx, `
		INSERT INTO bank_connections (user_id, provider, institution_name, base_url, credentials_encrypted, sync_interval, next_sync_at)
		VALUES ($1, $2, $3, $4, $5, $6, now()) RETURNING id`,
		nc.UserID, nc.Provider, nc.InstitutionName, nc.BaseURL, nc.SealedCredentials, nc.SyncInterval).Scan(&id)
	if err != nil {
		return domain.BankConnection{}, fmt.Errorf("create connection: %w", err)
	}
	return s.GetConnection(ctx, Scope{UserID: nc.UserID}, id)
}

// SetConnectionEnabled disables a connection (it is no longer synced) or
// enables it again (back to active, due for a sync at once).
func (s *Store) SetConnectionEnabled(ctx context.Context, id uuid.UUID, enabled bool) (domain.BankConnection, error) {
	q := `UPDATE bank_connections c SET status = 'disabled', next_sync_at = NULL, updated_at = now()
		WHERE c.id = $1 RETURNING ` + connectionColumns
	if enabled {
		q = `UPDATE bank_connections c SET status = CASE WHEN c.status = 'disabled' THEN 'active' ELSE c.status END,
			next_sync_at = now(), updated_at = now() WHERE c.id = $1 RETURNING ` + connectionColumns
	}
	c, err := scanConnection(s.pool.QueryRow(ctx, q, id))
	if err != nil {
		return c, fmt.Errorf("set connection %s enabled=%v: %w", id, enabled, err)
	}
	return c, nil
}

// ConnectionByID loads a connection regardless of user (ops and workers).
func (s *Store) ConnectionByID(ctx context.Context, id uuid.UUID) (domain.BankConnection, error) {
	c, err := scanConnection(s.pool.QueryRow(ctx, `SELECT `+connectionColumns+` FROM bank_connections c WHERE c.id = $1`, id))
	if err != nil {
		return c, fmt.Errorf("get connection %s: %w", id, err)
	}
	return c, nil
}

// ListAllConnections lists connections for ops, optionally of one user.
func (s *Store) ListAllConnections(ctx context.Context, userID *uuid.UUID) ([]domain.BankConnection, error) {
	var w where
	if userID != nil {
		w.add("c.user_id = ?", *userID)
	}
	return s.queryConnections(ctx, &w)
}

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

// SyncTarget loads a connection for syncing.
func (s *Store) SyncTarget(ctx context.Context, id uuid.UUID) (SyncTarget, error) {
	var t SyncTarget
	var err error
	var requested *time.Time
	if t.Connection, err = s.ConnectionByID(ctx, id); err != nil {
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

// DueConnections returns active (or errored) connections whose next sync is
// due, of users with storage mode on, oldest due first.
func (s *Store) DueConnections(ctx context.Context, now time.Time, limit int) ([]uuid.UUID, error) {
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

// ActiveConnectionIDs lists every connection that is not disabled.
func (s *Store) ActiveConnectionIDs(ctx context.Context) ([]uuid.UUID, error) {
	rows, err := s.pool.Query(ctx, `SELECT id FROM bank_connections WHERE status <> 'disabled' ORDER BY created_at, id`)
	if err != nil {
		return nil, fmt.Errorf("active connections: %w", err)
	}
	defer rows.Close()
	return pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
}
