package storage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
)

// GetConnectionIDByLink returns the id of the connection of provider whose
// link the provider names linkID (the provider link id its adapter
// reported at the connection's last successful sync); ErrNotFound when
// none. Two connections reporting one link (the same Item added twice)
// give the newer.
func (s *Store) GetConnectionIDByLink(ctx context.Context, provider, linkID string) (uuid.UUID, error) {
	var id uuid.UUID
	err := s.pool.QueryRow(ctx, `SELECT id FROM bank_connections
		WHERE provider = $1 AND provider_link_id = $2 ORDER BY created_at DESC, id LIMIT 1`, provider, linkID).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return id, ErrNotFound
	}
	if err != nil {
		return id, fmt.Errorf("connection of %s link: %w", provider, err)
	}
	return id, nil
}

// SyncRequest says when a connection's sync was last asked for by a
// provider notification, by the database's clock.
type SyncRequest struct {
	// RequestedAt is the last notification's time; zero when none is
	// outstanding.
	RequestedAt time.Time
	// Now is the database's current time, the clock RequestedAt is on.
	Now time.Time
}

// GetSyncRequest reads a connection's outstanding sync request (a sync
// waits a moment after the last one, so that notifications sent together
// give one sync).
func (s *Store) GetSyncRequest(ctx context.Context, id uuid.UUID) (SyncRequest, error) {
	var r SyncRequest
	var at *time.Time
	err := s.pool.QueryRow(ctx, `SELECT sync_requested_at, now() FROM bank_connections WHERE id = $1`, id).Scan(&at, &r.Now)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return r, fmt.Errorf("sync request of connection %s: %w", id, err)
	}
	if at != nil {
		r.RequestedAt = *at
	}
	return r, nil
}

// RequestSync records, inside the transaction, that a provider
// notification asked for connection id's sync now, and enqueues args (its
// sync job, unique while queued or running) unless one is queued already.
// A sync that is running when the request comes leaves the next one due at
// once when it ends, unless it began reading after the request
// (SyncOutcome.ReadFrom). It reports false, and does nothing, when the
// connection is off the schedule (disabled, or waiting for a re-auth:
// no provider call can succeed until the user acts) or gone.
func (t *Tx) RequestSync(ctx context.Context, jobs JobInserter, id uuid.UUID, args river.JobArgs) (bool, error) {
	tag, err := t.tx.Exec(ctx, `UPDATE bank_connections SET sync_requested_at = clock_timestamp()
		WHERE id = $1 AND status <> 'disabled' AND next_sync_at IS NOT NULL`, id)
	if err != nil {
		return false, fmt.Errorf("request sync of connection %s: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return false, nil
	}
	// A duplicate of a queued job is that job; one of a running job is
	// dropped, the request recorded above being seen when it ends.
	return true, t.Enqueue(ctx, jobs, args)
}

// RequestResync is RequestSync for a connection whose provider says a
// broken link works again: it puts a connection waiting for a re-auth
// back on the schedule first (a disabled one stays off).
func (t *Tx) RequestResync(ctx context.Context, jobs JobInserter, id uuid.UUID, args river.JobArgs) (bool, error) {
	_, err := t.tx.Exec(ctx, `UPDATE bank_connections SET next_sync_at = COALESCE(next_sync_at, now())
		WHERE id = $1 AND status <> 'disabled'`, id)
	if err != nil {
		return false, fmt.Errorf("reschedule connection %s: %w", id, err)
	}
	return t.RequestSync(ctx, jobs, id, args)
}

// RecordConsentEnd records, inside the transaction, when a connection's
// consent ends as a provider notification said (a pending
// expiration), with the connection.consent_expiring event when the end
// lies within warning and was not warned of yet. It returns the webhook
// subscriptions that received an event, whose drains the caller
// enqueues.
func (t *Tx) RecordConsentEnd(ctx context.Context, id uuid.UUID, ends time.Time, warning time.Duration) ([]uuid.UUID, error) {
	var userID uuid.UUID
	err := t.tx.QueryRow(ctx, `UPDATE bank_connections SET consent_expires_at = $2, updated_at = now()
		WHERE id = $1 RETURNING user_id`, id, ends).Scan(&userID)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("record consent end of connection %s: %w", id, err)
	}
	first, err := noteConsentWarning(ctx, t.tx, id, SyncOutcome{ConsentExpiresAt: &ends, ConsentWarning: warning})
	if err != nil || !first {
		return nil, err
	}
	return enqueueConsentExpiring(ctx, t.tx, userID, id, ends)
}

// enqueueConsentExpiring enqueues connection.consent_expiring for the
// user's subscriptions.
func enqueueConsentExpiring(ctx context.Context, tx pgx.Tx, userID, connectionID uuid.UUID, ends time.Time) ([]uuid.UUID, error) {
	data, err := json.Marshal(map[string]any{"connectionId": connectionID, "consentExpiresAt": ends.UTC()})
	if err != nil {
		return nil, fmt.Errorf("encode %s event: %w", WebhookConsentExpiring, err)
	}
	return enqueueWebhookEvent(ctx, tx, WebhookEvent{ID: uuid.New(), UserID: userID, Type: WebhookConsentExpiring,
		Data: data, CreatedAt: time.Now().UTC().Truncate(time.Microsecond)})
}
