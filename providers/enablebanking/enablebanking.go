// Package enablebanking is the finsync adapter for Enable Banking, the PSD2
// aggregator: every request is signed with the application's RSA key (an
// RS256 JWT), a connection is a session the user authorised at their bank
// until its access ends (valid_until), and each bank allows a few
// unattended requests per account a day, which the adapter counts itself.
package enablebanking

import (
	"context"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/providers"
	"github.com/finsync/finsync/providers/internal/wire"
)

const (
	// Name is the provider's name, its registry key.
	Name = "enablebanking"
	// APIURL is Enable Banking's API root, the declared default base URL.
	APIURL = "https://api.enablebanking.com"
	// DailyQuota is how many unattended requests a bank allows per account
	// and kind of call (balances, transactions) a UTC day under PSD2.
	DailyQuota = 4
	// TokenLifetime is the life of the JWTs the adapter signs (the API
	// accepts at most 24 hours).
	TokenLifetime = time.Hour
)

// Describe returns what finsync needs to know of Enable Banking outside
// this package.
func Describe() providers.Description {
	return providers.Description{
		ProviderProfile: domain.ProviderProfile{
			Name:   Name,
			V1Name: "EnableBanking",
			// A sync spends one balances and one transactions call per
			// account: every 8 h spends 3 of the 4 a day, leaving one for a
			// sync on demand.
			SyncInterval: 8 * time.Hour,
		},
		DefaultBaseURL: APIURL,
		Credentials: []providers.CredentialField{
			{Key: "application_id", Required: true, Doc: "Enable Banking application id (the JWT's kid)"},
			{Key: "private_key", Required: true, Doc: "the application's RSA private key, PEM"},
			{Key: "session_id", Required: true, Doc: "the session the user authorised (POST /sessions)"},
		},
		// Enable Banking publishes no API-wide rate; the banks' per-account
		// quota is counted by the adapter (DailyQuota).
		Limits: providers.Limits{Provider: providers.PerSecond(10, 20)},
	}
}

// Adapter talks to Enable Banking. It keeps each application's parsed key
// and current JWT, and counts the daily per-account quota in a QuotaStore
// (shared by every worker when the store is).
type Adapter struct {
	client *http.Client
	now    func() time.Time
	quotas providers.QuotaStore

	mu     sync.Mutex
	tokens map[[32]byte]token
}

type token struct {
	jwt     string
	renewAt time.Time
}

// Option tunes the adapter.
type Option func(*Adapter)

// WithClock sets the adapter's clock: date windows and quota days (nil
// keeps time.Now). JWTs are always signed on the wall clock, which the
// server checks them against.
func WithClock(now func() time.Time) Option {
	return func(a *Adapter) {
		if now != nil {
			a.now = now
		}
	}
}

// WithQuotas counts the daily quotas in store (shared by every worker)
// instead of the adapter's own memory; nil keeps the default.
func WithQuotas(store providers.QuotaStore) Option {
	return func(a *Adapter) {
		if store != nil {
			a.quotas = store
		}
	}
}

// New returns the Enable Banking adapter using client for every call.
func New(client *http.Client, opts ...Option) providers.Provider {
	if client == nil {
		client = http.DefaultClient
	}
	a := &Adapter{client: client, now: time.Now, quotas: providers.NewMemoryQuotas(), tokens: map[[32]byte]token{}}
	for _, o := range opts {
		o(a)
	}
	return a
}

// Name returns "enablebanking".
func (a *Adapter) Name() string { return Name }

// Describe returns the package's Describe().
func (a *Adapter) Describe() providers.Description { return Describe() }

type credentials struct {
	ApplicationID string `json:"application_id"`
	PrivateKey    string `json:"private_key"`
	SessionID     string `json:"session_id"`
}

func parseCredentials(raw json.RawMessage) (credentials, error) {
	var c credentials
	if err := json.Unmarshal(raw, &c); err != nil {
		return c, wire.InvalidCredentials(Name, err)
	}
	if c.ApplicationID == "" || c.PrivateKey == "" || c.SessionID == "" {
		return c, wire.InvalidCredentials(Name, errors.New("application_id, private_key and session_id are required"))
	}
	return c, nil
}

// bearer returns a JWT for the application, signed anew when the cached
// one is within a tenth of its life of expiring. The key is never logged:
// a key that does not parse is reported without its content.
func (a *Adapter) bearer(c credentials) (string, error) {
	key := sha256.Sum256([]byte(c.ApplicationID + "\x00" + c.PrivateKey))
	now := time.Now()
	a.mu.Lock()
	t, ok := a.tokens[key]
	a.mu.Unlock()
	if ok && now.Before(t.renewAt) {
		return t.jwt, nil
	}
	pk, err := jwt.ParseRSAPrivateKeyFromPEM([]byte(c.PrivateKey))
	if err != nil {
		return "", wire.InvalidCredentials(Name, errors.New("private_key is not an RSA private key in PEM"))
	}
	signed, err := Sign(c.ApplicationID, pk, now, TokenLifetime)
	if err != nil {
		return "", wire.InvalidCredentials(Name, err)
	}
	a.mu.Lock()
	a.tokens[key] = token{jwt: signed, renewAt: now.Add(TokenLifetime - TokenLifetime/10)}
	a.mu.Unlock()
	return signed, nil
}

