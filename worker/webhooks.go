package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/riverqueue/river"

	"github.com/finsync/finsync/destinations"
	"github.com/finsync/finsync/internal/netguard"
	"github.com/finsync/finsync/jobargs"
	"github.com/finsync/finsync/secrets"
	"github.com/finsync/finsync/storage"
)

// Defaults of consumer webhook delivery (docs/webhooks.md).
const (
	// DefaultWebhookTimeout bounds one delivery attempt.
	DefaultWebhookTimeout = 10 * time.Second
	// MaxWebhookTimeout is the longest attempt allowed, so that a drain
	// attempt (a slice and the call in hand) ends well before River
	// takes its job for stuck (RescueStuckJobsAfter).
	MaxWebhookTimeout = 30 * time.Second
	// DefaultWebhookRetryCap caps the wait between two attempts of an event.
	DefaultWebhookRetryCap = 5 * time.Minute
	// DefaultWebhookRetryFor is how long an event is retried before it is
	// given up: an attempt failing this long after the event was created
	// is the last.
	DefaultWebhookRetryFor = 24 * time.Hour
	// DefaultWebhookWorkers is how many subscriptions are drained at once.
	DefaultWebhookWorkers = 10
)

// webhookSlice is how long one drain attempt delivers before it snoozes to
// go on in a new attempt; the attempt's timeout adds the call in hand and
// webhookJobSlack, staying below RescueStuckJobsAfter.
const (
	webhookSlice    = 30 * time.Second
	webhookJobSlack = 5 * time.Second
)

// Webhooks configures the delivery of consumer webhooks.
type Webhooks struct {
	// Box opens the subscriptions' sealed secrets.
	Box *secrets.Box
	// Policy decides which addresses deliveries may reach (the zero value:
	// public https only).
	Policy netguard.Policy
	// Client sends the deliveries; nil uses Policy.Client(Timeout). A
	// client given here should check addresses the same way.
	Client *http.Client
	// Timeout bounds one attempt; zero uses DefaultWebhookTimeout, and
	// MaxWebhookTimeout caps it.
	Timeout time.Duration
	// RetryCap and RetryFor override DefaultWebhookRetryCap and
	// DefaultWebhookRetryFor when positive.
	RetryCap, RetryFor time.Duration
	// Workers sizes the webhook queue; zero uses DefaultWebhookWorkers.
	Workers int
	// Metrics records the attempts and the delivery lag; nil records none.
	Metrics *Metrics
}

// withDefaults fills the zero fields.
func (c Webhooks) withDefaults() Webhooks {
	if c.Timeout <= 0 {
		c.Timeout = DefaultWebhookTimeout
	}
	c.Timeout = min(c.Timeout, MaxWebhookTimeout)
	if c.RetryCap <= 0 {
		c.RetryCap = DefaultWebhookRetryCap
	}
	if c.RetryFor <= 0 {
		c.RetryFor = DefaultWebhookRetryFor
	}
	if c.Workers <= 0 {
		c.Workers = DefaultWebhookWorkers
	}
	if c.Client == nil {
		c.Client = c.Policy.Client(c.Timeout)
	}
	return c
}

// addWebhookWorker registers the webhook worker when webhooks are
// configured.
func addWebhookWorker(workers *river.Workers, cfg Config) {
	if cfg.Webhooks == nil {
		return
	}
	river.AddWorker(workers, NewWebhookWorker(cfg.Store, *cfg.Webhooks, cfg.Log))
}

// webhookQueues adds the webhook queue when webhooks are configured.
func webhookQueues(queues map[string]river.QueueConfig, cfg Config) {
	if cfg.Webhooks != nil {
		queues[jobargs.QueueWebhooks] = river.QueueConfig{MaxWorkers: cfg.Webhooks.withDefaults().Workers}
	}
}

// WebhookWorker runs jobargs.DeliverWebhook: it drains one subscription's
// outbox in order, one event at a time, each signed with the
// subscription's secret. A failed event is retried with backoff (the job
// snoozes until it is due) and holds back the later ones, so order is
// kept; an event is given up after RetryFor, or at once when its URL names
// a literal address the policy refuses (a host name resolving to a refused
// address is retried like one that does not resolve, and told the same).
type WebhookWorker struct {
	river.WorkerDefaults[jobargs.DeliverWebhook]
	store *storage.Store
	cfg   Webhooks
	log   *slog.Logger
}

// NewWebhookWorker returns the webhook delivery worker.
func NewWebhookWorker(st *storage.Store, cfg Webhooks, log *slog.Logger) *WebhookWorker {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &WebhookWorker{store: st, cfg: cfg.withDefaults(), log: log}
}

