// Package simplefin is the finsync adapter for SimpleFIN (protocol 1.0):
// a setup token is claimed once for an access URL carrying HTTP Basic
// credentials, and every sync re-reads the Account Set over a date window,
// within the Bridge's daily request quota.
package simplefin

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/providers"
	"github.com/finsync/finsync/providers/internal/wire"
	"github.com/finsync/finsync/resilience"
)

// Name is the provider's name, its registry key.
const Name = "simplefin"

const name = Name

// DailyRequests is the Bridge's expected number of requests a day per
// access URL.
const DailyRequests = 24

// WindowDays bounds the date range of one request (the Bridge bounds it;
// 60 days is safe), and so the history a first sync reads.
const WindowDays = 60

// BridgeURL is SimpleFIN Bridge's root, the declared default base URL.
const BridgeURL = "https://beta-bridge.simplefin.org/simplefin"

// DefaultOverlapDays is how many days before the last sync a sync re-reads,
// so that rows posted or removed since are seen again.
const DefaultOverlapDays = 7

// Describe returns what finsync needs to know of SimpleFIN outside this
// package.
func Describe() providers.Description {
	return providers.Description{
		ProviderProfile: domain.ProviderProfile{
			Name:   Name,
			V1Name: "SimpleFIN",
			// A sync spends two requests (balances, then one window of
			// transactions): every 4 h spends 12 of the 24 a day and leaves
			// room for syncs on demand and catch-up windows.
			SyncInterval: 4 * time.Hour,
		},
		// The access URL names its server; this default stands for "use
		// the access URL's location" (see endpointOf).
		DefaultBaseURL: BridgeURL,
		Credentials: []providers.CredentialField{
			{Key: "setup_token", Doc: "SimpleFIN setup token (claimed at the first sync; give it or access_url)"},
			{Key: "access_url", Doc: "SimpleFIN access URL https://user:pass@host/path (give it or setup_token)"},
		},
		// About 24 requests a day per access URL; a burst of 6 allows a
		// first sync and a retry.
		Limits: providers.Limits{
			Provider:   providers.PerSecond(10, 10),
			Credential: resilience.Limit{Rate: rate.Limit(float64(DailyRequests) / 86400), Burst: 6},
		},
	}
}

// Adapter talks to SimpleFIN servers. It keeps, in memory, the access URL
// claimed for each setup token (a token is claimable once).
type Adapter struct {
	client      *http.Client
	overlapDays int
	now         func() time.Time
	mu          sync.Mutex
	claimed     map[string]string // sha256 of setup token → access URL
}

// Option tunes the adapter.
type Option func(*Adapter)

// WithOverlapDays sets how many days before the last sync a sync re-reads.
func WithOverlapDays(n int) Option { return func(a *Adapter) { a.overlapDays = n } }

// WithClock sets the adapter's clock (nil keeps time.Now).
func WithClock(now func() time.Time) Option {
	return func(a *Adapter) {
		if now != nil {
			a.now = now
		}
	}
}

// New returns the SimpleFIN adapter using client for every call.
func New(client *http.Client, opts ...Option) providers.Provider {
	if client == nil {
		client = http.DefaultClient
	}
	a := &Adapter{client: client, overlapDays: DefaultOverlapDays, now: time.Now, claimed: map[string]string{}}
	for _, o := range opts {
		o(a)
	}
	return a
}

// Name returns "simplefin".
func (a *Adapter) Name() string { return name }

// Describe returns the package's Describe().
func (a *Adapter) Describe() providers.Description { return Describe() }

type credentials struct {
	SetupToken string `json:"setup_token"`
	AccessURL  string `json:"access_url"`
}

// endpoint is where and as whom to read the Account Set.
type endpoint struct {
	root string
	auth string // Authorization header
}

