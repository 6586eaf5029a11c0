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

// Account event types.
const (
	EventAccountCreated = "account.created"
	EventAccountUpdated = "account.updated"
	EventAccountClosed  = "account.closed"
)

// AccountEvent is one change of a manual account, to propagate to every
// destination the account is linked to.
type AccountEvent struct {
	// ID identifies the change; it is the same for every destination and
	// across delivery retries.
	ID        uuid.UUID
	AccountID uuid.UUID
	// Type is one of the Event* constants.
	Type string
	// Account is the account as it was after the change (the version 2
	// Account object, JSON-encoded).
	Account    json.RawMessage
	OccurredAt time.Time
}

// OutboxEvent is an event waiting for delivery to one destination.
type OutboxEvent struct {
	AccountEvent
	DestinationID uuid.UUID
	Seq           int64
	Attempts      int
}

// enqueueAccountEvent writes the event to the outbox of every destination
// the account is linked to (explicitly, or by a destination following all
// the user's accounts), inside the transaction of the change, and
// returns those destinations' ids. It takes a share lock on each of them,
// so that a drain deciding it is done (FinishDestinationDrain) either sees the event or
// finishes before the change commits.
func enqueueAccountEvent(ctx context.Context, tx pgx.Tx, ev AccountEvent) ([]uuid.UUID, error) {
	rows, err := tx.Query(ctx, `
		WITH linked AS (
			SELECT d.id, d.user_id FROM destinations d JOIN accounts a ON a.user_id = d.user_id AND a.id = $1
			WHERE d.all_accounts
				OR EXISTS (SELECT 1 FROM destination_accounts da WHERE da.destination_id = d.id AND da.account_id = $1)
			ORDER BY d.id FOR SHARE OF d
		)
		INSERT INTO destination_outbox (id, user_id, destination_id, account_id, type, payload, occurred_at)
		SELECT $2, linked.user_id, linked.id, $1, $3, $4, $5 FROM linked
		RETURNING destination_id`,
		ev.AccountID, ev.ID, ev.Type, ev.Account, ev.OccurredAt)
	if err != nil {
		return nil, fmt.Errorf("enqueue %s of account %s: %w", ev.Type, ev.AccountID, err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil {
		return nil, fmt.Errorf("enqueue %s of account %s: %w", ev.Type, ev.AccountID, err)
	}
	return ids, nil
}

// ListDestinationPendingEvents returns up to limit undelivered events of the destination,
// in the order of their changes.
func (s *Store) ListDestinationPendingEvents(ctx context.Context, destinationID uuid.UUID, limit int) ([]OutboxEvent, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT id, account_id, type, payload, occurred_at, destination_id, seq, attempts
		FROM destination_outbox
		WHERE destination_id = $1 AND delivered_at IS NULL AND failed_at IS NULL
		ORDER BY seq LIMIT $2`, destinationID, limit)
	if err != nil {
		return nil, fmt.Errorf("pending events of destination %s: %w", destinationID, err)
	}
	defer rows.Close()
	var out []OutboxEvent
	for rows.Next() {
		var e OutboxEvent
		if err := rows.Scan(&e.ID, &e.AccountID, &e.Type, &e.Account, &e.OccurredAt, &e.DestinationID, &e.Seq, &e.Attempts); err != nil {
			return nil, fmt.Errorf("pending events of destination %s: %w", destinationID, err)
		}
		e.OccurredAt = e.OccurredAt.UTC()
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("pending events of destination %s: %w", destinationID, err)
	}
	return out, nil
}

// MarkDestinationDelivered records the destination's acknowledgement of the event.
func (s *Store) MarkDestinationDelivered(ctx context.Context, destinationID, eventID uuid.UUID) error {
	if _, err := s.pool.Exec(ctx, `UPDATE destination_outbox SET delivered_at = now(), attempts = attempts + 1,
		last_error = NULL WHERE destination_id = $1 AND id = $2`, destinationID, eventID); err != nil {
		return fmt.Errorf("mark event %s delivered: %w", eventID, err)
	}
	return nil
}

// MarkDestinationAttemptFailed records a failed delivery attempt; a permanent failure
// also sets the event aside (failed_at) so that later events can proceed.
func (s *Store) MarkDestinationAttemptFailed(ctx context.Context, destinationID, eventID uuid.UUID, msg string, permanent bool) error {
	if _, err := s.pool.Exec(ctx, `UPDATE destination_outbox SET attempts = attempts + 1, last_error = $3,
		failed_at = CASE WHEN $4 THEN now() ELSE NULL END
		WHERE destination_id = $1 AND id = $2`, destinationID, eventID, msg, permanent); err != nil {
		return fmt.Errorf("mark event %s failed: %w", eventID, err)
	}
	return nil
}

// DeliveredRetention is how long delivered events stay in the outbox (for
// inspection) before a finished drain prunes them.
const DeliveredRetention = 7 * 24 * time.Hour

// pruneDelivered deletes the destination's events delivered longer ago
// than DeliveredRetention.
func pruneDelivered(ctx context.Context, tx pgx.Tx, destinationID uuid.UUID) error {
	if _, err := tx.Exec(ctx, `DELETE FROM destination_outbox WHERE destination_id = $1 AND delivered_at < $2`,
		destinationID, time.Now().Add(-DeliveredRetention)); err != nil {
		return fmt.Errorf("prune outbox of destination %s: %w", destinationID, err)
	}
	return nil
}

// drainDone locks the destination for the rest of the transaction and
// reports whether its outbox is empty. A change that enqueued an event and
// has not committed yet holds a share lock (EnqueueAccountEvent), so the
// answer accounts for every change committed before the caller's commit;
// one committing after it finds the caller's drain finished and enqueues a
// new one. It returns ErrNotFound for a deleted destination.
func drainDone(ctx context.Context, tx pgx.Tx, destinationID uuid.UUID) (bool, error) {
	var pending bool
	err := tx.QueryRow(ctx, `SELECT id FROM destinations WHERE id = $1 FOR UPDATE`, destinationID).Scan(new(uuid.UUID))
	if errors.Is(err, pgx.ErrNoRows) {
		return true, ErrNotFound
	}
	if err != nil {
		return false, fmt.Errorf("lock destination %s: %w", destinationID, err)
	}
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM destination_outbox
		WHERE destination_id = $1 AND delivered_at IS NULL AND failed_at IS NULL)`, destinationID).Scan(&pending); err != nil {
		return false, fmt.Errorf("check outbox of destination %s: %w", destinationID, err)
	}
	return !pending, nil
}

// ListDestinationsWithPendingEvents lists destinations whose outbox holds
// undelivered events, for the periodic sweep that re-enqueues their drains.
func (s *Store) ListDestinationsWithPendingEvents(ctx context.Context, limit int) ([]uuid.UUID, error) {
	rows, err := s.pool.Query(ctx, `SELECT DISTINCT destination_id FROM destination_outbox
		WHERE delivered_at IS NULL AND failed_at IS NULL LIMIT $1`, limit)
	if err != nil {
		return nil, fmt.Errorf("destinations with pending events: %w", err)
	}
	defer rows.Close()
	return pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
}

// EnqueueAccountEvent is EnqueueAccountEvent inside the transaction.
func (t *Tx) EnqueueAccountEvent(ctx context.Context, ev AccountEvent) ([]uuid.UUID, error) {
	return enqueueAccountEvent(ctx, t.tx, ev)
}

// FinishDestinationDrain is the package function FinishDestinationDrain inside tx.
func (t *Tx) FinishDestinationDrain(ctx context.Context, destinationID uuid.UUID) (bool, error) {
	return drainDone(ctx, t.tx, destinationID)
}

// PruneDestinationDelivered is the package function PruneDestinationDelivered inside tx.
func (t *Tx) PruneDestinationDelivered(ctx context.Context, destinationID uuid.UUID) error {
	return pruneDelivered(ctx, t.tx, destinationID)
}
