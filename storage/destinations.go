package storage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Destination kinds.
const (
	DestinationAirtable     = "airtable"
	DestinationGoogleSheets = "google_sheets"
	DestinationWebhook      = "webhook"
)

// Destination is a tool to which changes of a user's manual accounts are
// propagated.
type Destination struct {
	ID     uuid.UUID
	UserID uuid.UUID
	Kind   string
	Name   string
	// Config holds the non-secret settings (a JSON object).
	Config json.RawMessage
	// SealedSecret holds the encrypted credentials.
	SealedSecret []byte
	CreatedAt    time.Time
	// AllAccounts makes every manual account of the user, including future
	// ones, propagate to the destination.
	AllAccounts bool
	// AccountIDs are the linked accounts (filled by ListDestinations).
	AccountIDs []uuid.UUID
	// Pending, Failed and LastError describe the outbox (filled by
	// ListDestinations): events waiting for delivery, events set aside
	// after a permanent refusal, and the latest failure message.
	Pending   int
	Failed    int
	LastError *string
}

// NewDestination describes a destination to create.
type NewDestination struct {
	UserID       uuid.UUID
	Kind         string
	Name         string
	Config       json.RawMessage
	SealedSecret []byte
}

const destinationColumns = `d.id, d.user_id, d.kind, d.name, d.config, d.sealed_secret, d.created_at, d.all_accounts`

func scanDestination(row pgx.Row) (Destination, error) {
	var d Destination
	err := row.Scan(&d.ID, &d.UserID, &d.Kind, &d.Name, &d.Config, &d.SealedSecret, &d.CreatedAt, &d.AllAccounts)
	if errors.Is(err, pgx.ErrNoRows) {
		return d, ErrNotFound
	}
	return d, err
}

// CreateDestination stores a destination.
func (s *Store) CreateDestination(ctx context.Context, nd NewDestination) (Destination, error) {
	if nd.Config == nil {
		nd.Config = json.RawMessage(`{}`)
	}
	d, err := scanDestination(s.pool.QueryRow(ctx, `
		INSERT INTO destinations AS d (user_id, kind, name, config, sealed_secret)
		VALUES ($1, $2, $3, $4, $5)
		RETURNING `+destinationColumns,
		nd.UserID, nd.Kind, nd.Name, nd.Config, nd.SealedSecret))
	if err != nil {
		return d, fmt.Errorf("create destination: %w", err)
	}
	return d, nil
}

// GetDestination returns a destination by id.
func (s *Store) GetDestination(ctx context.Context, id uuid.UUID) (Destination, error) {
	d, err := scanDestination(s.pool.QueryRow(ctx, `SELECT `+destinationColumns+` FROM destinations d WHERE d.id = $1`, id))
	if err != nil {
		return d, fmt.Errorf("get destination %s: %w", id, err)
	}
	return d, nil
}

// ListDestinations returns a user's destinations, oldest first, with their
// linked accounts.
func (s *Store) ListDestinations(ctx context.Context, userID uuid.UUID) ([]Destination, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+destinationColumns+`,
			COALESCE((SELECT array_agg(da.account_id ORDER BY da.created_at, da.account_id)
				FROM destination_accounts da WHERE da.destination_id = d.id), '{}'),
			(SELECT count(*) FROM destination_outbox o WHERE o.destination_id = d.id AND o.delivered_at IS NULL AND o.failed_at IS NULL),
			(SELECT count(*) FROM destination_outbox o WHERE o.destination_id = d.id AND o.failed_at IS NOT NULL),
			(SELECT o.last_error FROM destination_outbox o WHERE o.destination_id = d.id AND o.last_error IS NOT NULL
				ORDER BY o.seq DESC LIMIT 1)
		FROM destinations d WHERE d.user_id = $1 ORDER BY d.created_at, d.id`, userID)
	if err != nil {
		return nil, fmt.Errorf("list destinations: %w", err)
	}
	defer rows.Close()
	var out []Destination
	for rows.Next() {
		var d Destination
		if err := rows.Scan(&d.ID, &d.UserID, &d.Kind, &d.Name, &d.Config, &d.SealedSecret, &d.CreatedAt, &d.AllAccounts, &d.AccountIDs,
			&d.Pending, &d.Failed, &d.LastError); err != nil {
			return nil, fmt.Errorf("list destinations: %w", err)
		}
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list destinations: %w", err)
	}
	return out, nil
}

