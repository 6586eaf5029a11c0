package v1

import (
	"context"
	"errors"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/internal/jsonw"
	"github.com/finsync/finsync/storage"
)

// listedStatuses are the transaction statuses version 1 lists.
func listedStatuses() []string { return []string{domain.TxPending, domain.TxPosted} }

// transactionPage is one page of a connection's transactions and the
// cursor of the next, "" when it is the last.
type transactionPage struct {
	rows []domain.Transaction
	next string
}

func (s *Server) listTransactions(c *gin.Context) {
	q := newQuery(c)
	f := storage.ConnectionFilter{
		BankConnectionID: q.requiredUUID("bankConnectionId"),
		AccountIDs:       q.accountIDs(),
		Statuses:         listedStatuses(),
	}
	f.StartDate, f.EndDate = q.dateRange(nil, nil)
	limit := q.limit(DefaultTransactionLimit)
	if q.Err() != nil {
		s.handle(c, q.Err())
		return
	}
	ctx, sc := c.Request.Context(), scope(c)
	provider, err := s.connectionProvider(ctx, sc, f.BankConnectionID)
	if err != nil {
		s.handle(c, err)
		return
	}
	var page transactionPage
	if s.profiles[provider].V1PagesAfterID {
		page, err = s.transactionsAfterID(ctx, sc, f, q, limit)
	} else {
		page, err = s.transactionsAtOffset(ctx, sc, f, q, limit)
	}
	if err != nil {
		s.handle(c, err)
		return
	}
	cats, err := s.referencedCategories(ctx, sc.UserID, page.rows)
	if err != nil {
		s.handle(c, err)
		return
	}
	c.Data(http.StatusOK, "application/json; charset=utf-8", s.transactionsBody(c, page, cats))
}

// transactionsAfterID pages by transaction id: the cursor names the last
// transaction of the previous page, and the page continues after it.
func (s *Server) transactionsAfterID(ctx context.Context, sc storage.Scope, f storage.ConnectionFilter, q *query, limit int) (transactionPage, error) {
	var after storage.Keyset
	if id := q.idCursor(); q.Err() != nil {
		return transactionPage{}, q.Err()
	} else if id != nil {
		k, err := s.cfg.Store.GetTransactionPosition(ctx, sc, f.BankConnectionID, *id)
		if errors.Is(err, storage.ErrNotFound) {
			return transactionPage{}, badf("cursor: is not a transaction of this bank connection")
		}
		if err != nil {
			return transactionPage{}, err
		}
		after = k
	}
	rows, err := s.cfg.Store.ListTransactionsAfter(ctx, sc, f, after, limit+1)
	if err != nil {
		return transactionPage{}, err
	}
	if len(rows) <= limit {
		return transactionPage{rows: rows}, nil
	}
	rows = rows[:limit]
	return transactionPage{rows: rows, next: rows[limit-1].ID.String()}, nil
}

// transactionsAtOffset pages by numeric offset.
func (s *Server) transactionsAtOffset(ctx context.Context, sc storage.Scope, f storage.ConnectionFilter, q *query, limit int) (transactionPage, error) {
	offset := q.offsetCursor()
	if q.Err() != nil {
		return transactionPage{}, q.Err()
	}
	rows, err := s.cfg.Store.ListTransactionsAtOffset(ctx, sc, f, offset, limit+1)
	if err != nil {
		return transactionPage{}, err
	}
	if len(rows) <= limit {
		return transactionPage{rows: rows}, nil
	}
	return transactionPage{rows: rows[:limit], next: strconv.Itoa(offset + limit)}, nil
}

// referencedCategories loads the categories the rows reference, each once.
func (s *Server) referencedCategories(ctx context.Context, userID uuid.UUID, rows []domain.Transaction) ([]domain.Category, error) {
	seen := make(map[uuid.UUID]bool)
	ids := make([]uuid.UUID, 0)
	for i := range rows {
		if id := rows[i].CategoryID; id != nil && !seen[*id] {
			seen[*id] = true
			ids = append(ids, *id)
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	return s.cfg.Store.ListCategoriesByID(ctx, userID, ids)
}

// transactionsBody writes {data: {transactions, categories}, meta: {count, nextPage}}.
func (s *Server) transactionsBody(c *gin.Context, page transactionPage, cats []domain.Category) []byte {
	b := make([]byte, 0, 128+len(page.rows)*560+len(cats)*160)
	b = append(b, `{"data":{"transactions":[`...)
	for i := range page.rows {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendTransaction(b, &page.rows[i], s.names)
	}
	b = append(b, `],"categories":[`...)
	for i := range cats {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendCategory(b, &cats[i])
	}
	b = append(b, `]},"meta":{"count":`...)
	b = strconv.AppendInt(b, int64(len(page.rows)), 10)
	b = append(b, `,"nextPage":`...)
	if page.next == "" {
		b = append(b, "null"...)
	} else {
		b = jsonw.AppendString(b, s.nextPage(c, page.next))
	}
	return append(b, "}}"...)
}
