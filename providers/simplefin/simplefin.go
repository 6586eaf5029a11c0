// Package simplefin is the finsync adapter for SimpleFIN (protocol 1.0):
// a setup token is claimed once for an access URL carrying HTTP Basic
// credentials, and every sync re-reads the Account Set over a date window,
// within the Bridge's daily request quota.
package simplefin

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/shopspring/decimal"
	"golang.org/x/time/rate"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/providers"
	"github.com/finsync/finsync/providers/internal/wire"
	"github.com/finsync/finsync/resilience"
)

const (
	// Name is the provider's name, its registry key.
	Name = "simplefin"
	// DailyRequests is the Bridge's expected requests a day per access URL.
	DailyRequests = 24
	// WindowDays bounds the date range of one request (the Bridge bounds
	// it; 60 days is safe), and so the history a first sync reads.
	WindowDays = 60
	// BridgeURL is SimpleFIN Bridge's root, the declared default base URL.
	BridgeURL = "https://beta-bridge.simplefin.org/simplefin"
	// DefaultOverlapDays is how many days before the last sync a sync
	// re-reads, so that rows posted or removed since are seen again.
	DefaultOverlapDays = 7
)

// Describe returns what finsync needs to know of SimpleFIN outside this
// package.
func Describe() providers.Description {
	return providers.Description{
		ProviderProfile: domain.ProviderProfile{
			Name:   Name,
			V1Name: "SimpleFIN",
			// A sync spends two requests (balances, one window): every 4 h
			// spends 12 of the 24 a day, leaving room for syncs on demand.
			SyncInterval: 4 * time.Hour,
		},
		// Stands for "the access URL's own server" (see endpointOf).
		DefaultBaseURL: BridgeURL,
		Credentials: []providers.CredentialField{
			{Key: "setup_token", Doc: "SimpleFIN setup token (claimed by connections add, which stores its access URL; give it or access_url)"},
			{Key: "access_url", Doc: "SimpleFIN access URL https://user:pass@host/path (give it or setup_token)"},
		},
		// About 24 requests a day per access URL, bursts of 6.
		Limits: resilience.Limits{
			Provider:   resilience.PerSecond(10, 10),
			Credential: resilience.Limit{Rate: rate.Limit(float64(DailyRequests) / 86400), Burst: 6, Quota: true},
		},
	}
}

// Adapter talks to SimpleFIN servers. A setup token is claimed once, by
// ExchangeCredentials, for the access URL that is stored instead.
type Adapter struct {
	client      *http.Client
	overlapDays int
	now         func() time.Time
}

// Option tunes the adapter.
type Option func(*Adapter)

// WithOverlapDays sets how many days before the last sync a sync re-reads.
func WithOverlapDays(n int) Option { return func(a *Adapter) { a.overlapDays = n } }

// WithClock sets the adapter's clock (nil keeps time.Now).
func WithClock(now func() time.Time) Option { return func(a *Adapter) { a.now = now } }

// New returns the SimpleFIN adapter using client for every call.
func New(client *http.Client, opts ...Option) providers.Provider {
	if client == nil {
		client = http.DefaultClient
	}
	a := &Adapter{client: client, overlapDays: DefaultOverlapDays, now: time.Now}
	for _, o := range opts {
		o(a)
	}
	if a.now == nil {
		a.now = time.Now
	}
	return a
}

// Name returns "simplefin".
func (a *Adapter) Name() string { return Name }

// Describe returns the package's Describe().
func (a *Adapter) Describe() providers.Description { return Describe() }

type credentials struct {
	SetupToken string `json:"setup_token,omitempty"`
	AccessURL  string `json:"access_url,omitempty"`
}

