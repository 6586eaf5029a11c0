// Package gocardless is the finsync adapter for GoCardless Bank Account
// Data (ex-Nordigen): a requisition's accounts with details and balances,
// and transactions re-fetched over a date window, within the banks' daily
// per-account quotas.
package gocardless

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/providers"
	"github.com/finsync/finsync/providers/internal/wire"
	"github.com/finsync/finsync/resilience"
)

// OverlapDays is how many days before the last booked date a sync re-reads.
const OverlapDays = 7

// Name is the provider's name, its registry key.
const Name = "gocardless"

const name = Name

// Describe returns what finsync needs to know of GoCardless outside this
// package.
func Describe() providers.Description {
	return providers.Description{
		ProviderProfile: domain.ProviderProfile{
			Name:   Name,
			V1Name: "GoCardless",
			// Banks allow as few as four successful calls per account a day for
			// each of details, balances and transactions; syncing every eight
			// hours spends three and leaves one for a sync on demand.
			SyncInterval: 8 * time.Hour,
		},
		DefaultBaseURL: "https://bankaccountdata.gocardless.com/api/v2",
		Credentials: []providers.CredentialField{
			{Key: "secret_id", Required: true, Doc: "Bank Account Data secret id"},
			{Key: "secret_key", Required: true, Doc: "Bank Account Data secret key"},
			{Key: "requisition_id", Required: true, Doc: "the requisition linking the bank"},
		},
		// accounts/* endpoints: 100 a minute company-wide; per-account daily
		// quotas are tracked by the adapter from response headers.
		Limits: resilience.Limits{Provider: resilience.PerMinute(100, 20)},
	}
}

// Adapter talks to GoCardless. Besides the JWT of each secret id and the
// last details read, it keeps, per account, the quota left on each endpoint
// in a QuotaStore (shared by every worker when the store is), so that it
// never spends a call the bank cannot afford.
type Adapter struct {
	client *http.Client
	now    func() time.Time
	quotas resilience.QuotaStore

	mu           sync.Mutex
	tokens       map[string]token
	details      map[string]cachedDetails
	institutions map[string]cachedInstitution
}

type cachedInstitution struct {
	inst providers.Institution
	at   time.Time
}

type token struct {
	access         string
	expires        time.Time
	refresh        string
	refreshExpires time.Time
}

type cachedDetails struct {
	details accountDetails
	at      time.Time
}

// Option tunes the adapter.
type Option func(*Adapter)

// WithClock sets the adapter's clock (quota resets, token expiry, windows).
func WithClock(now func() time.Time) Option { return func(a *Adapter) { a.now = now } }

// WithQuotas keeps the daily quotas in store (shared by every worker)
// instead of the adapter's own memory; nil keeps the default.
func WithQuotas(store resilience.QuotaStore) Option {
	return func(a *Adapter) {
		if store != nil {
			a.quotas = store
		}
	}
}

// New returns the GoCardless adapter using client for every call.
func New(client *http.Client, opts ...Option) providers.Provider {
	if client == nil {
		client = http.DefaultClient
	}
	a := &Adapter{
		client: client, now: time.Now, quotas: resilience.NewMemoryQuotas(),
		tokens: map[string]token{}, details: map[string]cachedDetails{},
		institutions: map[string]cachedInstitution{},
	}
	for _, o := range opts {
		o(a)
	}
	return a
}

// Name returns "gocardless".
func (a *Adapter) Name() string { return name }

// Describe returns the package's Describe().
func (a *Adapter) Describe() providers.Description { return Describe() }

type credentials struct {
	SecretID      string `json:"secret_id"`
	SecretKey     string `json:"secret_key"`
	RequisitionID string `json:"requisition_id"`
}

func parseCredentials(raw json.RawMessage) (credentials, error) {
	var c credentials
	if err := json.Unmarshal(raw, &c); err != nil {
		return c, wire.InvalidCredentials(name, err)
	}
	if c.SecretID == "" || c.SecretKey == "" || c.RequisitionID == "" {
		return c, wire.InvalidCredentials(name, errors.New("secret_id, secret_key and requisition_id are required"))
	}
	return c, nil
}

// request is one call to the API.
type request struct {
	method string
	path   string // below the base URL, e.g. "/accounts/{id}/details/"
	query  url.Values
	body   any
}

// call sends r with our JWT and decodes a 2xx answer into out. A 401 that
// is about our JWT (not the bank consent) gets a new token and one retry.
func (a *Adapter) call(ctx context.Context, conn providers.Connection, r request, out any) (*wire.Response, error) {
	c, err := parseCredentials(conn.Credentials)
	if err != nil {
		return nil, err
	}
	for attempt := 0; ; attempt++ {
		tok, err := a.token(ctx, conn, c, attempt > 0)
		if err != nil {
			return nil, err
		}
		resp, err := a.send(ctx, conn, r, "Bearer "+tok, out)
		if err != nil || resp.OK() {
			// A transport error has no response; a 2xx one that does not
			// decode keeps its headers, whose quota the caller records.
			return resp, err
		}
		cerr := classify(resp, a.now())
		if attempt == 0 && resp.Status == http.StatusUnauthorized && !isConsentError(resp) {
			continue
		}
		return resp, cerr
	}
}

