package destinations

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"time"

	"github.com/google/uuid"
	"golang.org/x/oauth2"

	"github.com/finsync/finsync/resilience"
)

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

// sheetsToken returns the access token to use: the configured one, or one
// obtained with the refresh token (RFC 6749 §6) by golang.org/x/oauth2 and
// cached per destination until a minute before it expires; force drops the
// cache. Caveat: the cache is per process.
func (d *Deliverer) sheetsToken(ctx context.Context, id uuid.UUID, c SheetsConfig, force bool) (string, error) {
	if c.RefreshToken == "" {
		return c.AccessToken, nil
	}
	d.mu.Lock()
	src, ok := d.tokens[id]
	if !ok || force {
		src = d.refreshingSource(c)
		d.tokens[id] = src
	}
	d.mu.Unlock()
	tok, err := src.Token()
	if err != nil {
		return "", tokenError(ctx, err)
	}
	return tok.AccessToken, nil
}

// refreshingSource returns a token source that refreshes with c's refresh
// token through the Deliverer's HTTP client. The refresh is bounded by that
// client's timeout, not by a delivery's context: the source outlives it.
func (d *Deliverer) refreshingSource(c SheetsConfig) oauth2.TokenSource {
	cfg := &oauth2.Config{
		ClientID: c.ClientID, ClientSecret: c.ClientSecret,
		Endpoint: oauth2.Endpoint{TokenURL: c.TokenURL, AuthStyle: oauth2.AuthStyleInParams},
	}
	ctx := context.WithValue(context.Background(), oauth2.HTTPClient, d.opts.Client)
	return oauth2.ReuseTokenSourceWithExpiry(nil, cfg.TokenSource(ctx, &oauth2.Token{RefreshToken: c.RefreshToken}), tokenMargin)
}

// tokenError classifies a failed refresh: the token endpoint refusing the
// grant (400 or 401: a revoked or expired refresh token, a wrong client)
// needs the user to authorise again; other answers are classified as any
// service's; no answer is an outage, and a 2xx answer without a token a
// malformed one.
func tokenError(ctx context.Context, err error) error {
	var re *oauth2.RetrieveError
	var ue *url.Error
	switch {
	case errors.As(err, &re) && re.Response != nil:
		e := resilience.AsError(statusError(KindGoogleSheets, re.Response, re.ErrorCode, re.ErrorDescription))
		if s := re.Response.StatusCode; s == http.StatusBadRequest || s == http.StatusUnauthorized {
			e.Class = resilience.ReauthRequired
		}
		return e
	case errors.As(err, &ue) || ctx.Err() != nil:
		return transportError(KindGoogleSheets, err)
	default:
		return &resilience.Error{Provider: KindGoogleSheets, Class: resilience.Unavailable, Code: resilience.CodeMalformed,
			Message: "token endpoint answered no usable access token", Err: err}
	}
}
