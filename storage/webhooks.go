package storage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Consumer webhook event types (docs/webhooks.md).
const (
	WebhookSyncCompleted       = "sync.completed"
	WebhookTransactionsChanged = "transactions.changed"
	WebhookReauthRequired      = "connection.reauth_required"
	WebhookRecovered           = "connection.recovered"
	WebhookError               = "connection.error"
	WebhookConsentExpiring     = "connection.consent_expiring"
)

// WebhookEventTypes lists every event a subscription may ask for.
func WebhookEventTypes() []string {
	return []string{WebhookSyncCompleted, WebhookTransactionsChanged, WebhookReauthRequired, WebhookRecovered,
		WebhookError, WebhookConsentExpiring}
}

// reauthClass is the error class recorded on a connection whose provider
// asks the user to re-link it (resilience.ReauthRequired's name).
const reauthClass = "reauth_required"

// WebhookSubscription is a user's registered webhook.
type WebhookSubscription struct {
	ID     uuid.UUID
	UserID uuid.UUID
	URL    string
	// Events are the event types delivered, in registration order.
	Events []string
	// SealedSecret is the signing secret sealed by package secrets.
	SealedSecret []byte
	CreatedAt    time.Time
}

// NewWebhook is a subscription to create; the caller validates it.
type NewWebhook struct {
	UserID       uuid.UUID
	URL          string
	Events       []string
	SealedSecret []byte
}

const webhookColumns = `id, user_id, url, events, sealed_secret, created_at`

func scanWebhook(row pgx.Row) (WebhookSubscription, error) {
	var w WebhookSubscription
	err := row.Scan(&w.ID, &w.UserID, &w.URL, &w.Events, &w.SealedSecret, &w.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return w, ErrNotFound
	}
	w.CreatedAt = w.CreatedAt.UTC()
	return w, err
}

// CreateWebhook stores a subscription.
func (s *Store) CreateWebhook(ctx context.Context, n NewWebhook) (WebhookSubscription, error) {
	var w WebhookSubscription
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		// Creations of one user are serialised, so the count below holds.
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('finsync.webhooks:' || $1::text, 0))`, n.UserID); err != nil {
			return err
		}
		var count int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM webhook_subscriptions WHERE user_id = $1`, n.UserID).Scan(&count); err != nil {
			return err
		}
		if count >= MaxWebhooksPerUser {
			return ErrWebhookLimit
		}
		var err error
		w, err = scanWebhook(tx.QueryRow(ctx, `INSERT INTO webhook_subscriptions (user_id, url, events, sealed_secret)
			VALUES ($1, $2, $3, $4) RETURNING `+webhookColumns, n.UserID, n.URL, n.Events, n.SealedSecret))
		return err
	})
	if err != nil {
		return w, fmt.Errorf("create webhook of user %s: %w", n.UserID, err)
	}
	return w, nil
}

// MaxWebhooksPerUser bounds a user's subscriptions, and so the deliveries
// one event fans out to.
const MaxWebhooksPerUser = 20

// ErrWebhookLimit is returned by CreateWebhook when the user already has
// MaxWebhooksPerUser subscriptions.
var ErrWebhookLimit = errors.New("a user has at most 20 webhooks")

// ListWebhooks returns the user's subscriptions, oldest first.
func (s *Store) ListWebhooks(ctx context.Context, userID uuid.UUID) ([]WebhookSubscription, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+webhookColumns+` FROM webhook_subscriptions
		WHERE user_id = $1 ORDER BY created_at, id`, userID)
	if err != nil {
		return nil, fmt.Errorf("list webhooks of user %s: %w", userID, err)
	}
	defer rows.Close()
	var out []WebhookSubscription
	for rows.Next() {
		w, err := scanWebhook(rows)
		if err != nil {
			return nil, fmt.Errorf("list webhooks of user %s: %w", userID, err)
		}
		out = append(out, w)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list webhooks of user %s: %w", userID, err)
	}
	return out, nil
}

// GetWebhook returns the user's subscription; ErrNotFound when it does not
// exist or belongs to another user.
func (s *Store) GetWebhook(ctx context.Context, userID, id uuid.UUID) (WebhookSubscription, error) {
	w, err := scanWebhook(s.pool.QueryRow(ctx, `SELECT `+webhookColumns+` FROM webhook_subscriptions
		WHERE id = $1 AND user_id = $2`, id, userID))
	if err != nil {
		return w, fmt.Errorf("get webhook %s: %w", id, err)
	}
	return w, nil
}

