package v2

import (
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/storage"
)

// accountView is the version 2 Account object.
type accountView struct {
	ID                   uuid.UUID         `json:"id"`
	ProviderAccountID    *string           `json:"providerAccountId"`
	BankConnectionID     *uuid.UUID        `json:"bankConnectionId"`
	BankConnectionStatus *string           `json:"bankConnectionStatus"`
	Provider             string            `json:"provider"`
	InstitutionName      *string           `json:"institutionName"`
	Name                 string            `json:"name"`
	Mask                 *string           `json:"mask"`
	Type                 *string           `json:"type"`
	Subtype              *string           `json:"subtype"`
	Currency             string            `json:"currency"`
	CurrentBalance       *domain.Money     `json:"currentBalance"`
	AvailableBalance     *domain.Money     `json:"availableBalance"`
	BalanceAsOf          *time.Time        `json:"balanceAsOf"`
	Status               string            `json:"status"`
	ClosedAt             *time.Time        `json:"closedAt"`
	Liability            *domain.Liability `json:"liability"`
	DuplicateOfAccountID *uuid.UUID        `json:"duplicateOfAccountId"`
}

func newAccountView(a storage.AccountWithConnection) accountView {
	return accountView{
		ID:                   a.ID,
		ProviderAccountID:    optional(a.ProviderAccountID),
		BankConnectionID:     a.BankConnectionID,
		BankConnectionStatus: a.ConnectionStatus,
		Provider:             a.Provider,
		InstitutionName:      optional(a.InstitutionName),
		Name:                 a.Name,
		Mask:                 optional(a.Mask),
		Type:                 optional(a.Type),
		Subtype:              optional(a.Subtype),
		Currency:             a.Currency,
		CurrentBalance:       a.CurrentBalance,
		AvailableBalance:     a.AvailableBalance,
		BalanceAsOf:          utc(a.BalanceAsOf),
		Status:               a.Status,
		ClosedAt:             utc(a.ClosedAt),
		Liability:            a.Liability,
		DuplicateOfAccountID: a.DuplicateOfAccountID,
	}
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

func (s *Server) listAccounts(c *gin.Context) {
	q := newQuery(c)
	f := storage.AccountFilter{
		BankConnectionID: q.UUID("bankConnectionId"),
		Status:           q.Enum("status", "active", "active", "closed", "all"),
	}
	pg := s.newPager(c, "accounts", q)
	if q.Err() != nil {
		s.handle(c, q.Err())
		return
	}
	if err := s.checkFilters(c, f.BankConnectionID, nil, nil); err != nil {
		s.handle(c, err)
		return
	}
	rows, err := s.cfg.Store.ListAccounts(c.Request.Context(), scope(c), f, pg.after, pg.fetch())
	if err != nil {
		s.handle(c, err)
		return
	}
	hasMore := pg.more(len(rows))
	if hasMore {
		rows = rows[:pg.limit]
	}
	views := make([]accountView, len(rows))
	var last storage.Keyset
	for i, a := range rows {
		views[i] = newAccountView(a)
		last = storage.Keyset{Date: a.CreatedAt, ID: a.ID}
	}
	c.JSON(http.StatusOK, gin.H{"accounts": views, "pageInfo": pg.pageInfo(hasMore, last)})
}

func (s *Server) getAccount(c *gin.Context) {
	id, ok := s.pathID(c, "accountId")
	if !ok {
		return
	}
	a, err := s.cfg.Store.GetAccount(c.Request.Context(), scope(c), id)
	if err != nil {
		s.handle(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"account": newAccountView(a)})
}

// notDuplicate clears an account's duplicate mark for good
// (docs/accounts.md) and answers the account.
func (s *Server) notDuplicate(c *gin.Context) {
	id, ok := s.pathID(c, "accountId")
	if !ok {
		return
	}
	a, err := s.cfg.Store.ClearDuplicateMark(c.Request.Context(), scope(c), id)
	if err != nil {
		s.handle(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"account": newAccountView(a)})
}

func (s *Server) balanceHistory(c *gin.Context) {
	q := newQuery(c)
	f := storage.BalanceFilter{
		BankConnectionID: q.UUID("bankConnectionId"),
		AccountID:        q.UUID("bankAccountId"),
	}
	f.StartDate, f.EndDate = q.dateRange()
	pg := s.newPager(c, "balance-history", q)
	if q.Err() != nil {
		s.handle(c, q.Err())
		return
	}
	if err := s.checkFilters(c, f.BankConnectionID, f.AccountID, nil); err != nil {
		s.handle(c, err)
		return
	}
	rows, err := s.cfg.Store.ListBalanceHistory(c.Request.Context(), scope(c), f, pg.after, pg.fetch())
	if err != nil {
		s.handle(c, err)
		return
	}
	hasMore := pg.more(len(rows))
	if hasMore {
		rows = rows[:pg.limit]
	}
	type entry struct {
		ID            uuid.UUID    `json:"id"`
		BankAccountID uuid.UUID    `json:"bankAccountId"`
		AccountName   string       `json:"accountName"`
		Date          domain.Date  `json:"date"`
		Balance       domain.Money `json:"balance"`
		Currency      string       `json:"currency"`
		Derived       bool         `json:"derived"`
	}
	out := make([]entry, len(rows))
	var last storage.Keyset
	for i, e := range rows {
		out[i] = entry{e.ID, e.AccountID, e.AccountName, e.Date, e.Balance, e.Currency, e.Derived}
		last = storage.Keyset{Date: e.Date.Time, ID: e.ID}
	}
	c.JSON(http.StatusOK, gin.H{"balanceHistory": out, "pageInfo": pg.pageInfo(hasMore, last)})
}
