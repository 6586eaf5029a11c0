package storage

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// Why a connection's sync is held back (ConnectionHealth.HeldBackReason).
const (
	// HeldBackProviderQuota: the provider's request quota for the
	// connection (a daily one, for SimpleFIN and GoCardless banks) is spent.
	HeldBackProviderQuota = "provider_quota"
	// HeldBackRateLimit: a rate limit, the fleet's own bucket or the
	// provider's 429, asks the sync to wait.
	HeldBackRateLimit = "rate_limit"
	// HeldBackBreakerOpen: the provider's or the institution's circuit
	// breaker is open.
	HeldBackBreakerOpen = "breaker_open"
)

// Hold is a connection's sync held back: until when, and why (one of the
// HeldBack* reasons).
type Hold struct {
	Until  time.Time
	Reason string
}

// HoldBack records that the connection's sync waits for wait, for reason
// (one of the HeldBack* reasons), replacing any earlier hold. The end is
// computed with the database's clock, as every reader compares it with that
// clock. A connection that no longer exists records nothing.
func (s *Store) HoldBack(ctx context.Context, id uuid.UUID, wait time.Duration, reason string) error {
	_, err := s.pool.Exec(ctx, `UPDATE bank_connections SET
    held_back_until = now() + make_interval(secs => $2::float8), held_back_reason = $3
WHERE id = $1`, id, max(wait, 0).Seconds(), reason)
	if err != nil {
		return fmt.Errorf("hold back the sync of connection %s: %w", id, err)
	}
	return nil
}

// ReleaseHold clears the connection's hold, if any: a sync of it ran.
// Caveat: it writes only when a hold is set, so a sync that runs while
// another process records a hold for the same connection may leave that
// hold in place until it ends.
func (s *Store) ReleaseHold(ctx context.Context, id uuid.UUID) error {
	_, err := s.pool.Exec(ctx, `UPDATE bank_connections SET held_back_until = NULL, held_back_reason = NULL
WHERE id = $1 AND held_back_until IS NOT NULL`, id)
	if err != nil {
		return fmt.Errorf("release the hold on connection %s: %w", id, err)
	}
	return nil
}

// ListHolds returns, by id, the holds of the given connections that have not
// ended yet (by the database's clock); a connection without one is absent.
func (s *Store) ListHolds(ctx context.Context, ids []uuid.UUID) (map[uuid.UUID]Hold, error) {
	out := map[uuid.UUID]Hold{}
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT id, held_back_until, held_back_reason FROM bank_connections
WHERE id = ANY($1) AND held_back_until > now()`, ids)
	if err != nil {
		return nil, fmt.Errorf("read held-back syncs: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id uuid.UUID
		var h Hold
		if err := rows.Scan(&id, &h.Until, &h.Reason); err != nil {
			return nil, fmt.Errorf("read held-back syncs: %w", err)
		}
		out[id] = h
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read held-back syncs: %w", err)
	}
	return out, nil
}
