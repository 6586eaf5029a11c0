package storage

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/finsync/finsync/domain"
)

const connectionColumns = `c.id, c.user_id, c.provider, c.institution_id, c.institution_name,
	c.institution_logo_url, c.status, c.base_url, c.last_synced_at, c.last_provider_error_code,
	c.last_provider_error_message, c.reconnect_url, c.next_sync_at, c.sync_interval, c.created_at, c.consent_expires_at`

func scanConnection(row pgx.Row) (domain.BankConnection, error) {
	var c domain.BankConnection
	var logo *string
	var interval *time.Duration
	err := row.Scan(&c.ID, &c.UserID, &c.Provider, &c.InstitutionID, &c.InstitutionName,
		&logo, &c.Status, &c.BaseURL, &c.LastSyncedAt, &c.LastProviderErrorCode,
		&c.LastProviderErrorMessage, &c.ReconnectURL, &c.NextSyncAt, &interval, &c.CreatedAt, &c.ConsentExpiresAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return c, ErrNotFound
	}
	c.InstitutionLogoURL = deref(logo)
	if interval != nil {
		c.SyncInterval = *interval
	}
	return c, err
}

// connectionScope limits connections to those of the user that, for a
// scoped credential, hold an account in the scope.
func connectionScope(w *where, sc Scope) {
	w.add("c.user_id = ?", sc.UserID)
	if sc.Scoped() {
		w.add("EXISTS (SELECT 1 FROM accounts sa WHERE sa.bank_connection_id = c.id AND sa.user_id = c.user_id AND sa.id IN "+scopeAccounts+")",
			sc.CredentialID, sc.UserID)
	}
}

// ListConnections lists the scope's bank connections. status is "active"
// (every connection that is not disabled), "disabled" or "all".
func (s *Store) ListConnections(ctx context.Context, sc Scope, status string) ([]domain.BankConnection, error) {
	var w where
	connectionScope(&w, sc)
	switch status {
	case "active":
		w.add("c.status <> 'disabled'")
	case "disabled":
		w.add("c.status = 'disabled'")
	}
	return s.queryConnections(ctx, &w)
}

// queryConnections lists the connections matching w in creation order.
func (s *Store) queryConnections(ctx context.Context, w *where) ([]domain.BankConnection, error) {
	rows, err := s.reader(ctx).Query(ctx, `SELECT `+connectionColumns+` FROM bank_connections c WHERE `+w.sql()+` ORDER BY c.created_at, c.id`, w.args...)
	if err != nil {
		return nil, fmt.Errorf("list connections: %w", err)
	}
	defer rows.Close()
	var out []domain.BankConnection
	for rows.Next() {
		c, err := scanConnection(rows)
		if err != nil {
			return nil, fmt.Errorf("list connections: %w", err)
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// GetConnection loads one connection within the scope.
func (s *Store) GetConnection(ctx context.Context, sc Scope, id uuid.UUID) (domain.BankConnection, error) {
	var w where
	w.add("c.id = ?", id)
	connectionScope(&w, sc)
	c, err := scanConnection(s.reader(ctx).QueryRow(ctx, `SELECT `+connectionColumns+` FROM bank_connections c WHERE `+w.sql(), w.args...))
	if err != nil {
		return c, fmt.Errorf("get connection %s: %w", id, err)
	}
	return c, nil
}

// IsConnectionVisible reports whether the connection exists within the scope.
func (s *Store) IsConnectionVisible(ctx context.Context, sc Scope, id uuid.UUID) (bool, error) {
	_, err := s.GetConnection(ctx, sc, id)
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

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

// GetConnectionAnyUser loads a connection regardless of user (ops and workers).
func (s *Store) GetConnectionAnyUser(ctx context.Context, id uuid.UUID) (domain.BankConnection, error) {
	c, err := scanConnection(s.pool.QueryRow(ctx, `SELECT `+connectionColumns+` FROM bank_connections c WHERE c.id = $1`, id))
	if err != nil {
		return c, fmt.Errorf("get connection %s: %w", id, err)
	}
	return c, nil
}

// ListConnectionsAnyUser lists connections for ops, optionally of one user.
func (s *Store) ListConnectionsAnyUser(ctx context.Context, userID *uuid.UUID) ([]domain.BankConnection, error) {
	var w where
	if userID != nil {
		w.add("c.user_id = ?", *userID)
	}
	return s.queryConnections(ctx, &w)
}
