package destinations

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
)

// Default service roots.
const (
	DefaultAirtableURL = "https://api.airtable.com"
	DefaultSheetsURL   = "https://sheets.googleapis.com"
	// DefaultGoogleTokenURL is Google's OAuth 2.0 token endpoint.
	DefaultGoogleTokenURL = "https://oauth2.googleapis.com/token"
	// DefaultMergeField is the Airtable field holding the account id, on
	// which records are upserted.
	DefaultMergeField = "Account ID"
)

// WebhookConfig is a webhook destination: {"url": ..., "secret": ...}.
type WebhookConfig struct {
	URL string `json:"url"`
	// Secret keys the HMAC-SHA256 signature (stored encrypted).
	Secret string `json:"secret,omitempty"`
}

// AirtableConfig is an Airtable destination.
type AirtableConfig struct {
	// BaseURL is the API root (default DefaultAirtableURL).
	BaseURL string `json:"baseUrl"`
	// BaseID is the base (app...).
	BaseID string `json:"baseId"`
	// Table is the table's name or id (tbl...).
	Table string `json:"table"`
	// MergeField is the field holding the account id (default
	// DefaultMergeField).
	MergeField string `json:"mergeField"`
	// Token is a personal access token or OAuth access token (stored
	// encrypted).
	Token string `json:"token,omitempty"`
}

// SheetsConfig is a Google Sheets destination.
type SheetsConfig struct {
	// BaseURL is the API root (default DefaultSheetsURL).
	BaseURL string `json:"baseUrl"`
	// SpreadsheetID is the spreadsheet.
	SpreadsheetID string `json:"spreadsheetId"`
	// Sheet is the sheet's title (default "Accounts").
	Sheet string `json:"sheet"`
	// AccessToken is an OAuth 2.0 access token with the spreadsheets scope
	// (stored encrypted). Google's access tokens last an hour: for a
	// lasting destination, give RefreshToken, ClientID and ClientSecret
	// instead, and access tokens are obtained from TokenURL as needed.
	AccessToken string `json:"accessToken,omitempty"`
	// RefreshToken is an OAuth 2.0 refresh token (stored encrypted).
	RefreshToken string `json:"refreshToken,omitempty"`
	// ClientID and ClientSecret identify the OAuth client that obtained
	// the refresh token (the secret is stored encrypted).
	ClientID     string `json:"clientId,omitempty"`
	ClientSecret string `json:"clientSecret,omitempty"`
	// TokenURL is the token endpoint (default DefaultGoogleTokenURL).
	TokenURL string `json:"tokenUrl,omitempty"`
}

// secretFields names the secret members of each kind's configuration.
var secretFields = map[string][]string{
	KindWebhook:      {"secret"},
	KindAirtable:     {"token"},
	KindGoogleSheets: {"accessToken", "refreshToken", "clientSecret"},
}

// SplitConfig validates a destination's full configuration as given by an
// operator and splits it into the settings kept in clear and the
// credentials to encrypt, filling defaults.
func SplitConfig(kind string, raw json.RawMessage) (public, secret json.RawMessage, err error) {
	fields, ok := secretFields[kind]
	if !ok {
		return nil, nil, fmt.Errorf("kind must be one of airtable, google_sheets, webhook; got %q", kind)
	}
	var cfg any
	switch kind {
	case KindWebhook:
		cfg, err = parseWebhook(raw)
	case KindAirtable:
		cfg, err = parseAirtable(raw)
	case KindGoogleSheets:
		cfg, err = parseSheets(raw)
	}
	if err != nil {
		return nil, nil, err
	}
	full, err := json.Marshal(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("encode config: %w", err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(full, &m); err != nil {
		return nil, nil, fmt.Errorf("split config: %w", err)
	}
	sec := map[string]json.RawMessage{}
	for _, f := range fields {
		if v, ok := m[f]; ok {
			sec[f] = v
			delete(m, f)
		}
	}
	if public, err = json.Marshal(m); err != nil {
		return nil, nil, fmt.Errorf("encode config: %w", err)
	}
	if secret, err = json.Marshal(sec); err != nil {
		return nil, nil, fmt.Errorf("encode credentials: %w", err)
	}
	return public, secret, nil
}

func strictUnmarshal(raw json.RawMessage, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	return nil
}

func parseWebhook(raw json.RawMessage) (WebhookConfig, error) {
	var c WebhookConfig
	if err := strictUnmarshal(raw, &c); err != nil {
		return c, err
	}
	if err := checkURL("url", c.URL); err != nil {
		return c, err
	}
	if c.Secret == "" {
		return c, fmt.Errorf("config: secret is required")
	}
	return c, nil
}

func parseAirtable(raw json.RawMessage) (AirtableConfig, error) {
	var c AirtableConfig
	if err := strictUnmarshal(raw, &c); err != nil {
		return c, err
	}
	if c.BaseURL == "" {
		c.BaseURL = DefaultAirtableURL
	}
	if c.MergeField == "" {
		c.MergeField = DefaultMergeField
	}
	if err := checkURL("baseUrl", c.BaseURL); err != nil {
		return c, err
	}
	if c.BaseID == "" || c.Table == "" || c.Token == "" {
		return c, fmt.Errorf("config: baseId, table and token are required")
	}
	return c, nil
}

func parseSheets(raw json.RawMessage) (SheetsConfig, error) {
	var c SheetsConfig
	if err := strictUnmarshal(raw, &c); err != nil {
		return c, err
	}
	if c.BaseURL == "" {
		c.BaseURL = DefaultSheetsURL
	}
	if c.Sheet == "" {
		c.Sheet = "Accounts"
	}
	if err := checkURL("baseUrl", c.BaseURL); err != nil {
		return c, err
	}
	if c.SpreadsheetID == "" {
		return c, fmt.Errorf("config: spreadsheetId is required")
	}
	refresh := c.RefreshToken != "" || c.ClientID != "" || c.ClientSecret != ""
	switch {
	case refresh && (c.RefreshToken == "" || c.ClientID == "" || c.ClientSecret == ""):
		return c, fmt.Errorf("config: refreshToken, clientId and clientSecret go together")
	case !refresh && c.AccessToken == "":
		return c, fmt.Errorf("config: accessToken, or refreshToken with clientId and clientSecret, is required")
	}
	if refresh && c.TokenURL == "" {
		c.TokenURL = DefaultGoogleTokenURL
	}
	if refresh {
		if err := checkURL("tokenUrl", c.TokenURL); err != nil {
			return c, err
		}
	}
	return c, nil
}

func checkURL(name, s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("config: %s must be an http(s) URL", name)
	}
	return nil
}

// decodeConfig merges a target's settings and credentials into its kind's
// configuration.
func decodeConfig[T any](t Target) (T, error) {
	var c T
	for _, part := range []json.RawMessage{t.Config, t.Secret} {
		if len(part) == 0 {
			continue
		}
		if err := json.Unmarshal(part, &c); err != nil {
			return c, permanent(t.Kind, "BAD_CONFIG", fmt.Sprintf("destination %s: decode config: %v", t.ID, err))
		}
	}
	return c, nil
}

// trimRoot drops the trailing slash of an API root.
func trimRoot(s string) string { return strings.TrimRight(s, "/") }
