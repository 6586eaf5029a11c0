// Package destinations delivers changes of manual accounts to the tools a
// user linked them to: Airtable (records upserted through its REST API),
// Google Sheets (one row per account through the Sheets API v4) and signed
// JSON webhooks. Every call goes through the shared resilience layer of the
// provider adapters (resilience.Guard): a rate limiter and a circuit breaker
// per destination, and bounded retries of transient failures.
package destinations

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/google/uuid"
	"golang.org/x/oauth2"

	"github.com/finsync/finsync/internal/netguard"
	"github.com/finsync/finsync/resilience"
)

// Kinds of destination.
const (
	KindAirtable     = "airtable"
	KindGoogleSheets = "google_sheets"
	KindWebhook      = "webhook"
)

// Event is one change of an account, as delivered: the webhook body, and
// the source of the row written to Airtable and Google Sheets.
type Event struct {
	// ID identifies the change; it stays the same across retries.
	ID uuid.UUID `json:"id"`
	// Type is account.created, account.updated or account.closed.
	Type string `json:"type"`
	// OccurredAt is when the change was made.
	OccurredAt time.Time `json:"occurredAt"`
	// Account is the version 2 Account object after the change.
	Account json.RawMessage `json:"account"`
}

// Target is a destination with its settings and decrypted credentials.
type Target struct {
	ID   uuid.UUID
	Kind string
	// Config is the non-secret settings (a JSON object).
	Config json.RawMessage
	// Secret is the credentials (a JSON object).
	Secret json.RawMessage
}

// Options tunes a Deliverer. The zero value gives the defaults.
type Options struct {
	// Client sends the requests (default: a client with a 20s timeout).
	Client *http.Client
	// Guard overrides the resilience settings of every destination
	// (default: DefaultGuardConfig of its kind).
	Guard *resilience.Config
	// Rates keeps every destination's rate limit for all the processes
	// that deliver together (storage implements it over PostgreSQL), so
	// a limit holds for the fleet, not per worker. Nil limits in this
	// process's memory only; a Guard with its own Store keeps that one.
	Rates resilience.RateStore
	// Now is the clock of webhook signatures (default time.Now).
	Now func() time.Time
	// Webhooks decides which addresses webhook destinations may reach:
	// the zero value refuses loopback, private, link-local, multicast and
	// cloud-metadata addresses, checked on the address dialled, and plain
	// http. Webhook calls never follow redirects.
	Webhooks netguard.Policy
	// WebhookClient overrides the client of webhook calls (default:
	// Webhooks.Client with a 20s timeout); it should check addresses the
	// same way.
	WebhookClient *http.Client
}

// Deliverer sends events to destinations. It keeps one resilience guard
// per destination, so one failing destination never holds back another.
// It is safe for concurrent use.
type Deliverer struct {
	opts Options

	mu     sync.Mutex
	guards map[uuid.UUID]*resilience.Guard
	tokens map[uuid.UUID]oauth2.TokenSource
}

// NewDeliverer returns a Deliverer.
func NewDeliverer(opts Options) *Deliverer {
	if opts.Client == nil {
		opts.Client = &http.Client{Timeout: 20 * time.Second}
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.WebhookClient == nil {
		opts.WebhookClient = opts.Webhooks.Client(20 * time.Second)
	}
	return &Deliverer{opts: opts, guards: map[uuid.UUID]*resilience.Guard{}, tokens: map[uuid.UUID]oauth2.TokenSource{}}
}

// DefaultGuardConfig is the resilience layer of one destination of the
// kind: the service's documented rate limit (Airtable 5 requests a second
// per base; Google Sheets 60 writes a minute per user; webhooks 10 a
// second), a breaker opened by 5 consecutive failures for 30 seconds, and
// one quick retry.
func DefaultGuardConfig(kind string) resilience.Config {
	var l resilience.Limits
	switch kind {
	case KindAirtable:
		l.Provider = resilience.PerSecond(5, 5)
	case KindGoogleSheets:
		l.Provider = resilience.PerMinute(60, 10)
	default:
		l.Provider = resilience.PerSecond(10, 10)
	}
	return resilience.Config{
		Limits:   &l,
		Retries:  1,
		Provider: resilience.BreakerConfig{Failures: 5, OpenFor: 30 * time.Second},
	}
}

// Deliver sends the event to the target through the target's guard. A nil
// error means the destination acknowledged the event. Failures are
// *resilience.Error values: Unavailable (retry later; CIRCUIT_OPEN while
// the breaker is open), RateLimited (with RetryAfter) or Permanent.
func (d *Deliverer) Deliver(ctx context.Context, t Target, ev Event) error {
	send, err := d.sender(t)
	if err != nil {
		return err
	}
	return d.guard(t).Do(ctx, resilience.GuardKey{}, func(ctx context.Context) error {
		return send(ctx, ev)
	})
}

// sender decodes the target's settings into the function that sends one
// event to it.
func (d *Deliverer) sender(t Target) (func(context.Context, Event) error, error) {
	switch t.Kind {
	case KindWebhook:
		c, err := decodeConfig[WebhookConfig](t)
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context, ev Event) error {
			return sendWebhook(ctx, d.opts.WebhookClient, d.opts.Now, c, ev)
		}, nil
	case KindAirtable:
		c, err := decodeConfig[AirtableConfig](t)
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context, ev Event) error { return upsertAirtable(ctx, d.opts.Client, c, ev) }, nil
	case KindGoogleSheets:
		c, err := decodeConfig[SheetsConfig](t)
		if err != nil {
			return nil, err
		}
		return d.sheetsSender(t.ID, c), nil
	}
	return nil, permanent(t.Kind, "UNKNOWN_KIND", fmt.Sprintf("unknown destination kind %q", t.Kind))
}

// guard returns the target's guard, creating it on first use.
func (d *Deliverer) guard(t Target) *resilience.Guard {
	d.mu.Lock()
	defer d.mu.Unlock()
	g, ok := d.guards[t.ID]
	if !ok {
		cfg := DefaultGuardConfig(t.Kind)
		if d.opts.Guard != nil {
			cfg = *d.opts.Guard
		}
		if cfg.Store == nil {
			cfg.Store = d.opts.Rates
		}
		g = resilience.NewGuard(t.Kind+":"+t.ID.String(), cfg)
		d.guards[t.ID] = g
	}
	return g
}

// States reports the breaker of every destination used so far, by id.
func (d *Deliverer) States() map[uuid.UUID]resilience.BreakerState {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make(map[uuid.UUID]resilience.BreakerState, len(d.guards))
	for id, g := range d.guards {
		out[id] = g.States()[0]
	}
	return out
}