// GetWebhookAnyUser returns a subscription whoever owns it (for the delivery
// worker); ErrNotFound once deleted.
func (s *Store) GetWebhookAnyUser(ctx context.Context, id uuid.UUID) (WebhookSubscription, error) {
	w, err := scanWebhook(s.pool.QueryRow(ctx, `SELECT `+webhookColumns+` FROM webhook_subscriptions WHERE id = $1`, id))
	if err != nil {
		return w, fmt.Errorf("get webhook %s: %w", id, err)
	}
	return w, nil
}

// DeleteWebhook deletes the user's subscription and its deliveries;
// ErrNotFound when it does not exist or belongs to another user. Events
// not yet delivered are dropped with it.
func (s *Store) DeleteWebhook(ctx context.Context, userID, id uuid.UUID) error {
	tag, err := s.pool.Exec(ctx, `DELETE FROM webhook_subscriptions WHERE id = $1 AND user_id = $2`, id, userID)
	if err != nil {
		return fmt.Errorf("delete webhook %s: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("delete webhook %s: %w", id, ErrNotFound)
	}
	return nil
}

// WebhookEvent is one event of a user's data, to deliver to each of the
// user's subscriptions that asked for its type.
type WebhookEvent struct {
	// ID identifies the event: the same for every subscription and across
	// retries, so a receiver can drop duplicates.
	ID     uuid.UUID
	UserID uuid.UUID
	// Type is one of the Webhook* constants.
	Type string
	// Data is the event's JSON object.
	Data      json.RawMessage
	CreatedAt time.Time
}

// enqueueWebhookEvent writes the event to the outbox of every subscription
// of the user that asked for its type, inside the transaction of the
// change, and returns those subscriptions' ids. It takes a share lock on
// each subscription, so that a drain deciding it is done
// (FinishWebhookDrain) either sees the event or finishes before the change
// commits.
func enqueueWebhookEvent(ctx context.Context, tx pgx.Tx, ev WebhookEvent) ([]uuid.UUID, error) {
	rows, err := tx.Query(ctx, `
		WITH subs AS (
			SELECT id, user_id FROM webhook_subscriptions WHERE user_id = $1 AND $2 = ANY (events)
			ORDER BY id FOR SHARE
		)
		INSERT INTO webhook_deliveries (subscription_id, event_id, user_id, type, data, created_at)
		SELECT subs.id, $3, subs.user_id, $2, $4, $5 FROM subs
		RETURNING subscription_id`, ev.UserID, ev.Type, ev.ID, ev.Data, ev.CreatedAt)
	if err != nil {
		return nil, fmt.Errorf("enqueue webhook event %s of user %s: %w", ev.Type, ev.UserID, err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil {
		return nil, fmt.Errorf("enqueue webhook event %s of user %s: %w", ev.Type, ev.UserID, err)
	}
	return ids, nil
}

// Delivery statuses shown by the API.
const (
	DeliveryPending   = "pending"
	DeliveryDelivered = "delivered"
	DeliveryFailed    = "failed"
)

// WebhookDelivery is one event's delivery to one subscription.
type WebhookDelivery struct {
	SubscriptionID uuid.UUID
	EventID        uuid.UUID
	Seq            int64
	Type           string
	Data           json.RawMessage
	CreatedAt      time.Time
	Attempts       int
	LastError      *string
	LastAttemptAt  *time.Time
	NextAttemptAt  *time.Time
	DeliveredAt    *time.Time
	FailedAt       *time.Time
}

// Status is DeliveryDelivered, DeliveryFailed (given up) or
// DeliveryPending (not yet delivered, retried while it stays so).
func (d WebhookDelivery) Status() string {
	switch {
	case d.DeliveredAt != nil:
		return DeliveryDelivered
	case d.FailedAt != nil:
		return DeliveryFailed
	}
	return DeliveryPending
}

const deliveryColumns = `subscription_id, event_id, seq, type, data, created_at, attempts, last_error,
	last_attempt_at, next_attempt_at, delivered_at, failed_at`

func scanDelivery(row pgx.Row) (WebhookDelivery, error) {
	var d WebhookDelivery
	err := row.Scan(&d.SubscriptionID, &d.EventID, &d.Seq, &d.Type, &d.Data, &d.CreatedAt, &d.Attempts, &d.LastError,
		&d.LastAttemptAt, &d.NextAttemptAt, &d.DeliveredAt, &d.FailedAt)
	d.CreatedAt = d.CreatedAt.UTC()
	for _, t := range []*time.Time{d.LastAttemptAt, d.NextAttemptAt, d.DeliveredAt, d.FailedAt} {
		if t != nil {
			*t = t.UTC()
		}
	}
	return d, err
}

// ListWebhookDeliveries returns up to limit deliveries of the user's
// subscription, newest first, after the delivery of event after (uuid.Nil:
// from the newest; a delivery pruned since ends the listing); ErrNotFound
// when the subscription is not the user's.
func (s *Store) ListWebhookDeliveries(ctx context.Context, userID, subscriptionID, after uuid.UUID, limit int) ([]WebhookDelivery, error) {
	if _, err := s.GetWebhook(ctx, userID, subscriptionID); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `SELECT `+deliveryColumns+` FROM webhook_deliveries
		WHERE subscription_id = $1 AND user_id = $2
			AND ($3 = '00000000-0000-0000-0000-000000000000'::uuid OR seq < (SELECT seq FROM webhook_deliveries
				WHERE subscription_id = $1 AND user_id = $2 AND event_id = $3))
		ORDER BY seq DESC LIMIT $4`, subscriptionID, userID, after, limit)
	if err != nil {
		return nil, fmt.Errorf("list deliveries of webhook %s: %w", subscriptionID, err)
	}
	defer rows.Close()
	var out []WebhookDelivery
	for rows.Next() {
		d, err := scanDelivery(rows)
		if err != nil {
			return nil, fmt.Errorf("list deliveries of webhook %s: %w", subscriptionID, err)
		}
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list deliveries of webhook %s: %w", subscriptionID, err)
	}
	return out, nil
}

// GetNextWebhookDelivery returns the subscription's oldest pending delivery;
// ok is false when none is pending.
func (s *Store) GetNextWebhookDelivery(ctx context.Context, subscriptionID uuid.UUID) (d WebhookDelivery, ok bool, err error) {
	d, err = scanDelivery(s.pool.QueryRow(ctx, `SELECT `+deliveryColumns+` FROM webhook_deliveries
		WHERE subscription_id = $1 AND delivered_at IS NULL AND failed_at IS NULL ORDER BY seq LIMIT 1`, subscriptionID))
	if errors.Is(err, pgx.ErrNoRows) {
		return d, false, nil
	}
	if err != nil {
		return d, false, fmt.Errorf("next delivery of webhook %s: %w", subscriptionID, err)
	}
	return d, true, nil
}

// MarkWebhookDelivered records the receiver's acknowledgement.
func (s *Store) MarkWebhookDelivered(ctx context.Context, subscriptionID, eventID uuid.UUID) error {
	if _, err := s.pool.Exec(ctx, `UPDATE webhook_deliveries SET delivered_at = now(), last_attempt_at = now(),
		attempts = attempts + 1, next_attempt_at = NULL WHERE subscription_id = $1 AND event_id = $2`,
		subscriptionID, eventID); err != nil {
		return fmt.Errorf("mark webhook event %s delivered: %w", eventID, err)
	}
	return nil
}

// MarkWebhookAttemptFailed records a failed attempt with its error: retried
// at next, or given up (failed) when next is nil, which lets later events
// of the subscription proceed.
func (s *Store) MarkWebhookAttemptFailed(ctx context.Context, subscriptionID, eventID uuid.UUID, msg string, next *time.Time) error {
	if _, err := s.pool.Exec(ctx, `UPDATE webhook_deliveries SET attempts = attempts + 1, last_error = $3,
		last_attempt_at = now(), next_attempt_at = $4, failed_at = CASE WHEN $4::timestamptz IS NULL THEN now() END
		WHERE subscription_id = $1 AND event_id = $2`, subscriptionID, eventID, msg, next); err != nil {
		return fmt.Errorf("mark webhook event %s failed: %w", eventID, err)
	}
	return nil
}

// webhookDrainDone locks the subscription for the rest of the transaction
// and reports whether nothing is pending. An uncommitted change that
// enqueued an event holds a share lock (enqueueWebhookEvent), so the
// answer accounts for every change committed before the caller's commit.
// It returns ErrNotFound for a deleted subscription.
func webhookDrainDone(ctx context.Context, tx pgx.Tx, subscriptionID uuid.UUID) (bool, error) {
	err := tx.QueryRow(ctx, `SELECT id FROM webhook_subscriptions WHERE id = $1 FOR UPDATE`, subscriptionID).Scan(new(uuid.UUID))
	if errors.Is(err, pgx.ErrNoRows) {
		return true, ErrNotFound
	}
	if err != nil {
		return false, fmt.Errorf("lock webhook %s: %w", subscriptionID, err)
	}
	var pending bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM webhook_deliveries
		WHERE subscription_id = $1 AND delivered_at IS NULL AND failed_at IS NULL)`, subscriptionID).Scan(&pending); err != nil {
		return false, fmt.Errorf("check outbox of webhook %s: %w", subscriptionID, err)
	}
	return !pending, nil
}

// pruneWebhookDeliveries deletes the subscription's deliveries finished
// (delivered or given up) longer ago than DeliveredRetention.
func pruneWebhookDeliveries(ctx context.Context, tx pgx.Tx, subscriptionID uuid.UUID) error {
	if _, err := tx.Exec(ctx, `DELETE FROM webhook_deliveries WHERE subscription_id = $1
		AND COALESCE(delivered_at, failed_at) < $2`, subscriptionID, time.Now().Add(-DeliveredRetention)); err != nil {
		return fmt.Errorf("prune outbox of webhook %s: %w", subscriptionID, err)
	}
	return nil
}

// ListWebhooksWithPendingDeliveries lists subscriptions with deliveries
// pending, for the periodic sweep that re-enqueues their drains.
func (s *Store) ListWebhooksWithPendingDeliveries(ctx context.Context, limit int) ([]uuid.UUID, error) {
	rows, err := s.pool.Query(ctx, `SELECT DISTINCT subscription_id FROM webhook_deliveries
		WHERE delivered_at IS NULL AND failed_at IS NULL LIMIT $1`, limit)
	if err != nil {
		return nil, fmt.Errorf("webhooks with pending deliveries: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil {
		return nil, fmt.Errorf("webhooks with pending deliveries: %w", err)
	}
	return ids, nil
}

// connectionState is what a sync outcome changes on a connection, read
// before the change to tell which events it causes.
type connectionState struct {
	userID     uuid.UUID
	status     string
	errorClass *string
}

// syncWebhookEvents enqueues the events a sync's outcome causes, in the
// transaction recording it: sync.completed and, when rows changed,
// transactions.changed for a successful sync; connection.recovered when a
// connection whose last sync failed succeeds again; and
// connection.reauth_required when a connection newly needs re-linking. It
// returns the subscriptions that received events.
func syncWebhookEvents(ctx context.Context, tx pgx.Tx, connectionID uuid.UUID, prev connectionState, o SyncOutcome) ([]uuid.UUID, error) {
	now := time.Now().UTC().Truncate(time.Microsecond)
	type event struct {
		typ  string
		data any
	}
	var events []event
	counts := map[string]any{"connectionId": connectionID, "added": o.Changes.Added,
		"modified": o.Changes.Modified, "removed": o.Changes.Removed}
	wasReauth := prev.status == "error" && prev.errorClass != nil && *prev.errorClass == reauthClass
	switch {
	case o.OK:
		if prev.status == "error" {
			events = append(events, event{WebhookRecovered, map[string]any{"connectionId": connectionID, "previousErrorClass": prev.errorClass}})
		}
		if o.Changes != (RowChanges{}) {
			events = append(events, event{WebhookTransactionsChanged, counts})
		}
		events = append(events, event{WebhookSyncCompleted, counts})
	case prev.status == "disabled":
	default:
		var reconnect *string
		if o.ReconnectURL != "" {
			reconnect = &o.ReconnectURL
		}
		if prev.status != "error" {
			events = append(events, event{WebhookError, map[string]any{"connectionId": connectionID,
				"errorCode": o.ErrorCode, "errorMessage": o.ErrorMessage, "errorClass": o.ErrorClass,
				"reconnectUrl": reconnect, "action": connectionAction("error", &o.ErrorClass, nil, false, "", now)}})
		}
		if o.ErrorClass == reauthClass && !wasReauth {
			events = append(events, event{WebhookReauthRequired, map[string]any{"connectionId": connectionID,
				"errorCode": o.ErrorCode, "errorMessage": o.ErrorMessage, "reconnectUrl": reconnect}})
		}
	}
	if o.OK && o.warnConsent {
		events = append(events, event{WebhookConsentExpiring, map[string]any{"connectionId": connectionID,
			"consentExpiresAt": o.ConsentExpiresAt.UTC()}})
	}
	var subs []uuid.UUID
	for _, e := range events {
		data, err := json.Marshal(e.data)
		if err != nil {
			return nil, fmt.Errorf("encode %s event: %w", e.typ, err)
		}
		ids, err := enqueueWebhookEvent(ctx, tx, WebhookEvent{ID: uuid.New(), UserID: prev.userID, Type: e.typ, Data: data, CreatedAt: now})
		if err != nil {
			return nil, err
		}
		for _, id := range ids {
			if !slices.Contains(subs, id) {
				subs = append(subs, id)
			}
		}
	}
	return subs, nil
}

// FinishWebhookDrain is the package function FinishWebhookDrain inside tx.
func (t *Tx) FinishWebhookDrain(ctx context.Context, subscriptionID uuid.UUID) (bool, error) {
	return webhookDrainDone(ctx, t.tx, subscriptionID)
}

// PruneWebhookDeliveries is the package function PruneWebhookDeliveries
// inside tx.
func (t *Tx) PruneWebhookDeliveries(ctx context.Context, subscriptionID uuid.UUID) error {
	return pruneWebhookDeliveries(ctx, t.tx, subscriptionID)
}
