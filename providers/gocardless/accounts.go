package gocardless

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/shopspring/decimal"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/providers"
	"github.com/finsync/finsync/providers/internal/wire"
	"github.com/finsync/finsync/resilience"
)

// detailsMaxAge is how long account details are reused before being read
// again (details rarely change and cost the same quota as transactions).
const detailsMaxAge = 24 * time.Hour

type requisition struct {
	ID            string   `json:"id"`
	Status        string   `json:"status"`
	InstitutionID string   `json:"institution_id"`
	Agreement     string   `json:"agreement"`
	Accounts      []string `json:"accounts"`
}

// agreement is the part of an end user agreement that says how long it
// gives access: from its acceptance, for AccessValidForDays days.
type agreement struct {
	Accepted           *time.Time `json:"accepted"`
	AccessValidForDays int        `json:"access_valid_for_days"`
}

type institution struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Logo string `json:"logo"`
}

type accountDetails struct {
	Account struct {
		ResourceID      string `json:"resourceId"`
		Iban            string `json:"iban"`
		Bban            string `json:"bban"`
		Currency        string `json:"currency"`
		OwnerName       string `json:"ownerName"`
		Name            string `json:"name"`
		DisplayName     string `json:"displayName"`
		Product         string `json:"product"`
		CashAccountType string `json:"cashAccountType"`
		MaskedPan       string `json:"maskedPan"`
	} `json:"account"`
}

type amount struct {
	Amount   decimal.Decimal `json:"amount"`
	Currency string          `json:"currency"`
}

// balance is one of an account's balances; an amount missing from the
// answer stays nil rather than reading as zero.
type balance struct {
	BalanceAmount struct {
		Amount   *decimal.Decimal `json:"amount"`
		Currency string           `json:"currency"`
	} `json:"balanceAmount"`
	BalanceType string `json:"balanceType"`
}

type balancesResponse struct {
	Balances []balance `json:"balances"`
}

// requisitionReauth maps requisition statuses that need the user to act.
var requisitionReauth = map[string]string{
	"EX": "REQUISITION_EXPIRED",
	"RJ": "REQUISITION_REJECTED",
	"SU": "REQUISITION_SUSPENDED",
}

// requisition reads the connection's requisition: its accounts and bank.
func (a *Adapter) requisition(ctx context.Context, conn providers.Connection) (requisition, error) {
	c, err := parseCredentials(conn.Credentials)
	if err != nil {
		return requisition{}, err
	}
	var r requisition
	if _, err := a.call(ctx, conn, request{method: http.MethodGet, path: "/requisitions/" + url.PathEscape(c.RequisitionID) + "/"}, &r); err != nil {
		return r, fmt.Errorf("gocardless requisition: %w", err)
	}
	if code, bad := requisitionReauth[r.Status]; bad {
		return r, &resilience.Error{Provider: name, Class: resilience.ReauthRequired, Code: code,
			Message: "requisition status " + r.Status, InstitutionID: ""}
	}
	if len(r.Accounts) == 0 && r.Status != "" && r.Status != "LN" {
		return r, &resilience.Error{Provider: name, Class: resilience.ReauthRequired, Code: "REQUISITION_NOT_LINKED",
			Message: "requisition status " + r.Status}
	}
	return r, nil
}

// Accounts reads the requisition, its agreement's end, the bank's name,
// and each account's details and balances. Details are reused for a day; an endpoint whose
// daily quota is spent is skipped, and RateLimited is returned only when an
// account's details were never read. Balances that cannot be had (quota
// spent, the balance call failing with an outage or a 429, a response
// without a current balance) leave the account's BalancesUnknown set, so
// the stored ones stay, and NextAllowedAt says when a spent quota resets.
func (a *Adapter) Accounts(ctx context.Context, conn providers.Connection) (providers.AccountSet, error) {
	r, err := a.requisition(ctx, conn)
	if err != nil {
		return providers.AccountSet{}, err
	}
	set := providers.AccountSet{Institution: a.institution(ctx, conn, r.InstitutionID),
		ConsentExpiresAt: a.consentEnds(ctx, conn, r.Agreement)}
	for _, id := range r.Accounts {
		acc, retry, err := a.account(ctx, conn, id)
		if err != nil {
			return providers.AccountSet{}, err
		}
		if retry.After(set.NextAllowedAt) {
			set.NextAllowedAt = retry
		}
		set.Accounts = append(set.Accounts, acc)
	}
	return set, nil
}

