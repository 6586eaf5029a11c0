// Package plaid is the finsync adapter for Plaid: accounts and liabilities,
// /transactions/sync, and investments, spoken in Plaid's JSON wire format.
package plaid

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/providers"
	"github.com/finsync/finsync/providers/internal/wire"
	"github.com/finsync/finsync/resilience"
)

// APIVersion is the Plaid-Version header the adapter pins.
const APIVersion = "2020-09-14"

// SyncPageSize is the count asked of /transactions/sync (Plaid's maximum).
const SyncPageSize = 500

// Name is the provider's name, its registry key.
const Name = "plaid"

const name = Name

// Describe returns what finsync needs to know of Plaid outside this
// package.
func Describe() providers.Description {
	return providers.Description{
		ProviderProfile: domain.ProviderProfile{
			Name:           Name,
			V1Name:         "Plaid",
			HasInvestments: true,
		},
		DefaultBaseURL: "https://production.plaid.com",
		Credentials: []providers.CredentialField{
			{Key: "client_id", Required: true, Doc: "Plaid client id"},
			{Key: "secret", Required: true, Doc: "Plaid secret"},
			{Key: "access_token", Required: true, Doc: "the Item's access token"},
		},
		// /transactions/sync: 2,500 per client and 50 per Item a minute.
		Limits: resilience.Limits{Provider: resilience.PerMinute(2500, 100), Credential: resilience.PerMinute(50, 10)},
	}
}

// Adapter talks to Plaid. It holds no per-connection state.
type Adapter struct {
	client *http.Client
	// keys caches the webhook verification keys (VerifyWebhook).
	keys *keyCache
}

// New returns the Plaid adapter using client for every call.
func New(client *http.Client) providers.Provider {
	if client == nil {
		client = http.DefaultClient
	}
	return &Adapter{client: client, keys: &keyCache{}}
}

// Name returns "plaid".
func (a *Adapter) Name() string { return name }

// Describe returns the package's Describe().
func (a *Adapter) Describe() providers.Description { return Describe() }

// credentials is the connection's credential object.
type credentials struct {
	ClientID    string `json:"client_id"`
	Secret      string `json:"secret"`
	AccessToken string `json:"access_token"`
}

func parseCredentials(raw json.RawMessage) (credentials, error) {
	var c credentials
	if err := json.Unmarshal(raw, &c); err != nil {
		return c, wire.InvalidCredentials(name, err)
	}
	if c.ClientID == "" || c.Secret == "" || c.AccessToken == "" {
		return c, wire.InvalidCredentials(name, errors.New("client_id, secret and access_token are required"))
	}
	return c, nil
}

// post sends body (plus the credentials) to path and decodes a 200 answer
// into out as it arrives; any other answer becomes a classified
// *resilience.Error.
func (a *Adapter) post(ctx context.Context, conn providers.Connection, path string, body map[string]any, out any) error {
	return a.send(ctx, conn, path, body, out, true)
}

// postKeys is post for an endpoint that takes the API keys but no access
// token (/webhook_verification_key/get).
func (a *Adapter) postKeys(ctx context.Context, conn providers.Connection, path string, body map[string]any, out any) error {
	return a.send(ctx, conn, path, body, out, false)
}

// send is post, with the Item's access token in the body or not.
func (a *Adapter) send(ctx context.Context, conn providers.Connection, path string, body map[string]any, out any, withToken bool) error {
	c, err := parseCredentials(conn.Credentials)
	if err != nil {
		return err
	}
	if body == nil {
		body = map[string]any{}
	}
	body["client_id"], body["secret"] = c.ClientID, c.Secret
	if withToken {
		body["access_token"] = c.AccessToken
	}
	req, err := wire.NewJSONRequest(ctx, http.MethodPost, strings.TrimRight(conn.BaseURL, "/")+path, body)
	if err != nil {
		return err
	}
	req.Header.Set("Plaid-Version", APIVersion)
	resp, err := wire.DoJSON(a.client, name, req, out)
	if resp != nil && resp.Status != http.StatusOK {
		// Plaid answers 200 or an error; another 2xx was decoded into out
		// (and is not a success), so it is classified without its body.
		return classify(resp, conn, time.Now())
	}
	return err
}

// apiError is Plaid's error body.
type apiError struct {
	ErrorType       string `json:"error_type"`
	ErrorCode       string `json:"error_code"`
	ErrorCodeReason string `json:"error_code_reason"`
	ErrorMessage    string `json:"error_message"`
	RequestID       string `json:"request_id"`
}

// Error codes with a meaning of their own.
const (
	codeMutation          = "TRANSACTIONS_SYNC_MUTATION_DURING_PAGINATION"
	codeItemLoginRequired = "ITEM_LOGIN_REQUIRED"
)

var reauthCodes = map[string]bool{
	codeItemLoginRequired:      true,
	"ACCESS_NOT_GRANTED":       true,
	"PENDING_EXPIRATION":       true,
	"USER_PERMISSION_REVOKED":  true,
	"ITEM_LOCKED":              true,
	"ITEM_NOT_SUPPORTED":       true,
	"NO_ACCOUNTS":              true,
	"INVALID_UPDATED_USERNAME": true,
}

var institutionCodes = map[string]bool{
	"INSTITUTION_DOWN":           true,
	"INSTITUTION_NOT_RESPONDING": true,
	"INSTITUTION_NOT_AVAILABLE":  true,
}

var unavailableCodes = map[string]bool{
	"INTERNAL_SERVER_ERROR": true,
	"PLANNED_MAINTENANCE":   true,
	"PRODUCT_NOT_READY":     true,
	codeMutation:            true,
}

// classify turns a non-200 Plaid answer into a *resilience.Error, by
// error_code first (bank outages are HTTP 400), then by status.
func classify(resp *wire.Response, conn providers.Connection, now time.Time) error {
	var body apiError
	_ = json.Unmarshal(resp.Body, &body)
	e := &resilience.Error{
		Provider: name, Code: body.ErrorCode, HTTPStatus: resp.Status,
		Message: body.ErrorMessage, Class: wire.ClassOfStatus(resp.Status),
	}
	switch {
	case reauthCodes[body.ErrorCode] || strings.HasPrefix(body.ErrorCodeReason, "OAUTH_"):
		e.Class = resilience.ReauthRequired
	case institutionCodes[body.ErrorCode]:
		e.Class = resilience.Unavailable
		e.InstitutionID = conn.InstitutionID
		if e.InstitutionID == "" {
			e.InstitutionID = "unknown"
		}
	case unavailableCodes[body.ErrorCode]:
		e.Class = resilience.Unavailable
	case body.ErrorType == "RATE_LIMIT_EXCEEDED" || resp.Status == http.StatusTooManyRequests:
		e.Class = resilience.RateLimited
		e.RetryAfter = wire.RetryAfter(resp.Header, now, time.Minute)
	case resp.Status >= 500:
		e.Class = resilience.Unavailable
	case resp.Status == http.StatusUnauthorized || resp.Status == http.StatusForbidden:
		// Plaid answers bad keys with 400 INVALID_API_KEYS; a bare 401/403
		// is a configuration problem, not the user's.
		e.Class = resilience.Permanent
	case body.ErrorCode == "":
		e.Class = wire.ClassOfStatus(resp.Status)
		e.Message = "unexpected HTTP status without a Plaid error body"
	default:
		e.Class = resilience.Permanent
	}
	if e.Code == "" {
		e.Code = http.StatusText(resp.Status)
	}
	return e
}
