package v2

import (
	"context"
	"net/http"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/storage"
)

type holdingView struct {
	ID               uuid.UUID     `json:"id"`
	AccountID        uuid.UUID     `json:"accountId"`
	SecurityID       uuid.UUID     `json:"securityId"`
	Quantity         domain.Money  `json:"quantity"`
	CostBasis        *domain.Money `json:"costBasis"`
	InstitutionPrice domain.Money  `json:"institutionPrice"`
	InstitutionValue domain.Money  `json:"institutionValue"`
	Currency         string        `json:"currency"`
	PriceAsOf        *domain.Date  `json:"priceAsOf"`
	Provider         string        `json:"provider"`
}

type securityView struct {
	ID         uuid.UUID     `json:"id"`
	Symbol     *string       `json:"symbol"`
	Name       string        `json:"name"`
	Type       string        `json:"type"`
	ClosePrice *domain.Money `json:"closePrice"`
	Currency   *string       `json:"currency"`
}

type investmentTransactionView struct {
	ID          uuid.UUID     `json:"id"`
	AccountID   uuid.UUID     `json:"accountId"`
	SecurityID  *uuid.UUID    `json:"securityId"`
	Type        string        `json:"type"`
	Subtype     string        `json:"subtype"`
	Date        domain.Date   `json:"date"`
	Quantity    domain.Money  `json:"quantity"`
	Price       domain.Money  `json:"price"`
	Amount      domain.Money  `json:"amount"`
	Fees        *domain.Money `json:"fees"`
	Currency    string        `json:"currency"`
	Description string        `json:"description"`
	Provider    string        `json:"provider"`
}

// investmentQuery reads the filters shared by holdings and investment
// transactions and checks the ids they name.
func (s *Server) investmentQuery(c *gin.Context, listing string, dates bool) (storage.InvestmentFilter, *pager, error) {
	q := newQuery(c)
	f := storage.InvestmentFilter{
		BankConnectionID: q.UUID("bankConnectionId"),
		AccountID:        q.UUID("bankAccountId"),
	}
	if dates {
		f.StartDate, f.EndDate = q.dateRange()
	}
	pg := s.newPager(c, listing, q)
	if q.Err() != nil {
		return f, nil, q.Err()
	}
	return f, pg, s.checkFilters(c, f.BankConnectionID, f.AccountID, nil)
}

// NeverStoredAndUnavailable reports whether a dataset has never been stored
// for any of the scope's connections (or the one named) that tried to fetch
// it, and every such attempt failed because the provider was unavailable:
// the one case where the API answers 502 instead of serving stored data.
func NeverStoredAndUnavailable(ctx context.Context, st *storage.Store, sc storage.Scope, dataset string, connectionID *uuid.UUID) (bool, error) {
	states, err := st.ListDatasetStates(ctx, sc, dataset, connectionID)
	if err != nil {
		return false, err
	}
	failed := 0
	for _, d := range states {
		if d.Stored {
			return false, nil
		}
		if d.LastErrorClass == "unavailable" {
			failed++
		} else if d.LastErrorClass != "" {
			return false, nil
		}
	}
	return failed > 0, nil
}

func (s *Server) listHoldings(c *gin.Context) {
	f, pg, err := s.investmentQuery(c, "holdings", false)
	if err != nil {
		s.handle(c, err)
		return
	}
	ctx, sc := c.Request.Context(), scope(c)
	rows, err := s.cfg.Store.ListHoldings(ctx, sc, f, pg.after, pg.fetch())
	if err != nil {
		s.handle(c, err)
		return
	}
	if len(rows) == 0 && pg.after.IsZero() {
		if down, err := NeverStoredAndUnavailable(ctx, s.cfg.Store, sc, "holdings", f.BankConnectionID); err != nil || down {
			s.handle(c, firstErr(err, errProviderUnavailable))
			return
		}
	}
	hasMore := pg.more(len(rows))
	if hasMore {
		rows = rows[:pg.limit]
	}
	out := make([]holdingView, len(rows))
	ids := make([]uuid.UUID, 0, len(rows))
	var last storage.Keyset
	for i, h := range rows {
		out[i] = holdingView{h.ID, h.AccountID, h.SecurityID, h.Quantity, h.CostBasis, h.InstitutionPrice, h.InstitutionValue, h.Currency, h.PriceAsOf, h.Provider}
		ids = append(ids, h.SecurityID)
		last = storage.Keyset{ID: h.ID}
	}
	secs, err := s.securities(ctx, sc.UserID, ids)
	if err != nil {
		s.handle(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"holdings": out, "securities": secs, "pageInfo": pg.pageInfo(hasMore, last)})
}

func (s *Server) listInvestmentTransactions(c *gin.Context) {
	f, pg, err := s.investmentQuery(c, "investment-transactions", true)
	if err != nil {
		s.handle(c, err)
		return
	}
	ctx, sc := c.Request.Context(), scope(c)
	rows, err := s.cfg.Store.ListInvestmentTransactions(ctx, sc, f, pg.after, pg.fetch())
	if err != nil {
		s.handle(c, err)
		return
	}
	if len(rows) == 0 && pg.after.IsZero() {
		if down, err := NeverStoredAndUnavailable(ctx, s.cfg.Store, sc, "investment_transactions", f.BankConnectionID); err != nil || down {
			s.handle(c, firstErr(err, errProviderUnavailable))
			return
		}
	}
	hasMore := pg.more(len(rows))
	if hasMore {
		rows = rows[:pg.limit]
	}
	out := make([]investmentTransactionView, len(rows))
	ids := make([]uuid.UUID, 0, len(rows))
	var last storage.Keyset
	for i, t := range rows {
		out[i] = investmentTransactionView{t.ID, t.AccountID, t.SecurityID, t.Type, t.Subtype, t.Date, t.Quantity, t.Price, t.Amount, t.Fees, t.Currency, t.Description, t.Provider}
		if t.SecurityID != nil {
			ids = append(ids, *t.SecurityID)
		}
		last = storage.Keyset{Date: t.Date.Time, ID: t.ID}
	}
	secs, err := s.securities(ctx, sc.UserID, ids)
	if err != nil {
		s.handle(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"investmentTransactions": out, "securities": secs, "pageInfo": pg.pageInfo(hasMore, last)})
}

// securities loads the securities the rows reference, each once.
func (s *Server) securities(ctx context.Context, userID uuid.UUID, ids []uuid.UUID) ([]securityView, error) {
	secs, err := s.cfg.Store.ListSecurities(ctx, userID, ids)
	if err != nil {
		return nil, err
	}
	out := make([]securityView, 0, len(secs))
	for _, sec := range secs {
		out = append(out, securityView{sec.ID, sec.Symbol, sec.Name, sec.Type, sec.ClosePrice, optional(sec.Currency)})
	}
	return out, nil
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