// send sends r with the Authorization header auth (none when empty) and
// decodes a 2xx answer into out as it arrives; any other answer is read
// whole and returned, without an error, for the caller to classify.
func (a *Adapter) send(ctx context.Context, conn providers.Connection, r request, auth string, out any) (*wire.Response, error) {
	u := strings.TrimRight(conn.BaseURL, "/") + r.path
	if len(r.query) > 0 {
		u += "?" + r.query.Encode()
	}
	req, err := wire.NewJSONRequest(ctx, r.method, u, r.body)
	if err != nil {
		return nil, err
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	return wire.DoJSON(a.client, name, req, out)
}

type tokenResponse struct {
	Access         string `json:"access"`
	AccessExpires  int64  `json:"access_expires"`
	Refresh        string `json:"refresh"`
	RefreshExpires int64  `json:"refresh_expires"`
}

// token returns a cached access JWT for the secret id. When there is none,
// it is about to expire, or force is set (our JWT was refused), it renews
// it with token/refresh/ while the refresh token lasts, else token/new/.
func (a *Adapter) token(ctx context.Context, conn providers.Connection, c credentials, force bool) (string, error) {
	key := conn.BaseURL + "\x00" + c.SecretID
	a.mu.Lock()
	t, ok := a.tokens[key]
	a.mu.Unlock()
	now := a.now()
	if ok && !force && now.Before(t.expires) {
		return t.access, nil
	}
	if ok && t.refresh != "" && now.Before(t.refreshExpires) {
		if tr, err := a.tokenCall(ctx, conn, "/token/refresh/", map[string]string{"refresh": t.refresh}); err == nil {
			t.access, t.expires = tr.Access, expiry(now, tr.AccessExpires)
			a.storeToken(key, t)
			return t.access, nil
		}
	}
	tr, err := a.tokenCall(ctx, conn, "/token/new/", map[string]string{"secret_id": c.SecretID, "secret_key": c.SecretKey})
	if err != nil {
		return "", err
	}
	t = token{access: tr.Access, expires: expiry(now, tr.AccessExpires), refresh: tr.Refresh, refreshExpires: expiry(now, tr.RefreshExpires)}
	a.storeToken(key, t)
	return t.access, nil
}

func (a *Adapter) storeToken(key string, t token) {
	a.mu.Lock()
	a.tokens[key] = t
	a.mu.Unlock()
}

// expiry is a token's renewal time: a tenth of its life before it expires.
func expiry(now time.Time, seconds int64) time.Time {
	life := time.Duration(seconds) * time.Second
	if life <= 0 {
		life = time.Hour
	}
	return now.Add(life - life/10)
}

// tokenCall posts to a token endpoint. Refused secrets are our
// configuration (Permanent), not the user's consent.
func (a *Adapter) tokenCall(ctx context.Context, conn providers.Connection, path string, body any) (tokenResponse, error) {
	var tr tokenResponse
	resp, err := a.send(ctx, conn, request{method: http.MethodPost, path: path, body: body}, "", &tr)
	if err != nil {
		return tr, fmt.Errorf("gocardless %s: %w", path, err)
	}
	if !resp.OK() {
		e := classify(resp, a.now())
		if pe := resilience.AsError(e); pe != nil && pe.Class == resilience.ReauthRequired {
			pe.Class = resilience.Permanent
		}
		return tr, fmt.Errorf("gocardless %s: %w", path, e)
	}
	return tr, nil
}

type apiError struct {
	Summary    string `json:"summary"`
	Detail     string `json:"detail"`
	Type       string `json:"type"`
	StatusCode int    `json:"status_code"`
}

// consentTypes are 401 error types that need the user to renew consent.
var consentTypes = map[string]bool{
	"AccessExpiredError":   true,
	"AccountInactiveError": true,
	"AccountSuspended":     true,
}

func parseError(resp *wire.Response) apiError {
	var e apiError
	_ = json.Unmarshal(resp.Body, &e)
	return e
}

// isConsentError tells a 401 about the bank consent from one about our JWT.
func isConsentError(resp *wire.Response) bool {
	e := parseError(resp)
	if consentTypes[e.Type] {
		return true
	}
	s := strings.ToLower(e.Summary + " " + e.Detail)
	return strings.Contains(s, "access expired") || strings.Contains(s, "has expired or it has been revoked") ||
		strings.Contains(s, "inactive") || strings.Contains(s, "suspended")
}

// classify turns a non-2xx answer into a *resilience.Error; 401 is split on
// the body between consent (ReauthRequired) and our credentials.
func classify(resp *wire.Response, now time.Time) error {
	body := parseError(resp)
	e := &resilience.Error{
		Provider: name, HTTPStatus: resp.Status, Class: wire.ClassOfStatus(resp.Status),
		Code: body.Type, Message: strings.TrimSpace(body.Summary + ": " + body.Detail),
	}
	switch {
	case resp.Status == http.StatusUnauthorized && isConsentError(resp):
		e.Class = resilience.ReauthRequired
		if e.Code == "" {
			e.Code = "AccessExpiredError"
		}
	case resp.Status == http.StatusUnauthorized || resp.Status == http.StatusForbidden:
		e.Class = resilience.Permanent
	case resp.Status == http.StatusTooManyRequests:
		e.RetryAfter = rateLimitReset(resp.Header, now)
		if e.Code == "" {
			e.Code = "RateLimitError"
		}
	}
	if e.Code == "" {
		e.Code = strings.ToUpper(strings.ReplaceAll(http.StatusText(resp.Status), " ", "_"))
	}
	return e
}
