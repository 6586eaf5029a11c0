package worker

import (
	"context"
	"errors"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/providers"
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
	return r.session.ApplyInvestments(ctx, append(h.Securities, it.Securities...), h.Holdings, it.Transactions)
}
