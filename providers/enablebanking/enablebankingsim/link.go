package enablebankingsim

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/finsync/finsync/providers/sim/simkit"
)

// linkRedirect is where the link flow asks the bank to send the user back:
// the client reads the code off the redirect and never follows it.
const linkRedirect = "https://finsync.invalid/enablebanking/linked"

// Settings returns the provider-level settings of the demo application
// every simulator knows: its id and private key.
func (Sim) Settings() json.RawMessage {
	return simkit.MustJSON(map[string]string{"application_id": DemoApplicationID, "private_key": strings.TrimSpace(demoKeyPEM)})
}

// Link runs Enable Banking's link flow against the simulator at root as
// any client would: GET /aspsps, POST /auth for a bank chosen by name,
// the authorisation page (which approves at once) followed up to its
// redirect, whose code and state are checked, then POST /sessions {code}.
// It signs with the application of settings (nil: the demo application's,
// whose id and key the credentials then carry) and returns
// {"session_id"} with them. Errors carry the API's message, never a key.
func (Sim) Link(ctx context.Context, client *http.Client, root, name string, settings json.RawMessage) (json.RawMessage, error) {
	own := settings == nil
	if own {
		settings = Sim{}.Settings()
	}
	var app struct {
		ID  string `json:"application_id"`
		Key string `json:"private_key"`
	}
	if err := json.Unmarshal(settings, &app); err != nil {
		return nil, errors.New("link: the settings are not a JSON object of application_id and private_key")
	}
	l := linker{ctx: ctx, client: client, base: root + "/enablebanking", app: app.ID, key: app.Key}
	var banks struct {
		ASPSPs []aspsp `json:"aspsps"`
	}
	if err := l.call(http.MethodGet, "/aspsps", nil, &banks); err != nil || len(banks.ASPSPs) == 0 {
		return nil, fmt.Errorf("link: list banks: %w", cmpErr(err, "no bank offered"))
	}
	bank := banks.ASPSPs[simkit.Pick(simkit.HashString(0x11c, name), len(banks.ASPSPs))]
	var auth struct {
		URL string `json:"url"`
	}
	until := time.Now().Add(time.Duration(bank.MaxConsent) * time.Second).UTC().Format(time.RFC3339)
	if err := l.call(http.MethodPost, "/auth", map[string]any{"aspsp": map[string]string{"name": bank.Name, "country": bank.Country},
		"redirect_url": linkRedirect, "state": name, "psu_type": "personal", "access": map[string]string{"valid_until": until}}, &auth); err != nil {
		return nil, fmt.Errorf("link: start the authorisation: %w", err)
	}
	code, err := l.approve(auth.URL, name)
	if err != nil {
		return nil, fmt.Errorf("link: authorise at the bank: %w", err)
	}
	var sess struct {
		SessionID string `json:"session_id"`
	}
	if err := l.call(http.MethodPost, "/sessions", map[string]string{"code": code}, &sess); err != nil || sess.SessionID == "" {
		return nil, fmt.Errorf("link: create the session: %w", cmpErr(err, "no session_id"))
	}
	creds := map[string]string{"session_id": sess.SessionID}
	if own {
		creds["application_id"], creds["private_key"] = app.ID, app.Key
	}
	return simkit.MustJSON(creds), nil
}

// cmpErr is err, or a new error saying why when err is nil.
func cmpErr(err error, why string) error {
	if err != nil {
		return err
	}
	return errors.New(why)
}

// linker sends the link flow's signed requests.
type linker struct {
	ctx       context.Context
	client    *http.Client
	base, app string
	key       string
}

// call sends a request signed for the application, body as JSON, and
// decodes a 2xx answer into out; any other answer is an error with the
// API's message.
func (l linker) call(method, path string, body, out any) error {
	pk, err := jwt.ParseRSAPrivateKeyFromPEM([]byte(l.key))
	if err != nil {
		return errors.New("private_key is not an RSA private key in PEM")
	}
	now := time.Now()
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, jwt.RegisteredClaims{Issuer: "enablebanking.com",
		Audience: jwt.ClaimStrings{"api.enablebanking.com"}, IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(time.Hour))})
	tok.Header["kid"] = l.app
	signed, err := tok.SignedString(pk)
	if err != nil {
		return fmt.Errorf("sign: %w", err)
	}
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(l.ctx, method, l.base+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+signed)
	req.Header.Set("Content-Type", "application/json")
	resp, err := l.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode/100 != 2 {
		var e struct{ Message, Error string }
		_ = json.Unmarshal(raw, &e)
		return fmt.Errorf("%s %s: HTTP %d %s: %s", method, path, resp.StatusCode, e.Error, e.Message)
	}
	return json.Unmarshal(raw, out)
}

// approve opens the bank's authorisation page at pageURL, which approves
// at once, and returns the code of its redirect to linkRedirect, whose
// state must be state.
func (l linker) approve(pageURL, state string) (string, error) {
	req, err := http.NewRequestWithContext(l.ctx, http.MethodGet, pageURL, nil)
	if err != nil {
		return "", err
	}
	noFollow := *l.client
	noFollow.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := noFollow.Do(req)
	if err != nil {
		return "", err
	}
	resp.Body.Close()
	back, err := url.Parse(resp.Header.Get("Location"))
	if resp.StatusCode/100 != 3 || err != nil || !strings.HasPrefix(back.String(), linkRedirect) {
		return "", fmt.Errorf("the page answered HTTP %d, not a redirect to %s", resp.StatusCode, linkRedirect)
	}
	if q := back.Query(); q.Get("state") != state || q.Get("code") == "" {
		return "", errors.New("the redirect lacks the code or carries another state")
	}
	return back.Query().Get("code"), nil
}