// consentEnds reads the requisition's end user agreement and returns when
// its access ends (access_valid_for_days from its acceptance); zero when
// there is no agreement, it is not accepted, or it cannot be read (the
// sync goes on: the end is for warning before it, and the requisition's
// status and the account calls still say when it has passed).
func (a *Adapter) consentEnds(ctx context.Context, conn providers.Connection, id string) time.Time {
	if id == "" {
		return time.Time{}
	}
	var ag agreement
	if _, err := a.call(ctx, conn, request{method: http.MethodGet, path: "/agreements/enduser/" + url.PathEscape(id) + "/"}, &ag); err != nil ||
		ag.Accepted == nil || ag.AccessValidForDays <= 0 {
		return time.Time{}
	}
	return ag.Accepted.AddDate(0, 0, ag.AccessValidForDays)
}

// institution reads the bank's name and logo, once a day per bank; the id
// stands in for the name when the lookup fails (it is cosmetic and costs no
// account quota).
func (a *Adapter) institution(ctx context.Context, conn providers.Connection, id string) providers.Institution {
	now := a.now()
	a.mu.Lock()
	cached, ok := a.institutions[id]
	a.mu.Unlock()
	if ok && now.Sub(cached.at) < detailsMaxAge {
		return cached.inst
	}
	inst := providers.Institution{ID: id, Name: id}
	var got institution
	if _, err := a.call(ctx, conn, request{method: http.MethodGet, path: "/institutions/" + url.PathEscape(id) + "/"}, &got); err == nil && got.Name != "" {
		inst.Name, inst.LogoURL = got.Name, got.Logo
	}
	a.mu.Lock()
	a.institutions[id] = cachedInstitution{inst: inst, at: now}
	a.mu.Unlock()
	return inst
}

// account reads one account's details and balances. Balances that cannot
// be had now leave the account's BalancesUnknown set, and retry, when not
// zero, is when a spent quota lets them be read again.
func (a *Adapter) account(ctx context.Context, conn providers.Connection, id string) (acc providers.Account, retry time.Time, err error) {
	d, err := a.accountDetails(ctx, conn, id)
	if err != nil {
		return providers.Account{}, time.Time{}, err
	}
	acc = mapDetails(id, d)
	bals, ok, retry, err := a.balances(ctx, conn, id)
	if err != nil {
		return providers.Account{}, time.Time{}, err
	}
	if ok {
		applyBalances(&acc, bals)
	}
	// A response without a current balance is partial: keep what is stored
	// rather than replace it with nothing.
	if !ok || acc.CurrentBalance == nil {
		acc.CurrentBalance, acc.AvailableBalance, acc.BalancesUnknown = nil, nil, true
	}
	return acc, retry, nil
}

func (a *Adapter) accountDetails(ctx context.Context, conn providers.Connection, id string) (accountDetails, error) {
	now := a.now()
	a.mu.Lock()
	cached, ok := a.details[id]
	a.mu.Unlock()
	if ok && now.Sub(cached.at) < detailsMaxAge {
		return cached.details, nil
	}
	if q, known := a.quotaFor(ctx, id, endpointDetails); known && q.exhausted(now) {
		if ok {
			return cached.details, nil
		}
		return accountDetails{}, quotaError(endpointDetails, id, q, now)
	}
	var d accountDetails
	resp, err := a.call(ctx, conn, request{method: http.MethodGet, path: "/accounts/" + url.PathEscape(id) + "/details/"}, &d)
	a.observe(ctx, id, endpointDetails, resp)
	if err != nil {
		return d, fmt.Errorf("gocardless account details: %w", err)
	}
	a.mu.Lock()
	a.details[id] = cachedDetails{details: d, at: now}
	a.mu.Unlock()
	return d, nil
}

