package worker

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

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
	return r.Store.InTx(ctx, func(tx pgx.Tx) error {
		secs, err := storage.UpsertSecurities(ctx, tx, r.conn.UserID, r.conn.Provider, syncedSecurities(append(h.Securities, it.Securities...)))
		if err != nil {
			return err
		}
		holdings := make([]domain.Holding, 0, len(h.Holdings))
		for _, x := range h.Holdings {
			acct, ok1 := r.accounts[x.ProviderAccountID]
			sec, ok2 := secs[x.ProviderSecurityID]
			if !ok1 || !ok2 {
				continue
			}
			holdings = append(holdings, domain.Holding{AccountID: acct, SecurityID: sec, Quantity: x.Quantity, CostBasis: x.CostBasis,
				InstitutionPrice: x.InstitutionPrice, InstitutionValue: x.InstitutionValue, Currency: x.Currency, PriceAsOf: x.PriceAsOf})
		}
		if err := storage.ReplaceHoldings(ctx, tx, r.conn, holdings); err != nil {
			return err
		}
		if err := storage.MarkDataset(ctx, tx, r.conn.ID, "holdings", true, ""); err != nil {
			return err
		}
		events := make([]domain.InvestmentTransaction, 0, len(it.Transactions))
		for _, x := range it.Transactions {
			acct, ok := r.accounts[x.ProviderAccountID]
			if !ok {
				continue
			}
			e := domain.InvestmentTransaction{AccountID: acct, ProviderID: x.ProviderID, Date: x.Date, Type: x.Type, Subtype: x.Subtype,
				Quantity: x.Quantity, Price: x.Price, Amount: x.Amount, Fees: x.Fees, Currency: x.Currency, Description: x.Description}
			if x.ProviderSecurityID != nil {
				if id, ok := secs[*x.ProviderSecurityID]; ok {
					e.SecurityID = &id
				}
			}
			events = append(events, e)
		}
		if err := storage.UpsertInvestmentTransactions(ctx, tx, r.conn, events); err != nil {
			return err
		}
		return storage.MarkDataset(ctx, tx, r.conn.ID, "investment_transactions", true, "")
	})
}

func syncedSecurities(in []providers.Security) []storage.SyncedSecurity {
	seen := map[string]bool{}
	out := make([]storage.SyncedSecurity, 0, len(in))
	for _, s := range in {
		if seen[s.ProviderSecurityID] {
			continue
		}
		seen[s.ProviderSecurityID] = true
		out = append(out, storage.SyncedSecurity{ProviderSecurityID: s.ProviderSecurityID, Symbol: s.Symbol, Name: s.Name,
			Type: s.Type, ClosePrice: s.ClosePrice, Currency: s.Currency})
	}
	return out
}