// ExchangeCredentials claims a setup token for its access URL (a token is
// claimable once) and returns {"access_url": …}, the credential to store;
// an access URL given as is passes through.
func (a *Adapter) ExchangeCredentials(ctx context.Context, conn providers.Connection) (json.RawMessage, error) {
	var c credentials
	if err := json.Unmarshal(conn.Credentials, &c); err != nil {
		return nil, wire.InvalidCredentials(Name, err)
	}
	access := strings.TrimSpace(c.AccessURL)
	if access == "" {
		var err error
		if access, err = a.claim(ctx, strings.TrimSpace(c.SetupToken)); err != nil {
			return nil, err
		}
	}
	return json.Marshal(credentials{AccessURL: access})
}

// endpointOf returns the connection's API root and Authorization header.
// The access URL's location is used unless conn.BaseURL names another than
// BridgeURL (a proxy or test server), which then replaces it, keeping the
// credentials. A setup token must have been exchanged before (it is not
// claimed here: a claim held only in memory would be lost on a restart).
func (a *Adapter) endpointOf(conn providers.Connection) (root, auth string, err error) {
	var c credentials
	if err = json.Unmarshal(conn.Credentials, &c); err != nil {
		return "", "", wire.InvalidCredentials(Name, err)
	}
	u, err := url.Parse(strings.TrimSpace(c.AccessURL))
	if err != nil || u.User == nil || u.Host == "" {
		return "", "", wire.InvalidCredentials(Name, errors.New("access_url must be https://user:pass@host/path (add a setup token with finsync connections add)"))
	}
	pass, _ := u.User.Password()
	auth = "Basic " + base64.StdEncoding.EncodeToString([]byte(u.User.Username()+":"+pass))
	u.User = nil
	root = u.String()
	if conn.BaseURL != "" && strings.TrimRight(conn.BaseURL, "/") != BridgeURL {
		root = conn.BaseURL
	}
	return strings.TrimRight(root, "/"), auth, nil
}

// claim exchanges a setup token for its access URL.
func (a *Adapter) claim(ctx context.Context, token string) (string, error) {
	raw, err := base64.StdEncoding.DecodeString(token)
	if err != nil {
		raw, err = base64.URLEncoding.DecodeString(token)
	}
	claimURL := strings.TrimSpace(string(raw))
	if u, perr := url.Parse(claimURL); token == "" || err != nil || perr != nil || (u.Scheme != "https" && u.Scheme != "http") {
		return "", wire.InvalidCredentials(Name, errors.New("setup_token is not the base64 of a claim URL"))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, claimURL, nil)
	if err != nil {
		return "", fmt.Errorf("simplefin claim: %w", err)
	}
	resp, err := wire.Do(a.client, Name, req)
	if err != nil {
		return "", fmt.Errorf("simplefin claim: %w", err)
	}
	if !resp.OK() {
		return "", fmt.Errorf("simplefin claim: %w", classify(resp, a.now()))
	}
	return strings.TrimSpace(string(resp.Body)), nil
}

// fetch reads the Account Set at the connection's endpoint with query.
func (a *Adapter) fetch(ctx context.Context, conn providers.Connection, query url.Values) (accountSet, error) {
	var out accountSet
	root, auth, err := a.endpointOf(conn)
	if err != nil {
		return out, err
	}
	h := http.Header{"Authorization": {auth}}
	err = wire.GetJSON(ctx, a.client, Name, root, "/accounts", query, h,
		func(r *wire.Response) error { return classify(r, a.now()) }, &out)
	return out, err
}

// classify turns a non-2xx SimpleFIN answer into a *resilience.Error: 403
// (access revoked, bad credentials, a token claimed twice) and 402 (payment
// required) need the user.
func classify(resp *wire.Response, now time.Time) error {
	e := &resilience.Error{
		Provider: Name, HTTPStatus: resp.Status, Class: wire.ClassOfStatus(resp.Status),
		Code:    strings.ToUpper(strings.ReplaceAll(http.StatusText(resp.Status), " ", "_")),
		Message: strings.TrimSpace(string(resp.Body)),
	}
	switch resp.Status {
	case http.StatusPaymentRequired:
		e.Class = resilience.ReauthRequired
	case http.StatusTooManyRequests:
		e.RetryAfter = wire.RetryAfter(resp.Header, now, time.Hour)
	}
	return e
}

