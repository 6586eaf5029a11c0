package enablebanking

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/providers"
)

// session is GET /sessions/{id}.
type session struct {
	Status   string   `json:"status"`
	Accounts []string `json:"accounts"`
	ASPSP    struct {
		Name    string `json:"name"`
		Country string `json:"country"`
	} `json:"aspsp"`
	Access struct {
		ValidUntil string `json:"valid_until"`
	} `json:"access"`
}

// validUntil is when the session's access ends (zero when not given).
func (s session) validUntil() time.Time {
	t, _ := time.Parse(time.RFC3339Nano, s.Access.ValidUntil)
	return t
}

// details is an account resource (GET /accounts/{uid}/details).
type details struct {
	UID       string `json:"uid"`
	AccountID struct {
		IBAN string `json:"iban"`
	} `json:"account_id"`
	Name            string `json:"name"`
	Details         string `json:"details"`
	Product         string `json:"product"`
	Currency        string `json:"currency"`
	CashAccountType string `json:"cash_account_type"`
}

type amount struct {
	Currency string          `json:"currency"`
	Amount   decimal.Decimal `json:"amount"`
}

type balance struct {
	Name          string `json:"name"`
	BalanceAmount amount `json:"balance_amount"`
	BalanceType   string `json:"balance_type"`
}

type balances struct {
	Balances []balance `json:"balances"`
}

// readSession reads the connection's session: one the server reports
// other than AUTHORIZED (expired, closed, revoked) needs the user to
// authorise again. The server's status decides, not the adapter's clock.
func (a *Adapter) readSession(ctx context.Context, conn providers.Connection) (session, error) {
	c, err := parseCredentials(conn.Credentials)
	if err != nil {
		return session{}, err
	}
	var s session
	if err := a.call(ctx, conn, http.MethodGet, "/sessions/"+url.PathEscape(c.SessionID), nil, nil, &s); err != nil {
		return s, fmt.Errorf("enablebanking session: %w", err)
	}
	if s.Status != "" && s.Status != "AUTHORIZED" {
		return s, &providers.Error{Provider: Name, Class: providers.ReauthRequired, Code: strings.ToUpper(s.Status) + "_SESSION",
			Message: "session " + strings.ToLower(s.Status) + ", valid until " + s.Access.ValidUntil}
	}
	return s, nil
}

// Accounts reads the session, then each account's details and balances.
// Balances that cannot be had (the day's quota spent, a 429, an outage, an
// answer without a current balance) leave the account's BalancesUnknown
// set, and NextAllowedAt says when a spent quota resets. The session's
// valid_until is the consent's end.
func (a *Adapter) Accounts(ctx context.Context, conn providers.Connection) (providers.AccountSet, error) {
	s, err := a.readSession(ctx, conn)
	if err != nil {
		return providers.AccountSet{}, err
	}
	set := providers.AccountSet{
		Institution:      providers.Institution{ID: s.ASPSP.Country + "/" + s.ASPSP.Name, Name: s.ASPSP.Name},
		ConsentExpiresAt: s.validUntil(),
	}
	for _, uid := range s.Accounts {
		var d details
		if err := a.call(ctx, conn, http.MethodGet, "/accounts/"+url.PathEscape(uid)+"/details", nil, nil, &d); err != nil {
			return providers.AccountSet{}, fmt.Errorf("enablebanking account %s: %w", uid, err)
		}
		acc := mapAccount(uid, d)
		bals, retry, err := a.balances(ctx, conn, uid)
		if err != nil {
			return providers.AccountSet{}, err
		}
		applyBalances(&acc, bals)
		if acc.CurrentBalance == nil {
			acc.CurrentBalance, acc.AvailableBalance, acc.BalancesUnknown = nil, nil, true
		}
		if retry.After(set.NextAllowedAt) {
			set.NextAllowedAt = retry
		}
		set.Accounts = append(set.Accounts, acc)
	}
	return set, nil
}

// balances reads an account's balances within its daily quota. It returns
// none, without an error, when a later call may have them (quota spent, a
// 429, an outage, a malformed answer); retry is then the quota's reset.
func (a *Adapter) balances(ctx context.Context, conn providers.Connection, uid string) ([]balance, time.Time, error) {
	ok, reset := a.spend(ctx, uid, "balances")
	if !ok {
		return nil, reset, nil
	}
	var b balances
	err := a.call(ctx, conn, http.MethodGet, "/accounts/"+url.PathEscape(uid)+"/balances", nil, nil, &b)
	if err == nil {
		return b.Balances, time.Time{}, nil
	}
	a.noteSpent(ctx, uid, "balances", err)
	pe := providers.AsError(err)
	switch {
	case ctx.Err() != nil || pe == nil || (pe.Class != providers.Unavailable && pe.Class != providers.RateLimited):
		return nil, time.Time{}, fmt.Errorf("enablebanking balances of %s: %w", uid, err)
	case pe.Class == providers.RateLimited:
		return nil, a.now().Add(pe.RetryAfter), nil
	}
	return nil, time.Time{}, nil
}

// accountTypes maps ISO 20022 cash account types to type and subtype.
var accountTypes = map[string][2]string{
	"CACC": {"depository", "checking"}, "CASH": {"depository", "checking"}, "TRAN": {"depository", "checking"},
	"SVGS": {"depository", "savings"}, "CARD": {"credit", "credit card"}, "LOAN": {"loan", "loan"},
}

func mapAccount(uid string, d details) providers.Account {
	acc := providers.Account{
		ProviderAccountID: uid, Name: cmp.Or(d.Name, d.Product, d.Details, d.AccountID.IBAN),
		Currency: strings.ToUpper(d.Currency), Type: "other", Subtype: "other",
	}
	if iban := d.AccountID.IBAN; len(iban) >= 4 {
		acc.Mask = iban[len(iban)-4:]
	}
	if t, ok := accountTypes[d.CashAccountType]; ok {
		acc.Type, acc.Subtype = t[0], t[1]
	}
	if acc.Type == "credit" {
		acc.Liability = &domain.Liability{Type: "credit"}
	}
	return acc
}

// applyBalances picks current (CLBD ?? XPCD ?? ITBD ?? OPBD) and available
// (CLAV ?? ITAV ?? FWAV ?? XPCD). On credit and loan accounts the bank's
// negative current balance becomes the positive amount owed; their
// available balance is the credit left, as the bank gives it.
func applyBalances(acc *providers.Account, bals []balance) {
	byType := map[string]balance{}
	for _, b := range bals {
		if _, dup := byType[b.BalanceType]; !dup {
			byType[b.BalanceType] = b
		}
	}
	pick := func(owed bool, types ...string) *domain.Money {
		for _, t := range types {
			if b, ok := byType[t]; ok {
				m := domain.MoneyFromDecimal(b.BalanceAmount.Amount)
				if owed && (acc.Type == "credit" || acc.Type == "loan") {
					m = m.Neg()
				}
				acc.Currency = cmp.Or(acc.Currency, strings.ToUpper(b.BalanceAmount.Currency))
				return &m
			}
		}
		return nil
	}
	acc.CurrentBalance = pick(true, "CLBD", "XPCD", "ITBD", "OPBD")
	acc.AvailableBalance = pick(false, "CLAV", "ITAV", "FWAV")
}
