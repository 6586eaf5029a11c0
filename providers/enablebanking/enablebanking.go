// Package enablebanking is the finsync adapter for Enable Banking, the PSD2
// aggregator: requests signed with the application's RSA key (RS256 JWT), a
// session the user authorised until its valid_until, and banks allowing a
// few unattended requests per account a day, which the adapter counts.
package enablebanking

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/providers"
	"github.com/finsync/finsync/providers/internal/wire"
	"github.com/finsync/finsync/resilience"
)

// Name is the provider's name, its registry key.
const Name = "enablebanking"

// DailyQuota is how many unattended requests a bank allows per account and
// kind of call (balances, transactions) a UTC day under PSD2.
const DailyQuota = 4

// Describe returns what finsync needs to know of Enable Banking outside
// this package.
func Describe() providers.Description {
	return providers.Description{
		ProviderProfile: domain.ProviderProfile{
			Name: Name, V1Name: "EnableBanking",
			// A sync spends one balances and one transactions call per account:
			// every 8 h spends 3 of the 4 a day, leaving one for a sync on demand.
			SyncInterval: 8 * time.Hour,
		},
		DefaultBaseURL: "https://api.enablebanking.com",
		// The application's: set once for every connection, or in one's credentials.
		Settings: []providers.CredentialField{{Key: "application_id", Required: true, Doc: "Enable Banking application id (the JWT's kid)"},
			{Key: "private_key", Required: true, Doc: "the application's RSA private key, PEM"}},
		Credentials: []providers.CredentialField{{Key: "session_id", Required: true, Doc: "the session the user authorised (POST /sessions)"}},
		// No Limits: none is published; the banks' quota is DailyQuota.
	}
}

// Adapter talks to Enable Banking. Date windows and quota days follow
// Deps.Now; the daily per-account quota is counted in Deps.Quotas (shared
// by every worker when the store is), else in the adapter's memory.
type Adapter struct {
	providers.NoInvestments
	d providers.Deps
}

// New returns the Enable Banking adapter built from d (a nil client, clock
// or store takes the default), the registry's Factory as it is.
func New(d providers.Deps) providers.Provider {
	d.HTTPClient, d.Quotas = cmp.Or(d.HTTPClient, http.DefaultClient), cmp.Or(d.Quotas, resilience.QuotaStore(resilience.NewMemoryQuotas()))
	if d.Now == nil {
		d.Now = time.Now
	}
	return &Adapter{d: d}
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

func parseCredentials(raw json.RawMessage) (c credentials, err error) {
	if err = json.Unmarshal(raw, &c); err == nil && (c.ApplicationID == "" || c.PrivateKey == "" || c.SessionID == "") {
		err = errors.New("session_id, and application_id and private_key (provider settings or credentials) are required")
	}
	if err != nil {
		return c, wire.InvalidCredentials(Name, err)
	}
	return c, nil
}

// Sign returns the RS256 JWT Enable Banking expects of application appID
// (kid), with iss and aud as documented, valid from now for life. A key
// that does not parse is reported without its content.
func Sign(appID, keyPEM string, now time.Time, life time.Duration) (string, error) {
	key, err := jwt.ParseRSAPrivateKeyFromPEM([]byte(keyPEM))
	if err != nil {
		return "", wire.InvalidCredentials(Name, errors.New("private_key is not an RSA private key in PEM"))
	}
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, jwt.RegisteredClaims{
		Issuer: "enablebanking.com", Audience: jwt.ClaimStrings{"api.enablebanking.com"},
		IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(life)),
	})
	tok.Header["kid"] = appID
	return tok.SignedString(key)
}

// call sends a GET of path ({session}: the session id), signed for an hour on the wall clock (which
// the server checks), and decodes a 2xx answer into out; any other answer
// is classified. Signing per call keeps no key in memory.
func (a *Adapter) call(ctx context.Context, conn providers.Connection, path string, query url.Values, out any) error {
	c, err := parseCredentials(conn.Credentials)
	if err != nil {
		return err
	}
	auth, err := Sign(c.ApplicationID, c.PrivateKey, time.Now(), time.Hour)
	if err != nil {
		return err
	}
	path = strings.ReplaceAll(path, "{session}", url.PathEscape(c.SessionID))
	u := strings.TrimRight(conn.BaseURL, "/") + path + "?" + query.Encode()
	req, err := wire.NewJSONRequest(ctx, http.MethodGet, strings.TrimSuffix(u, "?"), nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+auth)
	resp, err := wire.DoJSON(a.d.HTTPClient, Name, req, out)
	if err == nil && !resp.OK() {
		err = classify(resp, a.d.Now())
	}
	return err
}

// classify turns a non-2xx answer ({message, error, code}) into a *resilience.Error: a session
// error (EXPIRED_SESSION, CLOSED_SESSION, …) or any 401/403 needs the user or the key renewed;
// 429 waits for its Retry-After, else for the bank's day to end.
func classify(resp *wire.Response, now time.Time) error {
	var body struct {
		Message string `json:"message"`
		Error   string `json:"error"`
	}
	_ = json.Unmarshal(resp.Body, &body)
	e := &resilience.Error{Provider: Name, HTTPStatus: resp.Status, Class: wire.ClassOfStatus(resp.Status), Message: strings.TrimSpace(body.Message),
		Code: cmp.Or(body.Error, strings.ToUpper(strings.ReplaceAll(http.StatusText(resp.Status), " ", "_")))}
	switch {
	case strings.Contains(body.Error, "SESSION") || resp.Status == http.StatusUnauthorized || resp.Status == http.StatusForbidden:
		e.Class = resilience.ReauthRequired
	case resp.Status == http.StatusTooManyRequests:
		e.Class, e.RetryAfter = resilience.RateLimited, wire.RetryAfter(resp.Header, now, nextDay(now).Sub(now))
	}
	return e
}

// nextDay is the start of the UTC day after now, when bank quotas reset.
func nextDay(now time.Time) time.Time { return now.UTC().Truncate(24 * time.Hour).Add(24 * time.Hour) }

// spend takes one call of an account's daily quota of kind, atomically in the store; ok=false
// (and the reset) when the day's are spent. A failing store does not block: the bank decides.
func (a *Adapter) spend(ctx context.Context, account, kind string) (ok bool, reset time.Time) {
	now := a.d.Now()
	ok, err := a.d.Quotas.SpendProviderQuota(ctx, Name, account, kind, DailyQuota, nextDay(now), now)
	return ok || err != nil, nextDay(now)
}

// noteSpent records a bank's 429: the quota of kind is spent for as long as it says.
func (a *Adapter) noteSpent(ctx context.Context, account, kind string, err error) {
	if pe := resilience.AsError(err); pe != nil && pe.HTTPStatus == http.StatusTooManyRequests {
		_ = a.d.Quotas.NoteProviderQuota(ctx, Name, account, kind, 0, a.d.Now().Add(pe.RetryAfter))
	}
}