// cursor is the opaque state behind TransactionRequest.Cursor.
type cursor struct {
	// Last is the end date (exclusive) of the last finished sync; Start and
	// End the window (end exclusive) left to read in the sync in progress.
	Last  string `json:"l,omitempty"`
	Start string `json:"s,omitempty"`
	End   string `json:"e,omitempty"`
}

type transaction struct {
	ID           string          `json:"id"`
	Posted       int64           `json:"posted"`
	Amount       decimal.Decimal `json:"amount"`
	Description  string          `json:"description"`
	TransactedAt *int64          `json:"transacted_at"`
	Pending      bool            `json:"pending"`
}

// Transactions reads every account's transactions, pending included, from
// the last sync minus the overlap (first sync: WindowDays back) to tomorrow,
// one window of at most WindowDays per call. The last window's pending rows
// are complete (ReplacePendingFor): a vanished pending row is removed.
// Caveat: posted rows the server drops are not seen as removed.
func (a *Adapter) Transactions(ctx context.Context, conn providers.Connection, req providers.TransactionRequest) (providers.TransactionPage, error) {
	var cur cursor
	if err := wire.DecodeCursor(req.Cursor, &cur); err != nil {
		return providers.TransactionPage{}, wire.InvalidCursor(Name, err)
	}
	if cur.Start == "" {
		today := req.Today
		if today.IsZero() {
			today = domain.DateOf(a.now())
		}
		end := today.AddDate(0, 0, 1)
		start := end.AddDate(0, 0, -WindowDays)
		if last, err := domain.ParseDate(cur.Last); err == nil {
			start = last.AddDate(0, 0, -a.overlapDays-1)
		}
		cur.Start, cur.End = domain.DateOf(start).String(), domain.DateOf(end).String()
	}
	start, err1 := domain.ParseDate(cur.Start)
	end, err2 := domain.ParseDate(cur.End)
	if err1 != nil || err2 != nil {
		return providers.TransactionPage{}, wire.InvalidCursor(Name, fmt.Errorf("bad window %q..%q", cur.Start, cur.End))
	}
	stop := start.AddDate(0, 0, WindowDays)
	if !stop.Before(end.Time) {
		stop = end.Time
	}
	set, err := a.fetch(ctx, conn, url.Values{"start-date": {strconv.FormatInt(start.Unix(), 10)}, "end-date": {strconv.FormatInt(stop.Unix(), 10)}, "pending": {"1"}})
	if err != nil {
		return providers.TransactionPage{}, fmt.Errorf("simplefin transactions: %w", err)
	}
	var page providers.TransactionPage
	for _, acc := range set.Accounts {
		for _, t := range acc.Transactions {
			page.Upserts = append(page.Upserts, mapTransaction(acc, t))
		}
		if stop.Equal(end.Time) {
			page.ReplacePendingFor = append(page.ReplacePendingFor, acc.ID)
		}
	}
	if stop.Equal(end.Time) {
		page.Next, page.Done = wire.EncodeCursor(cursor{Last: cur.End}), true
		return page, nil
	}
	cur.Start = domain.DateOf(stop).String()
	page.Next = wire.EncodeCursor(cur)
	return page, nil
}

// mapTransaction maps a row: positive amounts are deposits (finsync's sign
// already); a pending row (pending, or posted 0) is dated by transacted_at.
func mapTransaction(acc account, t transaction) providers.Transaction {
	at := unixTime(t.Posted)
	if t.TransactedAt != nil && *t.TransactedAt > 0 {
		at = unixTime(*t.TransactedAt)
	}
	tx := providers.Transaction{
		ProviderID:        acc.ID + "/" + t.ID,
		ProviderAccountID: acc.ID,
		Status:            domain.TxPending,
		Summary:           t.Description,
		Amount:            wire.Money(t.Amount),
		Currency:          currency(acc.Currency),
		AuthorizedDate:    wire.DatePtr(at),
		CreatedAt:         at,
	}
	if !t.Pending && t.Posted > 0 {
		posted := unixTime(t.Posted)
		tx.Status, tx.PostedDate, tx.PostedAt = domain.TxPosted, wire.DatePtr(posted), &posted
	}
	return tx
}

