package destinations

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"time"

	"github.com/google/uuid"

	"github.com/finsync/finsync/resilience"
)

// accessToken is a cached OAuth 2.0 access token.
type accessToken struct {
	token   string
	expires time.Time
}

// tokenMargin renews an access token this long before it expires.
const tokenMargin = time.Minute

// sheetsSender writes rows with the destination's access token; with a
// refresh token, it obtains and caches access tokens, and retries once
// with a fresh one when Google answers 401.
func (d *Deliverer) sheetsSender(id uuid.UUID, c SheetsConfig) func(context.Context, Event) error {
	return func(ctx context.Context, ev Event) error {
		for attempt := 0; ; attempt++ {
			tok, err := d.sheetsToken(ctx, id, c, attempt > 0)
			if err != nil {
				return err
			}
			err = writeSheetRow(ctx, d.opts.Client, c, tok, ev)
			pe := resilience.AsError(err)
			if attempt == 0 && c.RefreshToken != "" && pe != nil && pe.HTTPStatus == http.StatusUnauthorized {
				continue
			}
			return err
		}
	}
}

// sheetsToken returns the access token to use: the configured one, or a
// cached one obtained with the refresh token (renewed when expiring or
// when force is set).
func (d *Deliverer) sheetsToken(ctx context.Context, id uuid.UUID, c SheetsConfig, force bool) (string, error) {
	if c.RefreshToken == "" {
		return c.AccessToken, nil
	}
	now := d.opts.Now()
	d.mu.Lock()
	cached, ok := d.tokens[id]
	d.mu.Unlock()
	if ok && !force && now.Add(tokenMargin).Before(cached.expires) {
		return cached.token, nil
	}
	tok, err := refreshAccessToken(ctx, d.opts.Client, c, now)
	if err != nil {
		return "", err
	}
	d.mu.Lock()
	d.tokens[id] = tok
	d.mu.Unlock()
	return tok.token, nil
}

// refreshAccessToken exchanges the refresh token for an access token at
// the token endpoint (RFC 6749 §6). A refused grant (revoked or expired
// refresh token, wrong client) needs the user to authorise again.
func refreshAccessToken(ctx context.Context, client *http.Client, c SheetsConfig, now time.Time) (accessToken, error) {
	form := url.Values{
		"grant_type":    {"refresh_token"},
		"refresh_token": {c.RefreshToken},
		"client_id":     {c.ClientID},
		"client_secret": {c.ClientSecret},
	}
	var out struct {
		AccessToken string `json:"access_token"`
		ExpiresIn   int    `json:"expires_in"`
		TokenType   string `json:"token_type"`
	}
	err := do(ctx, client, request{service: KindGoogleSheets, method: http.MethodPost, url: c.TokenURL, body: []byte(form.Encode()), form: true}, &out, oauthError)
	if pe := resilience.AsError(err); pe != nil && (pe.HTTPStatus == http.StatusBadRequest || pe.HTTPStatus == http.StatusUnauthorized) {
		pe.Class = resilience.ReauthRequired
		return accessToken{}, pe
	}
	if err != nil {
		return accessToken{}, err
	}
	if out.AccessToken == "" {
		return accessToken{}, &resilience.Error{Provider: KindGoogleSheets, Class: resilience.Unavailable, Code: resilience.CodeMalformed,
			Message: "token endpoint answered no access_token"}
	}
	return accessToken{token: out.AccessToken, expires: now.Add(time.Duration(out.ExpiresIn) * time.Second)}, nil
}

// oauthError reads an OAuth 2.0 error body {"error", "error_description"}.
func oauthError(body []byte) (string, string) {
	var e struct {
		Error       string `json:"error"`
		Description string `json:"error_description"`
	}
	if json.Unmarshal(body, &e) != nil {
		return "", ""
	}
	return e.Error, e.Description
}
