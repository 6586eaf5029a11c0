package simplefin

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/providers"
	"github.com/finsync/finsync/providers/internal/wire"
)

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
	BalanceDate      int64            `json:"balance-date"`
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
	id := o.ID
	if id == "" {
		id = o.Domain
	}
	if id == "" {
		id = o.SfinURL
	}
	n := o.Name
	if n == "" {
		n = o.Domain
	}
	return providers.Institution{ID: id, Name: n}
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
		if acc.AvailableBalance != nil {
			avail := wire.Money(*acc.AvailableBalance)
			if avail.Decimal().IsNegative() {
				avail = avail.Neg()
			}
			out.AvailableBalance = &avail
		}
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