// Sign returns the RS256 JWT Enable Banking expects of application appID:
// kid is the application id, iss and aud fixed, valid from now for life.
func Sign(appID string, key *rsa.PrivateKey, now time.Time, life time.Duration) (string, error) {
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, jwt.RegisteredClaims{
		Issuer: "enablebanking.com", Audience: jwt.ClaimStrings{"api.enablebanking.com"},
		IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(life)),
	})
	tok.Header["kid"] = appID
	s, err := tok.SignedString(key)
	if err != nil {
		return "", fmt.Errorf("sign enablebanking token: %w", err)
	}
	return s, nil
}

// call sends a signed request to path below the connection's base URL and
// decodes a 2xx answer into out; any other answer is classified.
func (a *Adapter) call(ctx context.Context, conn providers.Connection, method, path string, query url.Values, body, out any) error {
	c, err := parseCredentials(conn.Credentials)
	if err != nil {
		return err
	}
	auth, err := a.bearer(c)
	if err != nil {
		return err
	}
	u := strings.TrimRight(conn.BaseURL, "/") + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	req, err := wire.NewJSONRequest(ctx, method, u, body)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+auth)
	resp, err := wire.DoJSON(a.client, Name, req, out)
	if err != nil {
		return err
	}
	if !resp.OK() {
		return classify(resp, a.now())
	}
	return nil
}

// apiError is the body of every error answer.
type apiError struct {
	Message string `json:"message"`
	Error   string `json:"error"`
	Code    int    `json:"code"`
}

// reauthCodes are errors only the user can mend by authorising again.
var reauthCodes = map[string]bool{
	"EXPIRED_SESSION": true, "CLOSED_SESSION": true, "REVOKED_SESSION": true,
	"SESSION_DOES_NOT_EXIST": true, "ACCOUNT_DOES_NOT_EXIST": true,
}

// classify turns a non-2xx answer into a *providers.Error: an expired,
// closed or revoked session and any 401/403 need the session (or the
// application's key) renewed; 429 waits for the Retry-After it gives,
// else for the bank's day to end.
func classify(resp *wire.Response, now time.Time) error {
	var body apiError
	_ = json.Unmarshal(resp.Body, &body)
	e := &providers.Error{
		Provider: Name, HTTPStatus: resp.Status, Class: wire.ClassOfStatus(resp.Status),
		Code: body.Error, Message: strings.TrimSpace(body.Message),
	}
	if e.Code == "" {
		e.Code = strings.ToUpper(strings.ReplaceAll(http.StatusText(resp.Status), " ", "_"))
	}
	switch {
	case reauthCodes[body.Error] || resp.Status == http.StatusUnauthorized || resp.Status == http.StatusForbidden:
		e.Class = providers.ReauthRequired
	case resp.Status == http.StatusTooManyRequests:
		e.Class = providers.RateLimited
		e.RetryAfter = wire.RetryAfter(resp.Header, now, nextDay(now).Sub(now))
	}
	return e
}

// nextDay is the start of the UTC day after now: when a bank's daily
// quota resets.
func nextDay(now time.Time) time.Time {
	return now.UTC().Truncate(24 * time.Hour).Add(24 * time.Hour)
}

// spend takes one call of an account's daily quota of kind, atomically in
// the shared store; ok=false (and the reset) when the day's calls are
// spent. A store that fails does not block the call: the bank's 429 then
// decides, and is noted.
func (a *Adapter) spend(ctx context.Context, account, kind string) (ok bool, reset time.Time) {
	now := a.now()
	reset = nextDay(now)
	ok, err := a.quotas.SpendProviderQuota(ctx, Name, account, kind, DailyQuota, reset, now)
	return ok || err != nil, reset
}

// noteSpent records a 429 from the bank: the account's quota of kind is
// spent for as long as the answer says.
func (a *Adapter) noteSpent(ctx context.Context, account, kind string, err error) {
	if pe := providers.AsError(err); pe != nil && pe.HTTPStatus == http.StatusTooManyRequests {
		_ = a.quotas.NoteProviderQuota(ctx, Name, account, kind, 0, a.now().Add(pe.RetryAfter))
	}
}

// Holdings is not offered by Enable Banking.
func (a *Adapter) Holdings(context.Context, providers.Connection) (providers.Holdings, error) {
	return providers.Holdings{}, providers.ErrNotSupported
}

// InvestmentTransactions is not offered by Enable Banking.
func (a *Adapter) InvestmentTransactions(context.Context, providers.Connection, domain.Date, domain.Date) (providers.InvestmentTransactions, error) {
	return providers.InvestmentTransactions{}, providers.ErrNotSupported
}