// Timeout bounds one drain attempt.
func (w *WebhookWorker) Timeout(*river.Job[jobargs.DeliverWebhook]) time.Duration {
	return webhookSlice + w.cfg.Timeout + webhookJobSlack
}

// NextRetry backs off an attempt that failed for another reason than a
// delivery (the database, say), capped at the retry cap.
func (w *WebhookWorker) NextRetry(job *river.Job[jobargs.DeliverWebhook]) time.Time {
	return time.Now().Add(retryDelay(job.Attempt, w.cfg.RetryCap))
}

// Work drains the subscription's outbox.
func (w *WebhookWorker) Work(ctx context.Context, job *river.Job[jobargs.DeliverWebhook]) error {
	sub, err := w.store.GetWebhookAnyUser(ctx, job.Args.SubscriptionID)
	if errors.Is(err, storage.ErrNotFound) {
		return nil // deleted, and its outbox with it
	}
	if err != nil {
		return err
	}
	if w.cfg.Box == nil {
		return fmt.Errorf("webhook %s: no key to open its secret", sub.ID)
	}
	secret, err := w.cfg.Box.Open(sub.SealedSecret)
	if err != nil {
		return fmt.Errorf("open secret of webhook %s: %w", sub.ID, err)
	}
	return w.drain(ctx, job, sub, string(secret))
}

// drain delivers the pending events in order until none is left
// (completing the job), an event must wait for its next attempt, or the
// slice ends (both snooze the job).
func (w *WebhookWorker) drain(ctx context.Context, job *river.Job[jobargs.DeliverWebhook], sub storage.WebhookSubscription, secret string) error {
	until := time.Now().Add(webhookSlice)
	for {
		d, ok, err := w.store.GetNextWebhookDelivery(ctx, sub.ID)
		if err != nil {
			return err
		}
		if !ok {
			done, err := w.finish(ctx, job)
			if err != nil || done {
				return err
			}
			continue
		}
		now := time.Now()
		if d.NextAttemptAt != nil && now.Before(*d.NextAttemptAt) {
			return river.JobSnooze(d.NextAttemptAt.Sub(now))
		}
		if !now.Before(until) {
			return river.JobSnooze(0)
		}
		if wait, err := w.attempt(ctx, sub, secret, d); err != nil || wait > 0 {
			if err != nil {
				return err
			}
			return river.JobSnooze(wait)
		}
	}
}

// attempt delivers one event and records the outcome. It returns how long
// to wait before the event's next attempt (zero: go on with the next
// event). The owner sees the failure in general terms (netguard.Describe:
// no address, no resolver, a name that does not resolve told as one
// resolving to a refused address); the operator's log has the detail,
// with the URL redacted.
func (w *WebhookWorker) attempt(ctx context.Context, sub storage.WebhookSubscription, secret string, d storage.WebhookDelivery) (time.Duration, error) {
	f := w.send(ctx, sub, secret, d)
	if f == nil {
		if err := w.store.MarkWebhookDelivered(ctx, sub.ID, d.EventID); err != nil {
			return 0, err
		}
		w.cfg.Metrics.observeWebhook(d.Type, webhookDelivered, time.Since(d.CreatedAt))
		return 0, nil
	}
	if ctx.Err() != nil {
		return 0, ctx.Err() // stopping: the attempt did not fail, retry it
	}
	var next *time.Time
	wait := retryDelay(d.Attempts+1, w.cfg.RetryCap)
	msg := f.shown
	switch {
	case f.permanent:
	case time.Since(d.CreatedAt) >= w.cfg.RetryFor:
		msg = fmt.Sprintf("given up after %d attempts over %s: %s", d.Attempts+1, w.cfg.RetryFor, msg)
	default:
		t := time.Now().Add(wait)
		next = &t
	}
	if err := w.store.MarkWebhookAttemptFailed(ctx, sub.ID, d.EventID, msg, next); err != nil {
		return 0, err
	}
	outcome := webhookRetry
	if next == nil {
		outcome = webhookGivenUp
	}
	w.cfg.Metrics.observeWebhook(d.Type, outcome, 0)
	attrs := []any{"webhook_id", sub.ID, "event_id", d.EventID, "type", d.Type, "url", netguard.RedactURL(sub.URL),
		"attempt", d.Attempts + 1, "given_up", next == nil, "error", f.detail}
	if errors.Is(f.detail, netguard.ErrRefused) {
		attrs = append(attrs, "hint", "the address is refused: set "+netguard.EnvAllowPrivate+"=1 only in development")
	}
	w.log.WarnContext(ctx, "webhook delivery failed", attrs...)
	if next == nil {
		return 0, nil
	}
	return wait, nil
}

