package stripe

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/providers"
)

type balanceAmount struct {
	Amount   int64  `json:"amount"`
	Currency string `json:"currency"`
}

type balance struct {
	Available []balanceAmount `json:"available"`
	Pending   []balanceAmount `json:"pending"`
}

// Accounts reads /v1/balance: one account per currency, whose current
// balance is available plus pending.
func (a *Adapter) Accounts(ctx context.Context, conn providers.Connection) (providers.AccountSet, error) {
	var b balance
	if err := a.get(ctx, conn, "/v1/balance", nil, &b); err != nil {
		return providers.AccountSet{}, fmt.Errorf("stripe balance: %w", err)
	}
	c, err := parseCredentials(conn.Credentials)
	if err != nil {
		return providers.AccountSet{}, err
	}
	return providers.AccountSet{
		Institution: providers.Institution{ID: "stripe", Name: "Stripe"},
		Accounts:    mapBalance(b),
		// A connected account's events name it (ReadWebhook).
		LinkID: c.Account,
	}, nil
}

// AccountID is the provider account id of a connection's balance in one
// currency: the lowercase currency code.
func AccountID(currency string) string { return strings.ToLower(currency) }

func mapBalance(b balance) []providers.Account {
	avail, pend := map[string]int64{}, map[string]int64{}
	for _, x := range b.Available {
		avail[AccountID(x.Currency)] += x.Amount
	}
	for _, x := range b.Pending {
		pend[AccountID(x.Currency)] += x.Amount
		if _, ok := avail[AccountID(x.Currency)]; !ok {
			avail[AccountID(x.Currency)] = 0
		}
	}
	curs := make([]string, 0, len(avail))
	for c := range avail {
		curs = append(curs, c)
	}
	sort.Strings(curs)
	out := make([]providers.Account, 0, len(curs))
	for _, c := range curs {
		available := FromMinor(avail[c], c)
		current := FromMinor(avail[c]+pend[c], c)
		out = append(out, providers.Account{
			ProviderAccountID: AccountID(c),
			Name:              "Stripe balance (" + strings.ToUpper(c) + ")",
			Type:              "depository",
			Subtype:           "balance",
			Currency:          strings.ToUpper(c),
			CurrentBalance:    &current,
			AvailableBalance:  &available,
		})
	}
	return out
}

// Holdings is not offered by Stripe.
func (a *Adapter) Holdings(context.Context, providers.Connection) (providers.Holdings, error) {
	return providers.Holdings{}, providers.ErrNotSupported
}

// InvestmentTransactions is not offered by Stripe.
func (a *Adapter) InvestmentTransactions(context.Context, providers.Connection, domain.Date, domain.Date) (providers.InvestmentTransactions, error) {
	return providers.InvestmentTransactions{}, providers.ErrNotSupported
}