// LinkAccount links a manual account to a destination of the same user, so
// that the account's later changes are propagated to it. Linking twice is a
// no-op. It returns ErrNotFound when either is missing or they belong to
// different users, and ErrNotManual for a bank-synced account.
func (s *Store) LinkAccount(ctx context.Context, destinationID, accountID uuid.UUID) error {
	var manual bool
	err := s.pool.QueryRow(ctx, `SELECT a.manual FROM accounts a JOIN destinations d ON d.user_id = a.user_id
		WHERE a.id = $1 AND d.id = $2`, accountID, destinationID).Scan(&manual)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("link account %s to destination %s: %w", accountID, destinationID, ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("link account %s: %w", accountID, err)
	}
	if !manual {
		return fmt.Errorf("link account %s: %w", accountID, ErrNotManual)
	}
	if _, err := s.pool.Exec(ctx, `INSERT INTO destination_accounts (user_id, destination_id, account_id)
		SELECT user_id, id, $2 FROM destinations WHERE id = $1
		ON CONFLICT DO NOTHING`, destinationID, accountID); err != nil {
		return fmt.Errorf("link account %s: %w", accountID, err)
	}
	return nil
}

// ErrFollowsAll is returned for unlinking one account from a destination
// that follows all the user's accounts.
var ErrFollowsAll = errors.New("the destination follows all the user's accounts; unlink --all first")

// SetAllAccounts makes the destination follow all the user's manual
// accounts, including future ones (or stop doing so). It returns
// ErrNotFound for an unknown destination.
func (s *Store) SetAllAccounts(ctx context.Context, destinationID uuid.UUID, all bool) error {
	tag, err := s.pool.Exec(ctx, `UPDATE destinations SET all_accounts = $2, updated_at = now() WHERE id = $1`, destinationID, all)
	if err != nil {
		return fmt.Errorf("set all accounts of destination %s: %w", destinationID, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("destination %s: %w", destinationID, ErrNotFound)
	}
	return nil
}

// UnlinkAccount stops propagating the account's changes to the destination
// (events already enqueued are still delivered). It returns ErrNotFound
// when the account was not linked, and ErrFollowsAll when the destination
// follows all the user's accounts.
func (s *Store) UnlinkAccount(ctx context.Context, destinationID, accountID uuid.UUID) error {
	var all bool
	err := s.pool.QueryRow(ctx, `SELECT all_accounts FROM destinations WHERE id = $1`, destinationID).Scan(&all)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("destination %s: %w", destinationID, ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("unlink account %s: %w", accountID, err)
	}
	if all {
		return fmt.Errorf("unlink account %s: %w", accountID, ErrFollowsAll)
	}
	tag, err := s.pool.Exec(ctx, `DELETE FROM destination_accounts WHERE destination_id = $1 AND account_id = $2`,
		destinationID, accountID)
	if err != nil {
		return fmt.Errorf("unlink account %s: %w", accountID, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("unlink account %s from destination %s: %w", accountID, destinationID, ErrNotFound)
	}
	return nil
}

// ReconfigureDestination replaces a destination's non-secret settings and
// sealed credentials; its links and outbox are left as they are.
// ErrNotFound when the destination does not exist. Caveat: no user scope:
// for operator tools.
func (s *Store) ReconfigureDestination(ctx context.Context, id uuid.UUID, config json.RawMessage, sealedSecret []byte) error {
	tag, err := s.pool.Exec(ctx, `UPDATE destinations SET config = $2, sealed_secret = $3, updated_at = now() WHERE id = $1`,
		id, config, sealedSecret)
	if err != nil {
		return fmt.Errorf("reconfigure destination %s: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("reconfigure destination %s: %w", id, ErrNotFound)
	}
	return nil
}