// webhookFailure is a failed attempt: what its owner is shown, what the
// operator's log says, and whether no later attempt can succeed.
type webhookFailure struct {
	shown     string
	detail    error
	permanent bool
}

// webhookBody is the JSON body of a delivery.
type webhookBody struct {
	ID        uuid.UUID       `json:"id"`
	Type      string          `json:"type"`
	CreatedAt time.Time       `json:"createdAt"`
	Data      json.RawMessage `json:"data"`
}

// send POSTs the event, signed; any 2xx acknowledges it (nil). A redirect
// is a failure (it is never followed), as is any other status. Only a
// literal address the policy refuses is a permanent failure.
func (w *WebhookWorker) send(ctx context.Context, sub storage.WebhookSubscription, secret string, d storage.WebhookDelivery) *webhookFailure {
	body, err := json.Marshal(webhookBody{ID: d.EventID, Type: d.Type, CreatedAt: d.CreatedAt, Data: d.Data})
	if err != nil {
		return &webhookFailure{shown: "could not encode the event", detail: fmt.Errorf("encode event %s: %w", d.EventID, err)}
	}
	ctx, cancel := context.WithTimeout(ctx, w.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, sub.URL, bytes.NewReader(body))
	if err != nil {
		return &webhookFailure{shown: "invalid URL", detail: fmt.Errorf("build request: %w", netguard.RedactError(err)), permanent: true}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "finsync-webhooks/1")
	req.Header.Set(destinations.SignatureHeader, destinations.Sign(secret, time.Now(), body))
	resp, err := w.cfg.Client.Do(req)
	if err != nil {
		return &webhookFailure{shown: netguard.Describe(sub.URL, err), detail: netguard.RedactError(err),
			permanent: netguard.PermanentRefusal(sub.URL, err)}
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if s := resp.StatusCode; s < 200 || s > 299 {
		return &webhookFailure{shown: netguard.StatusMessage(s), detail: fmt.Errorf("HTTP %d", s)}
	}
	return nil
}

// finish completes the job in the transaction that found the outbox empty
// under the subscription's lock, pruning old deliveries; it reports false
// when events arrived meanwhile.
func (w *WebhookWorker) finish(ctx context.Context, job *river.Job[jobargs.DeliverWebhook]) (bool, error) {
	id := job.Args.SubscriptionID
	var done bool
	err := w.store.Atomic(ctx, func(tx *storage.Tx) error {
		var err error
		done, err = tx.FinishWebhookDrain(ctx, id)
		if errors.Is(err, storage.ErrNotFound) {
			done, err = true, nil
		}
		if err != nil || !done {
			return err
		}
		if err := tx.PruneWebhookDeliveries(ctx, id); err != nil {
			return err
		}
		return storage.CompleteJob(ctx, tx, job)
	})
	if err != nil {
		return false, fmt.Errorf("finish drain of webhook %s: %w", id, err)
	}
	return done, nil
}

// finishSync records a sync's outcome and enqueues, in the same
// transaction, the drains of the webhook subscriptions its events went to.
// Outside a River job (Syncer.Sync called directly) no drain is enqueued:
// the scheduler's sweep picks the events up.
func (s *Syncer) finishSync(ctx context.Context, id uuid.UUID, o storage.SyncOutcome) error {
	return s.Store.Atomic(ctx, func(tx *storage.Tx) error {
		subs, err := tx.FinishSync(ctx, id, o)
		if err != nil {
			return err
		}
		return enqueueWebhookDrains(ctx, tx, subs)
	})
}

// enqueueWebhookDrains inserts a drain per subscription inside tx, with
// the River client of the running job.
func enqueueWebhookDrains(ctx context.Context, tx *storage.Tx, subs []uuid.UUID) error {
	if len(subs) == 0 {
		return nil
	}
	client, err := storage.JobClientFromContext(ctx)
	if err != nil {
		return nil // not in a job: left to the sweep
	}
	params := make([]river.InsertManyParams, len(subs))
	for i, id := range subs {
		params[i] = river.InsertManyParams{Args: jobargs.DeliverWebhook{SubscriptionID: id}}
	}
	if err := tx.EnqueueMany(ctx, client, params); err != nil {
		return fmt.Errorf("enqueue webhook drains: %w", err)
	}
	return nil
}
