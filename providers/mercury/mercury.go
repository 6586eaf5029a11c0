// Package mercury is the finsync adapter for Mercury: deposit and credit
// accounts, and per-account transactions re-fetched over a date window.
package mercury

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

// PageSize is the limit asked of transaction lists: Mercury's maximum (and
// default), so a sync spends as few requests of its rate limit as it can.
const PageSize = 1000

// DefaultOverlapDays is how many days before the last sync a sync re-reads.
const DefaultOverlapDays = 5

// DefaultHistoryDays is how far back the first sync reads.
const DefaultHistoryDays = 5 * 365

// Name is the provider's name, its registry key.
const Name = "mercury"

const name = Name

// Describe returns what finsync needs to know of Mercury outside this
// package.
func Describe() providers.Description {
	return providers.Description{
		ProviderProfile: domain.ProviderProfile{
			Name:   Name,
			V1Name: "Mercury",
			// A business bank: its categories are read-only for the user.
			ReadOnlyCategories: true,
		},
		DefaultBaseURL: "https://api.mercury.com/api/v1",
		Credentials: []providers.CredentialField{
			{Key: "token", Required: true, Doc: "API token"},
		},
		// Unpublished; stay polite.
		Limits: resilience.Limits{Provider: resilience.PerSecond(20, 20)},
	}
}

// Adapter talks to Mercury. It holds no per-connection state.
type Adapter struct {
	client      *http.Client
	overlapDays int
	historyDays int
	now         func() time.Time
}

// Option tunes the adapter.
type Option func(*Adapter)

// WithOverlapDays sets how many days before the last sync a sync re-reads.
func WithOverlapDays(n int) Option { return func(a *Adapter) { a.overlapDays = n } }

// WithHistoryDays sets how far back the first sync reads.
func WithHistoryDays(n int) Option { return func(a *Adapter) { a.historyDays = n } }

// WithClock sets the adapter's clock.
func WithClock(now func() time.Time) Option { return func(a *Adapter) { a.now = now } }

// New returns the Mercury adapter using client for every call.
func New(client *http.Client, opts ...Option) providers.Provider {
	if client == nil {
		client = http.DefaultClient
	}
	a := &Adapter{client: client, overlapDays: DefaultOverlapDays, historyDays: DefaultHistoryDays, now: time.Now}
	for _, o := range opts {
		o(a)
	}
	return a
}

// Name returns "mercury".
func (a *Adapter) Name() string { return name }

// Describe returns the package's Describe().
func (a *Adapter) Describe() providers.Description { return Describe() }

type credentials struct {
	Token string `json:"token"`
}

func parseCredentials(raw json.RawMessage) (credentials, error) {
	var c credentials
	if err := json.Unmarshal(raw, &c); err != nil {
		return c, wire.InvalidCredentials(name, err)
	}
	if c.Token == "" {
		return c, wire.InvalidCredentials(name, errors.New("token is required"))
	}
	return c, nil
}

// get sends GET path?query and decodes a 2xx answer into out.
func (a *Adapter) get(ctx context.Context, conn providers.Connection, path string, query url.Values, out any) error {
	c, err := parseCredentials(conn.Credentials)
	if err != nil {
		return err
	}
	h := http.Header{"Authorization": {"Bearer " + c.Token}}
	return wire.GetJSON(ctx, a.client, name, conn.BaseURL, path, query, h,
		func(r *wire.Response) error { return classify(r, a.now()) }, out)
}

// classify turns a non-2xx Mercury answer into a *resilience.Error by status
// (Mercury's error body is not documented; its message is kept when found).
func classify(resp *wire.Response, now time.Time) error {
	e := &resilience.Error{
		Provider: name, HTTPStatus: resp.Status, Class: wire.ClassOfStatus(resp.Status),
		Code: strings.ToUpper(strings.ReplaceAll(http.StatusText(resp.Status), " ", "_")),
	}
	var body struct {
		Errors *struct {
			ErrorCode string `json:"errorCode"`
			Message   string `json:"message"`
		} `json:"errors"`
		Message string `json:"message"`
	}
	if json.Unmarshal(resp.Body, &body) == nil {
		e.Message = body.Message
		if body.Errors != nil {
			e.Message = body.Errors.Message
			if body.Errors.ErrorCode != "" {
				e.Code = body.Errors.ErrorCode
			}
		}
	}
	if resp.Status == http.StatusTooManyRequests {
		e.RetryAfter = wire.RetryAfter(resp.Header, now, 10*time.Second)
	}
	return e
}
