package plaid

import (
	"context"
	"fmt"
	"time"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/providers"
)

type balances struct {
	Available              *domain.Money `json:"available"`
	Current                *domain.Money `json:"current"`
	Limit                  *domain.Money `json:"limit"`
	IsoCurrencyCode        *string       `json:"iso_currency_code"`
	UnofficialCurrencyCode *string       `json:"unofficial_currency_code"`
}

type account struct {
	AccountID    string   `json:"account_id"`
	Name         string   `json:"name"`
	OfficialName *string  `json:"official_name"`
	Mask         *string  `json:"mask"`
	Type         string   `json:"type"`
	Subtype      *string  `json:"subtype"`
	Balances     balances `json:"balances"`
	// PersistentAccountID is the same for every Item that reaches the
	// account (depository accounts at some institutions only).
	PersistentAccountID *string `json:"persistent_account_id"`
}

type item struct {
	ItemID          string   `json:"item_id"`
	InstitutionID   *string  `json:"institution_id"`
	InstitutionName *string  `json:"institution_name"`
	Products        []string `json:"products"`
	BilledProducts  []string `json:"billed_products"`
	// ConsentExpirationTime is when the user's consent to the Item ends
	// (ISO 8601), null where the institution sets none.
	ConsentExpirationTime *string `json:"consent_expiration_time"`
}

type accountsResponse struct {
	Accounts []account `json:"accounts"`
	Item     item      `json:"item"`
}

// Accounts fetches /accounts/get (the Item's consent expiration with
// it) and, when the item has credit or loan accounts, /liabilities/get for
// their debt details.
func (a *Adapter) Accounts(ctx context.Context, conn providers.Connection) (providers.AccountSet, error) {
	var resp accountsResponse
	if err := a.post(ctx, conn, "/accounts/get", nil, &resp); err != nil {
		return providers.AccountSet{}, fmt.Errorf("plaid accounts: %w", err)
	}
	set := providers.AccountSet{Institution: institution(resp.Item), HasInvestments: hasInvestments(resp), LinkID: resp.Item.ItemID}
	if t := resp.Item.ConsentExpirationTime; t != nil {
		// An unreadable time reports no end rather than failing the sync.
		set.ConsentExpiresAt, _ = time.Parse(time.RFC3339, *t)
	}
	needLiabilities := false
	for _, acc := range resp.Accounts {
		set.Accounts = append(set.Accounts, mapAccount(acc))
		needLiabilities = needLiabilities || acc.Type == "credit" || acc.Type == "loan"
	}
	if !needLiabilities {
		return set, nil
	}
	liab, err := a.liabilities(ctx, conn)
	if err != nil {
		return providers.AccountSet{}, err
	}
	for i := range set.Accounts {
		set.Accounts[i].Liability = liab[set.Accounts[i].ProviderAccountID]
	}
	return set, nil
}

func institution(it item) providers.Institution {
	var inst providers.Institution
	if it.InstitutionID != nil {
		inst.ID = *it.InstitutionID
	}
	if it.InstitutionName != nil {
		inst.Name = *it.InstitutionName
	}
	return inst
}

func hasInvestments(resp accountsResponse) bool {
	for _, acc := range resp.Accounts {
		if acc.Type == "investment" || acc.Type == "brokerage" {
			return true
		}
	}
	return false
}

func currency(iso, unofficial *string) string {
	if iso != nil && *iso != "" {
		return *iso
	}
	if unofficial != nil {
		return *unofficial
	}
	return ""
}

func mapAccount(acc account) providers.Account {
	out := providers.Account{
		ProviderAccountID: acc.AccountID,
		Name:              acc.Name,
		Type:              acc.Type,
		Currency:          currency(acc.Balances.IsoCurrencyCode, acc.Balances.UnofficialCurrencyCode),
		CurrentBalance:    acc.Balances.Current,
		AvailableBalance:  acc.Balances.Available,
		CreditLimit:       acc.Balances.Limit,
	}
	if out.Name == "" && acc.OfficialName != nil {
		out.Name = *acc.OfficialName
	}
	if acc.Mask != nil {
		out.Mask = *acc.Mask
	}
	if acc.Subtype != nil {
		out.Subtype = *acc.Subtype
	}
	if acc.PersistentAccountID != nil {
		out.PersistentID = *acc.PersistentAccountID
	}
	return out
}
