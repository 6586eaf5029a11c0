package v2

import (
	"errors"
	"net/http"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/internal/jsonw"
	"github.com/finsync/finsync/storage"
)

// listTransfers lists the transfers the caller sees (both accounts in a
// scoped credential's scope), newest outflow date first.
func (s *Server) listTransfers(c *gin.Context) {
	q := newQuery(c)
	f := storage.TransferFilter{AccountID: q.UUID("bankAccountId")}
	f.StartDate, f.EndDate = q.dateRange()
	pg := s.newPager(c, "transfers", q)
	if q.Err() != nil {
		s.handle(c, q.Err())
		return
	}
	if err := s.checkFilters(c, nil, f.AccountID, nil); err != nil {
		s.handle(c, err)
		return
	}
	rows, err := s.cfg.Store.ListTransfers(c.Request.Context(), scope(c), f, pg.after, pg.fetch())
	if err != nil {
		s.handle(c, err)
		return
	}
	hasMore := pg.more(len(rows))
	if hasMore {
		rows = rows[:pg.limit]
	}
	o := jsonw.Start(make([]byte, 0, 64+len(rows)*512))
	o.Array("transfers", len(rows), func(b []byte, i int) []byte { return appendTransfer(b, &rows[i]) })
	var last storage.Keyset
	if len(rows) > 0 {
		t := &rows[len(rows)-1]
		last = storage.Keyset{Date: t.Date.Time, ID: t.ID}
	}
	pg.appendInfo(&o, hasMore, last)
	body := o.End()
	writeJSON(c, http.StatusOK, body)
}

// createTransfer pairs two transactions by hand: 201 {transfer}; 400 when
// they are not an outflow and an inflow of two of the caller's accounts
// (an id outside the scope is unknown), 409 CONFLICT when either is
// paired already.
func (s *Server) createTransfer(c *gin.Context) {
	m, err := readObject(c, "outflowTransactionId", "inflowTransactionId")
	if err != nil {
		s.handle(c, err)
		return
	}
	out, err := requiredUUID(m, "outflowTransactionId")
	if err != nil {
		s.handle(c, err)
		return
	}
	in, err := requiredUUID(m, "inflowTransactionId")
	if err != nil {
		s.handle(c, err)
		return
	}
	t, err := s.cfg.Store.CreateTransfer(c.Request.Context(), scope(c), out, in)
	var invalid *storage.TransferInvalidError
	switch {
	case errors.As(err, &invalid):
		s.handle(c, badf("%s", invalid.Msg))
		return
	case errors.Is(err, storage.ErrTransferConflict):
		Fail(c, http.StatusConflict, CodeConflict, "One of the transactions is already part of a transfer")
		return
	case err != nil:
		s.handle(c, err)
		return
	}
	o := jsonw.Start(nil)
	o.Raw("transfer", appendTransfer(nil, &t))
	writeJSON(c, http.StatusCreated, o.End())
}

// requiredUUID decodes a required UUID string member.
func requiredUUID(m members, name string) (uuid.UUID, error) {
	if !m.has(name) {
		return uuid.Nil, badf("%s: is required", name)
	}
	id, err := m.uuidOrNull(name)
	if err != nil || id == nil {
		return uuid.Nil, badf("%s: must be a UUID", name)
	}
	return *id, nil
}

// deleteTransfer unpairs a transfer (204); the pair is never detected
// again.
func (s *Server) deleteTransfer(c *gin.Context) {
	id, ok := s.pathID(c, "id")
	if !ok {
		return
	}
	if err := s.cfg.Store.DeleteTransfer(c.Request.Context(), scope(c), id); err != nil {
		s.handle(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}

// appendTransfer appends the version 2 Transfer object.
func appendTransfer(b []byte, t *domain.Transfer) []byte {
	o := jsonw.Start(b)
	o.UUID("id", t.ID)
	o.UUID("outflowTransactionId", t.OutflowTransactionID)
	o.UUID("inflowTransactionId", t.InflowTransactionID)
	o.UUID("outflowAccountId", t.OutflowAccountID)
	o.UUID("inflowAccountId", t.InflowAccountID)
	o.Money("amount", t.Amount)
	o.String("currency", t.Currency)
	o.Money("inflowAmount", t.InflowAmount)
	o.String("inflowCurrency", t.InflowCurrency)
	o.Float("confidence", t.Confidence)
	o.String("source", t.Source)
	o.Array("reasons", len(t.Reasons), func(b []byte, i int) []byte { return jsonw.AppendString(b, t.Reasons[i]) })
	o.Time("createdAt", t.CreatedAt)
	return o.End()
}