// endpointOf returns the connection's endpoint, claiming its setup token
// when it has no access URL. The access URL's location is used unless
// conn.BaseURL names another than BridgeURL (a proxy or test server), which
// then replaces it (keeping the access URL's credentials). Caveat: the access URL claimed
// from a setup token lives in this adapter's memory only; after a restart
// the spent token answers 403 and the user must give a new one.
func (a *Adapter) endpointOf(ctx context.Context, conn providers.Connection) (endpoint, error) {
	var c credentials
	if err := json.Unmarshal(conn.Credentials, &c); err != nil {
		return endpoint{}, wire.InvalidCredentials(name, err)
	}
	access := strings.TrimSpace(c.AccessURL)
	if access == "" {
		if strings.TrimSpace(c.SetupToken) == "" {
			return endpoint{}, wire.InvalidCredentials(name, errors.New("setup_token or access_url is required"))
		}
		var err error
		if access, err = a.claim(ctx, strings.TrimSpace(c.SetupToken)); err != nil {
			return endpoint{}, err
		}
	}
	u, err := url.Parse(access)
	if err != nil || u.User == nil || u.Host == "" {
		return endpoint{}, wire.InvalidCredentials(name, errors.New("access_url must be https://user:pass@host/path"))
	}
	pass, _ := u.User.Password()
	auth := "Basic " + base64.StdEncoding.EncodeToString([]byte(u.User.Username()+":"+pass))
	u.User = nil
	root := u.String()
	if conn.BaseURL != "" && strings.TrimRight(conn.BaseURL, "/") != BridgeURL {
		root = conn.BaseURL
	}
	return endpoint{root: strings.TrimRight(root, "/"), auth: auth}, nil
}

// claim exchanges a setup token for its access URL, once per token.
func (a *Adapter) claim(ctx context.Context, token string) (string, error) {
	sum := sha256.Sum256([]byte(token))
	key := hex.EncodeToString(sum[:])
	a.mu.Lock()
	access, ok := a.claimed[key]
	a.mu.Unlock()
	if ok {
		return access, nil
	}
	raw, err := base64.StdEncoding.DecodeString(token)
	if err != nil {
		if raw, err = base64.URLEncoding.DecodeString(token); err != nil {
			return "", wire.InvalidCredentials(name, errors.New("setup_token is not base64"))
		}
	}
	claimURL := strings.TrimSpace(string(raw))
	if u, err := url.Parse(claimURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") {
		return "", wire.InvalidCredentials(name, errors.New("setup_token does not hold a claim URL"))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, claimURL, nil)
	if err != nil {
		return "", fmt.Errorf("simplefin claim: %w", err)
	}
	req.Header.Set("Content-Length", "0")
	resp, err := wire.Do(a.client, name, req)
	if err != nil {
		return "", fmt.Errorf("simplefin claim: %w", err)
	}
	if !resp.OK() {
		return "", fmt.Errorf("simplefin claim: %w", classify(resp, a.now()))
	}
	access = strings.TrimSpace(string(resp.Body))
	a.mu.Lock()
	a.claimed[key] = access
	a.mu.Unlock()
	return access, nil
}

// fetch reads the Account Set at the connection's endpoint with query.
func (a *Adapter) fetch(ctx context.Context, conn providers.Connection, query url.Values) (accountSet, error) {
	var out accountSet
	ep, err := a.endpointOf(ctx, conn)
	if err != nil {
		return out, err
	}
	h := http.Header{"Authorization": {ep.auth}}
	err = wire.GetJSON(ctx, a.client, name, ep.root, "/accounts", query, h,
		func(r *wire.Response) error { return classify(r, a.now()) }, &out)
	return out, err
}

// classify turns a non-2xx SimpleFIN answer into a *providers.Error: 403
// (access revoked, bad credentials, a token claimed twice) and 402 (payment
// required) need the user.
func classify(resp *wire.Response, now time.Time) error {
	e := &providers.Error{
		Provider: name, HTTPStatus: resp.Status, Class: wire.ClassOfStatus(resp.Status),
		Code:    strings.ToUpper(strings.ReplaceAll(http.StatusText(resp.Status), " ", "_")),
		Message: strings.TrimSpace(string(resp.Body)),
	}
	switch resp.Status {
	case http.StatusPaymentRequired:
		e.Class = providers.ReauthRequired
	case http.StatusTooManyRequests:
		e.RetryAfter = wire.RetryAfter(resp.Header, now, time.Hour)
	}
	if len(e.Message) > 200 {
		e.Message = e.Message[:200]
	}
	return e
}
