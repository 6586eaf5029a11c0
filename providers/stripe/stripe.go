// Package stripe is the finsync adapter for Stripe: one account per balance
// currency, and balance transactions synced by a created-time window.
package stripe

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/providers"
	"github.com/finsync/finsync/providers/internal/wire"
	"github.com/finsync/finsync/resilience"
)

// APIVersion is the Stripe-Version header the adapter pins.
const APIVersion = "2026-07-29.dahlia"

// PageSize is the limit asked of list calls (Stripe's maximum).
const PageSize = 100

// DefaultOverlap is how far before the newest created time seen a sync
// lists again, to catch rows that arrive late.
const DefaultOverlap = 48 * time.Hour

// Name is the provider's name, its registry key.
const Name = "stripe"

const name = Name

// Describe returns what finsync needs to know of Stripe outside this
// package.
func Describe() providers.Description {
	return providers.Description{
		ProviderProfile: domain.ProviderProfile{
			Name:   Name,
			V1Name: "Stripe",
			// v1 pages Stripe transactions by id (starting_after), as Stripe does.
			V1PagesAfterID: true,
			// Stripe reports no removals: stored pending ids are re-checked.
			RechecksPending: true,
		},
		DefaultBaseURL: "https://api.stripe.com",
		Credentials: []providers.CredentialField{
			{Key: "api_key", Required: true, Doc: "secret API key"},
			{Key: "account", Required: false, Doc: "connected account id (Stripe-Account)"},
		},
		// The Connect endpoint's signing secret, one for every connected
		// account: it verifies the events Stripe sends (VerifyWebhook).
		Settings: []providers.CredentialField{
			{Key: "webhook_secret", Required: false, Doc: "signing secret (whsec_...) of the Connect webhook endpoint"},
		},
		// 100 req/s live; 25 req/s per account in test mode.
		Limits: resilience.Limits{Provider: resilience.PerSecond(100, 100), Credential: resilience.PerSecond(25, 25)},
	}
}

// Adapter talks to Stripe. It holds no per-connection state.
type Adapter struct {
	client  *http.Client
	overlap time.Duration
	now     func() time.Time
}

// Option tunes the adapter.
type Option func(*Adapter)

// WithOverlap sets how far before the newest created time a sync re-lists.
func WithOverlap(d time.Duration) Option { return func(a *Adapter) { a.overlap = d } }

// WithClock sets the adapter's clock.
func WithClock(now func() time.Time) Option { return func(a *Adapter) { a.now = now } }

// New returns the Stripe adapter using client for every call.
func New(client *http.Client, opts ...Option) providers.Provider {
	if client == nil {
		client = http.DefaultClient
	}
	a := &Adapter{client: client, overlap: DefaultOverlap, now: time.Now}
	for _, o := range opts {
		o(a)
	}
	return a
}

// Name returns "stripe".
func (a *Adapter) Name() string { return name }

// Describe returns the package's Describe().
func (a *Adapter) Describe() providers.Description { return Describe() }

type credentials struct {
	APIKey  string `json:"api_key"`
	Account string `json:"account"`
}

func parseCredentials(raw json.RawMessage) (credentials, error) {
	var c credentials
	if err := json.Unmarshal(raw, &c); err != nil {
		return c, wire.InvalidCredentials(name, err)
	}
	if c.APIKey == "" {
		return c, wire.InvalidCredentials(name, errors.New("api_key is required"))
	}
	return c, nil
}

// get sends GET path?query and decodes a 2xx answer into out.
func (a *Adapter) get(ctx context.Context, conn providers.Connection, path string, query url.Values, out any) error {
	c, err := parseCredentials(conn.Credentials)
	if err != nil {
		return err
	}
	h := http.Header{"Authorization": {"Bearer " + c.APIKey}, "Stripe-Version": {APIVersion}}
	if c.Account != "" {
		h.Set("Stripe-Account", c.Account)
	}
	return wire.GetJSON(ctx, a.client, name, conn.BaseURL, path, query, h,
		func(r *wire.Response) error { return classify(r, a.now()) }, out)
}

type apiError struct {
	Error struct {
		Type    string `json:"type"`
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// classify turns a non-2xx Stripe answer into a *resilience.Error.
func classify(resp *wire.Response, now time.Time) error {
	var body apiError
	_ = json.Unmarshal(resp.Body, &body)
	e := &resilience.Error{
		Provider: name, Code: body.Error.Code, HTTPStatus: resp.Status,
		Message: body.Error.Message, Class: wire.ClassOfStatus(resp.Status),
	}
	if e.Code == "" {
		e.Code = body.Error.Type
	}
	switch {
	case resp.Status == http.StatusTooManyRequests && body.Error.Code == "lock_timeout":
		e.Class = resilience.Unavailable
	case resp.Status == http.StatusTooManyRequests:
		e.RetryAfter = wire.RetryAfter(resp.Header, now, time.Second)
	case resp.Status == http.StatusFailedDependency:
		e.Class = resilience.Unavailable
	case resp.Header.Get("Stripe-Should-Retry") == "true" && e.Class == resilience.Permanent:
		e.Class = resilience.Unavailable
	}
	if e.Code == "" {
		e.Code = http.StatusText(resp.Status)
	}
	return e
}

// zeroDecimal and threeDecimal are the currencies whose minor unit is not
// the cent. ISK, HUF and TWD are sent in cents by the API, so they use the
// default exponent.
var (
	zeroDecimal = map[string]bool{
		"bif": true, "clp": true, "djf": true, "gnf": true, "jpy": true, "kmf": true,
		"krw": true, "mga": true, "pyg": true, "rwf": true, "ugx": true, "vnd": true,
		"vuv": true, "xaf": true, "xof": true, "xpf": true,
	}
	threeDecimal = map[string]bool{"bhd": true, "jod": true, "kwd": true, "omr": true, "tnd": true}
)

// Exponent is the number of decimals in a currency's Stripe minor unit.
func Exponent(currency string) int32 {
	c := strings.ToLower(currency)
	switch {
	case zeroDecimal[c]:
		return 0
	case threeDecimal[c]:
		return 3
	default:
		return 2
	}
}

// FromMinor converts a Stripe integer amount in minor units to Money.
func FromMinor(amount int64, currency string) domain.Money {
	return domain.MoneyFromMinor(amount, Exponent(currency))
}
