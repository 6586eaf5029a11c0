package mercury

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/providers"
	"github.com/finsync/finsync/providers/internal/wire"
	"github.com/finsync/finsync/resilience"
)

type account struct {
	ID               string        `json:"id"`
	Name             string        `json:"name"`
	Nickname         *string       `json:"nickname"`
	Status           string        `json:"status"`
	Kind             string        `json:"kind"`
	AvailableBalance *domain.Money `json:"availableBalance"`
	CurrentBalance   *domain.Money `json:"currentBalance"`
	AccountNumber    string        `json:"accountNumber"`
}

type accountsResponse struct {
	Accounts []account `json:"accounts"`
}

// Accounts reads /accounts (deposit accounts) and /credit (credit-card
// accounts). Balances are dollars; Mercury accounts are USD.
func (a *Adapter) Accounts(ctx context.Context, conn providers.Connection) (providers.AccountSet, error) {
	dep, credit, err := a.fetchAccounts(ctx, conn)
	if err != nil {
		return providers.AccountSet{}, err
	}
	set := providers.AccountSet{Institution: providers.Institution{ID: "mercury", Name: "Mercury"}}
	for _, acc := range dep {
		set.Accounts = append(set.Accounts, mapAccount(acc, false))
	}
	for _, acc := range credit {
		set.Accounts = append(set.Accounts, mapAccount(acc, true))
	}
	return set, nil
}

// fetchAccounts returns the live deposit and credit accounts. An
// organisation without credit may answer /credit with 404.
func (a *Adapter) fetchAccounts(ctx context.Context, conn providers.Connection) (dep, credit []account, err error) {
	var d, c accountsResponse
	if err := a.get(ctx, conn, "/accounts", nil, &d); err != nil {
		return nil, nil, fmt.Errorf("mercury accounts: %w", err)
	}
	if err := a.get(ctx, conn, "/credit", nil, &c); err != nil {
		if pe := resilience.AsError(err); pe == nil || pe.HTTPStatus != http.StatusNotFound {
			return nil, nil, fmt.Errorf("mercury credit accounts: %w", err)
		}
	}
	return live(d.Accounts), live(c.Accounts), nil
}

func live(in []account) []account {
	out := in[:0:0]
	for _, acc := range in {
		if acc.Status != "deleted" {
			out = append(out, acc)
		}
	}
	return out
}

func mapAccount(acc account, credit bool) providers.Account {
	out := providers.Account{
		ProviderAccountID: acc.ID,
		Name:              acc.Name,
		Mask:              wire.Last4(acc.AccountNumber),
		Type:              "depository",
		Subtype:           strings.ToLower(acc.Kind),
		Currency:          "USD",
		CurrentBalance:    acc.CurrentBalance,
		AvailableBalance:  acc.AvailableBalance,
	}
	if acc.Nickname != nil && *acc.Nickname != "" {
		out.Name = *acc.Nickname
	}
	if credit {
		out.Type, out.Subtype = "credit", "credit card"
		if out.Name == "" {
			out.Name = "Mercury credit"
		}
		out.Liability = &domain.Liability{Type: "credit"}
	}
	return out
}

// Holdings is not offered by Mercury.
func (a *Adapter) Holdings(context.Context, providers.Connection) (providers.Holdings, error) {
	return providers.Holdings{}, providers.ErrNotSupported
}

// InvestmentTransactions is not offered by Mercury.
func (a *Adapter) InvestmentTransactions(context.Context, providers.Connection, domain.Date, domain.Date) (providers.InvestmentTransactions, error) {
	return providers.InvestmentTransactions{}, providers.ErrNotSupported
}
