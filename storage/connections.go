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

// ConnectionVisible reports whether the connection exists within the scope.
func (s *Store) ConnectionVisible(ctx context.Context, sc Scope, id uuid.UUID) (bool, error) {
	_, err := s.GetConnection(ctx, sc, id)
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// RepointConnection points a connection at another provider base URL with
// new sealed credentials (the development seed moving its demo connections
// to this run's simulator). It changes no sync state; ErrNotFound when the
// connection does not exist. Caveat: no user scope: for operator tools.
func (s *Store) RepointConnection(ctx context.Context, id uuid.UUID, baseURL string, sealedCredentials []byte) error {
	tag, err := s.pool.Exec(ctx, `UPDATE bank_connections SET base_url = $2, credentials_encrypted = $3, updated_at = now() WHERE id = $1`,
		id, baseURL, sealedCredentials)
	if err != nil {
		return fmt.Errorf("repoint connection %s: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("repoint connection %s: %w", id, ErrNotFound)
	}
	return nil
}