// balances reads an account's balances. It reports ok false, without an
// error, when they cannot be had now: the quota is known to be spent, or
// the balance call failed as a later one may not (the bank down, a 429, a
// malformed answer); retry is then the reset of a quota known to be spent.
// Failures a later call cannot mend (expired consent, bad credentials) and
// the context's end are returned.
func (a *Adapter) balances(ctx context.Context, conn providers.Connection, id string) (bals []balance, ok bool, retry time.Time, err error) {
	now := a.now()
	if q, known := a.quotaFor(ctx, id, endpointBalances); known && q.exhausted(now) {
		return nil, false, q.resetTime(), nil
	}
	var b balancesResponse
	resp, err := a.call(ctx, conn, request{method: http.MethodGet, path: "/accounts/" + url.PathEscape(id) + "/balances/"}, &b)
	q, noted := a.observe(ctx, id, endpointBalances, resp)
	if err != nil {
		pe := resilience.AsError(err)
		if ctx.Err() != nil || pe == nil || (pe.Class != resilience.Unavailable && pe.Class != resilience.RateLimited) {
			return nil, false, time.Time{}, fmt.Errorf("gocardless account balances: %w", err)
		}
		if noted && q.exhausted(now) {
			retry = q.resetTime()
		}
		return nil, false, retry, nil
	}
	return b.Balances, true, time.Time{}, nil
}

func quotaError(endpoint, id string, q quota, now time.Time) error {
	return &resilience.Error{
		Provider: name, Class: resilience.RateLimited, Code: resilience.CodeQuotaExhausted,
		Message:    fmt.Sprintf("daily %s quota of account %s spent", endpoint, id),
		RetryAfter: q.resetTime().Sub(now),
	}
}

// accountTypes maps ISO 20022 cash account types to type and subtype.
var accountTypes = map[string][2]string{
	"CACC": {"depository", "checking"},
	"CASH": {"depository", "checking"},
	"TRAN": {"depository", "checking"},
	"SVGS": {"depository", "savings"},
	"CARD": {"credit", "credit card"},
	"LOAN": {"loan", "loan"},
}

func mapDetails(id string, d accountDetails) providers.Account {
	x := d.Account
	acc := providers.Account{ProviderAccountID: id, Currency: x.Currency, Type: "other", Subtype: "other"}
	for _, n := range []string{x.Name, x.DisplayName, x.Product, x.OwnerName} {
		if n != "" {
			acc.Name = n
			break
		}
	}
	for _, n := range []string{x.Iban, x.Bban, x.MaskedPan} {
		if n != "" {
			acc.Mask = wire.Last4(n)
			break
		}
	}
	if t, ok := accountTypes[x.CashAccountType]; ok {
		acc.Type, acc.Subtype = t[0], t[1]
	}
	return acc
}

// applyBalances picks current (closingBooked ?? interimBooked ?? expected)
// and available (interimAvailable ?? closingAvailable ?? forwardAvailable
// ?? expected). On credit and loan accounts the bank's negative balance
// becomes the positive amount owed.
func applyBalances(acc *providers.Account, bals []balance) {
	byType := map[string]balance{}
	for _, b := range bals {
		if _, dup := byType[b.BalanceType]; !dup && b.BalanceAmount.Amount != nil {
			byType[b.BalanceType] = b
		}
	}
	pick := func(types ...string) *domain.Money {
		for _, t := range types {
			if b, ok := byType[t]; ok && b.BalanceAmount.Amount != nil {
				m := domain.MoneyFromDecimal(*b.BalanceAmount.Amount)
				if acc.Type == "credit" || acc.Type == "loan" {
					m = m.Neg()
				}
				if acc.Currency == "" {
					acc.Currency = b.BalanceAmount.Currency
				}
				return &m
			}
		}
		return nil
	}
	acc.CurrentBalance = pick("closingBooked", "interimBooked", "expected")
	acc.AvailableBalance = pick("interimAvailable", "closingAvailable", "forwardAvailable", "expected")
}

// Holdings is not offered by GoCardless.
func (a *Adapter) Holdings(context.Context, providers.Connection) (providers.Holdings, error) {
	return providers.Holdings{}, providers.ErrNotSupported
}

// InvestmentTransactions is not offered by GoCardless.
func (a *Adapter) InvestmentTransactions(context.Context, providers.Connection, domain.Date, domain.Date) (providers.InvestmentTransactions, error) {
	return providers.InvestmentTransactions{}, providers.ErrNotSupported
}
