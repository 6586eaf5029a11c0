package worker

import (
	"context"
	"errors"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/providers"
	"github.com/finsync/finsync/storage"
)

// investmentHistoryDays is how far back investment transactions are fetched.
const investmentHistoryDays = 730

// investments syncs holdings and investment transactions.
func (r *syncRun) investments(ctx context.Context) error {
	r.dataset = "holdings"
	h, err := r.p.Holdings(ctx, r.pc)
	if errors.Is(err, providers.ErrNotSupported) {
		return nil
	}
	if err != nil {
		return err
	}
	r.dataset = "investment_transactions"
	start := domain.Date{Time: r.today.AddDate(0, 0, -investmentHistoryDays)}
	it, err := r.p.InvestmentTransactions(ctx, r.pc, start, r.today)
	if err != nil && !errors.Is(err, providers.ErrNotSupported) {
		return err
	}
	inv := storage.SyncInvestments{
		Securities:   append(h.Securities, it.Securities...),
		Holdings:     make([]storage.SyncedHolding, len(h.Holdings)),
		Transactions: make([]storage.SyncedInvestmentTransaction, len(it.Transactions)),
	}
	for i, x := range h.Holdings {
		inv.Holdings[i] = storage.SyncedHolding{ProviderAccountID: x.ProviderAccountID, ProviderSecurityID: x.ProviderSecurityID,
			Holding: domain.Holding{Quantity: x.Quantity, CostBasis: x.CostBasis, InstitutionPrice: x.InstitutionPrice,
				InstitutionValue: x.InstitutionValue, Currency: x.Currency, PriceAsOf: x.PriceAsOf}}
	}
	for i, x := range it.Transactions {
		inv.Transactions[i] = storage.SyncedInvestmentTransaction{ProviderAccountID: x.ProviderAccountID, ProviderSecurityID: x.ProviderSecurityID,
			InvestmentTransaction: domain.InvestmentTransaction{ProviderID: x.ProviderID, Date: x.Date, Type: x.Type, Subtype: x.Subtype,
				Quantity: x.Quantity, Price: x.Price, Amount: x.Amount, Fees: x.Fees, Currency: x.Currency, Description: x.Description}}
	}
	return r.session.ApplyInvestments(ctx, inv)
}
