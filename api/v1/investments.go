package v1

import (
	"context"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	v2 "github.com/finsync/finsync/api/v2"
	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/storage"
)

// investmentQuery reads the parameters shared by holdings and investment
// transactions (dates only for the latter) and checks the connection.
func (s *Server) investmentQuery(c *gin.Context, dates bool) (storage.ConnectionFilter, int, int, error) {
	q := newQuery(c)
	f := storage.ConnectionFilter{
		BankConnectionID: q.requiredUUID("bankConnectionId"),
		AccountIDs:       q.accountIDs(),
	}
	if dates {
		today := domain.DateOf(time.Now())
		start := domain.Date{Time: today.AddDate(0, 0, -InvestmentWindowDays)}
		f.StartDate, f.EndDate = q.dateRange(&start, &today)
	}
	limit := q.limit(DefaultInvestmentLimit)
	offset := q.offsetCursor()
	if q.Err() != nil {
		return f, 0, 0, q.Err()
	}
	return f, offset, limit, s.checkConnection(c.Request.Context(), scope(c), f.BankConnectionID)
}

// unavailable answers errProviderUnavailable for an empty first page of a
// dataset that was never stored because the provider was unavailable.
func (s *Server) unavailable(ctx context.Context, sc storage.Scope, dataset string, f storage.ConnectionFilter) error {
	down, err := v2.NeverStoredAndUnavailable(ctx, s.cfg.Store, sc, dataset, &f.BankConnectionID)
	if err != nil {
		return err
	}
	if down {
		return errProviderUnavailable
	}
	return nil
}

func (s *Server) listHoldings(c *gin.Context) {
	f, offset, limit, err := s.investmentQuery(c, false)
	if err != nil {
		s.handle(c, err)
		return
	}
	ctx, sc := c.Request.Context(), scope(c)
	rows, err := s.cfg.Store.ListHoldingsAtOffset(ctx, sc, f, offset, limit)
	if err != nil {
		s.handle(c, err)
		return
	}
	if len(rows) == 0 && offset == 0 {
		if err := s.unavailable(ctx, sc, "holdings", f); err != nil {
			s.handle(c, err)
			return
		}
	}
	total, err := s.cfg.Store.CountHoldings(ctx, sc, f)
	if err != nil {
		s.handle(c, err)
		return
	}
	out := make([]holdingView, len(rows))
	ids := make([]uuid.UUID, 0, len(rows))
	for i, h := range rows {
		out[i] = newHoldingView(h, s.names)
		ids = append(ids, h.SecurityID)
	}
	secs, err := s.securities(ctx, sc.UserID, ids)
	if err != nil {
		s.handle(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{
		"data": gin.H{"holdings": out, "securities": secs},
		"meta": s.offsetMeta(c, offset, len(rows), total),
	})
}

func (s *Server) listInvestmentTransactions(c *gin.Context) {
	f, offset, limit, err := s.investmentQuery(c, true)
	if err != nil {
		s.handle(c, err)
		return
	}
	ctx, sc := c.Request.Context(), scope(c)
	rows, err := s.cfg.Store.ListInvestmentTransactionsAtOffset(ctx, sc, f, offset, limit)
	if err != nil {
		s.handle(c, err)
		return
	}
	if len(rows) == 0 && offset == 0 {
		if err := s.unavailable(ctx, sc, "investment_transactions", f); err != nil {
			s.handle(c, err)
			return
		}
	}
	total, err := s.cfg.Store.CountInvestmentTransactions(ctx, sc, f)
	if err != nil {
		s.handle(c, err)
		return
	}
	out := make([]investmentTransactionView, len(rows))
	ids := make([]uuid.UUID, 0, len(rows))
	for i, t := range rows {
		out[i] = newInvestmentTransactionView(t, s.names)
		if t.SecurityID != nil {
			ids = append(ids, *t.SecurityID)
		}
	}
	secs, err := s.securities(ctx, sc.UserID, ids)
	if err != nil {
		s.handle(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{
		"data": gin.H{"investmentTransactions": out, "securities": secs},
		"meta": s.offsetMeta(c, offset, len(rows), total),
	})
}

// securities loads the securities the rows reference, each once.
func (s *Server) securities(ctx context.Context, userID uuid.UUID, ids []uuid.UUID) ([]securityView, error) {
	secs, err := s.cfg.Store.ListSecurities(ctx, userID, ids)
	if err != nil {
		return nil, err
	}
	out := make([]securityView, 0, len(secs))
	for _, sec := range secs {
		out = append(out, securityView{sec.ID, sec.Symbol, sec.Name, sec.Type})
	}
	return out, nil
}
