package plaid

import (
	"context"
	"fmt"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/providers"
)

type holding struct {
	AccountID              string        `json:"account_id"`
	SecurityID             string        `json:"security_id"`
	Quantity               domain.Money  `json:"quantity"`
	InstitutionPrice       domain.Money  `json:"institution_price"`
	InstitutionPriceAsOf   *domain.Date  `json:"institution_price_as_of"`
	InstitutionValue       domain.Money  `json:"institution_value"`
	CostBasis              *domain.Money `json:"cost_basis"`
	IsoCurrencyCode        *string       `json:"iso_currency_code"`
	UnofficialCurrencyCode *string       `json:"unofficial_currency_code"`
}

type security struct {
	SecurityID             string        `json:"security_id"`
	Name                   *string       `json:"name"`
	TickerSymbol           *string       `json:"ticker_symbol"`
	Type                   *string       `json:"type"`
	ClosePrice             *domain.Money `json:"close_price"`
	IsoCurrencyCode        *string       `json:"iso_currency_code"`
	UnofficialCurrencyCode *string       `json:"unofficial_currency_code"`
}

type investmentTransaction struct {
	InvestmentTransactionID string        `json:"investment_transaction_id"`
	AccountID               string        `json:"account_id"`
	SecurityID              *string       `json:"security_id"`
	Date                    domain.Date   `json:"date"`
	Name                    string        `json:"name"`
	Quantity                domain.Money  `json:"quantity"`
	Amount                  domain.Money  `json:"amount"`
	Price                   domain.Money  `json:"price"`
	Fees                    *domain.Money `json:"fees"`
	Type                    string        `json:"type"`
	Subtype                 string        `json:"subtype"`
	IsoCurrencyCode         *string       `json:"iso_currency_code"`
	UnofficialCurrencyCode  *string       `json:"unofficial_currency_code"`
}

type holdingsResponse struct {
	Holdings   []holding  `json:"holdings"`
	Securities []security `json:"securities"`
}

type investmentTransactionsResponse struct {
	InvestmentTransactions []investmentTransaction `json:"investment_transactions"`
	Securities             []security              `json:"securities"`
	Total                  int                     `json:"total_investment_transactions"`
}

// investmentsPageSize is the count asked of /investments/transactions/get.
const investmentsPageSize = 500

// Holdings fetches /investments/holdings/get.
func (a *Adapter) Holdings(ctx context.Context, conn providers.Connection) (providers.Holdings, error) {
	var resp holdingsResponse
	if err := a.post(ctx, conn, "/investments/holdings/get", nil, &resp); err != nil {
		return providers.Holdings{}, fmt.Errorf("plaid holdings: %w", err)
	}
	out := providers.Holdings{Securities: mapSecurities(resp.Securities)}
	for _, h := range resp.Holdings {
		out.Holdings = append(out.Holdings, providers.Holding{
			ProviderAccountID:  h.AccountID,
			ProviderSecurityID: h.SecurityID,
			Quantity:           h.Quantity,
			CostBasis:          h.CostBasis,
			InstitutionPrice:   h.InstitutionPrice,
			InstitutionValue:   h.InstitutionValue,
			Currency:           currency(h.IsoCurrencyCode, h.UnofficialCurrencyCode),
			PriceAsOf:          h.InstitutionPriceAsOf,
		})
	}
	return out, nil
}

// InvestmentTransactions pages /investments/transactions/get by offset
// until every event in the window is read. Amounts are negated: Plaid
// counts cash out as positive.
func (a *Adapter) InvestmentTransactions(ctx context.Context, conn providers.Connection, start, end domain.Date) (providers.InvestmentTransactions, error) {
	var out providers.InvestmentTransactions
	seen := map[string]bool{}
	for offset := 0; ; {
		body := map[string]any{
			"start_date": start.String(), "end_date": end.String(),
			"options": map[string]any{"count": investmentsPageSize, "offset": offset},
		}
		var resp investmentTransactionsResponse
		if err := a.post(ctx, conn, "/investments/transactions/get", body, &resp); err != nil {
			return providers.InvestmentTransactions{}, fmt.Errorf("plaid investment transactions: %w", err)
		}
		for _, s := range mapSecurities(resp.Securities) {
			if !seen[s.ProviderSecurityID] {
				seen[s.ProviderSecurityID] = true
				out.Securities = append(out.Securities, s)
			}
		}
		for _, t := range resp.InvestmentTransactions {
			out.Transactions = append(out.Transactions, mapInvestmentTransaction(t))
		}
		offset += len(resp.InvestmentTransactions)
		if len(resp.InvestmentTransactions) == 0 || offset >= resp.Total {
			return out, nil
		}
	}
}

func mapInvestmentTransaction(t investmentTransaction) providers.InvestmentTransaction {
	return providers.InvestmentTransaction{
		ProviderID:         t.InvestmentTransactionID,
		ProviderAccountID:  t.AccountID,
		ProviderSecurityID: t.SecurityID,
		Date:               t.Date,
		Type:               t.Type,
		Subtype:            t.Subtype,
		Quantity:           t.Quantity,
		Price:              t.Price,
		Amount:             t.Amount.Neg(),
		Fees:               t.Fees,
		Currency:           currency(t.IsoCurrencyCode, t.UnofficialCurrencyCode),
		Description:        t.Name,
	}
}

func mapSecurities(in []security) []providers.Security {
	out := make([]providers.Security, 0, len(in))
	for _, s := range in {
		out = append(out, providers.Security{
			ProviderSecurityID: s.SecurityID,
			Symbol:             s.TickerSymbol,
			Name:               deref(s.Name),
			Type:               deref(s.Type),
			ClosePrice:         s.ClosePrice,
			Currency:           currency(s.IsoCurrencyCode, s.UnofficialCurrencyCode),
		})
	}
	return out
}