// accountSet is SimpleFIN's Account Set.
type accountSet struct {
	Errors   []string  `json:"errors"`
	Accounts []account `json:"accounts"`
}

type org struct {
	Domain  string `json:"domain"`
	SfinURL string `json:"sfin-url"`
	Name    string `json:"name"`
	ID      string `json:"id"`
}

type account struct {
	Org              org              `json:"org"`
	ID               string           `json:"id"`
	Name             string           `json:"name"`
	Currency         string           `json:"currency"`
	Balance          decimal.Decimal  `json:"balance"`
	AvailableBalance *decimal.Decimal `json:"available-balance"`
	Transactions     []transaction    `json:"transactions"`
}

// Accounts reads the Account Set with balances only (one request).
func (a *Adapter) Accounts(ctx context.Context, conn providers.Connection) (providers.AccountSet, error) {
	set, err := a.fetch(ctx, conn, url.Values{"balances-only": {"1"}})
	if err != nil {
		return providers.AccountSet{}, fmt.Errorf("simplefin accounts: %w", err)
	}
	out := providers.AccountSet{}
	for _, acc := range set.Accounts {
		if out.Institution.ID == "" {
			out.Institution = institution(acc.Org)
		}
		out.Accounts = append(out.Accounts, mapAccount(acc))
	}
	return out, nil
}

// institution names the account's organisation (its id, else its domain).
func institution(o org) providers.Institution {
	return providers.Institution{ID: cmp.Or(o.ID, o.Domain, o.SfinURL), Name: cmp.Or(o.Name, o.Domain)}
}

// mapAccount maps an account. SimpleFIN gives no type: a name saying
// "credit" or "card" makes a credit card, whose balance (negative when
// owed) is stored as the amount owed, as other providers report it.
func mapAccount(acc account) providers.Account {
	cur := wire.Money(acc.Balance)
	out := providers.Account{
		ProviderAccountID: acc.ID, Name: acc.Name, Type: "depository", Subtype: "checking",
		Currency: currency(acc.Currency), CurrentBalance: &cur, AvailableBalance: wire.MoneyPtr(acc.AvailableBalance),
	}
	lname := strings.ToLower(acc.Name)
	switch {
	case strings.Contains(lname, "credit") || strings.Contains(lname, "card"):
		out.Type, out.Subtype = "credit", "credit card"
		owed := cur.Neg()
		out.CurrentBalance = &owed
		out.Liability = &domain.Liability{Type: "credit"}
	case strings.Contains(lname, "saving"):
		out.Subtype = "savings"
	}
	return out
}

// currency returns an ISO code upper-cased; a custom currency (a URL) is
// kept as given.
func currency(c string) string {
	if len(c) == 3 {
		return strings.ToUpper(c)
	}
	return c
}

// unixTime returns the UTC instant of Unix seconds.
func unixTime(s int64) time.Time { return time.Unix(s, 0).UTC() }

// Holdings is not read from SimpleFIN.
func (a *Adapter) Holdings(context.Context, providers.Connection) (providers.Holdings, error) {
	return providers.Holdings{}, providers.ErrNotSupported
}

// InvestmentTransactions is not offered by SimpleFIN.
func (a *Adapter) InvestmentTransactions(context.Context, providers.Connection, domain.Date, domain.Date) (providers.InvestmentTransactions, error) {
	return providers.InvestmentTransactions{}, providers.ErrNotSupported
}
