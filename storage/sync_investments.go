package storage

import (
	"context"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/finsync/finsync/domain"
)

// ApplyInvestments stores the securities (a provider security id listed
// twice: the first wins), makes the connection's holdings exactly
// holdings, stores the investment events, and marks both datasets stored,
// in one database transaction. Holdings and events of an account
// ApplyAccounts did not store (or a holding of an unknown security) are
// skipped. Caveat: call ApplyAccounts first.
func (ss *SyncSession) ApplyInvestments(ctx context.Context, securities []domain.ReportedSecurity, holdings []domain.ReportedHolding, events []domain.ReportedInvestmentTransaction) error {
	return ss.store.inTx(ctx, func(tx pgx.Tx) error {
		secs, err := upsertSecurities(ctx, tx, ss.conn.UserID, ss.conn.Provider, firstOfEachSecurity(securities))
		if err != nil {
			return err
		}
		if err := replaceHoldings(ctx, tx, ss.conn, ss.holdings(holdings, secs)); err != nil {
			return err
		}
		if err := markDataset(ctx, tx, ss.conn.ID, "holdings", true, ""); err != nil {
			return err
		}
		if err := upsertInvestmentTransactions(ctx, tx, ss.conn, ss.investmentEvents(events, secs)); err != nil {
			return err
		}
		return markDataset(ctx, tx, ss.conn.ID, "investment_transactions", true, "")
	})
}

// holdings converts reported positions to rows of the connection's
// accounts and the stored securities (secs, by provider security id),
// skipping those of an unknown account or security.
func (ss *SyncSession) holdings(reported []domain.ReportedHolding, secs map[string]uuid.UUID) []domain.Holding {
	out := make([]domain.Holding, 0, len(reported))
	for _, x := range reported {
		acct, ok1 := ss.accounts[x.ProviderAccountID]
		sec, ok2 := secs[x.ProviderSecurityID]
		if !ok1 || !ok2 {
			continue
		}
		out = append(out, domain.Holding{AccountID: acct, SecurityID: sec, Quantity: x.Quantity, CostBasis: x.CostBasis,
			InstitutionPrice: x.InstitutionPrice, InstitutionValue: x.InstitutionValue, Currency: x.Currency, PriceAsOf: x.PriceAsOf})
	}
	return out
}

// investmentEvents converts reported investment events to rows of the
// connection's accounts, skipping those of an unknown account; an unknown
// security leaves the event without one.
func (ss *SyncSession) investmentEvents(reported []domain.ReportedInvestmentTransaction, secs map[string]uuid.UUID) []domain.InvestmentTransaction {
	out := make([]domain.InvestmentTransaction, 0, len(reported))
	for _, x := range reported {
		acct, ok := ss.accounts[x.ProviderAccountID]
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
		out = append(out, e)
	}
	return out
}

// firstOfEachSecurity drops every security whose provider id an earlier
// one has.
func firstOfEachSecurity(in []domain.ReportedSecurity) []domain.ReportedSecurity {
	return oneOfEach(in, func(s *domain.ReportedSecurity) string { return s.ProviderSecurityID }, false)
}
