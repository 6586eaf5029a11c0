package v1

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/finsync/finsync/storage"
)

// MaxAccounts caps the accounts one /accounts response lists (version 1
// does not page accounts); meta.hasMore says when more exist.
const MaxAccounts = 1000

func (s *Server) listAccounts(c *gin.Context) {
	q := newQuery(c)
	f := storage.AccountFilter{BankConnectionID: q.UUID("connectionId"), Status: "active"}
	if q.Err() != nil {
		s.handle(c, q.Err())
		return
	}
	ctx, sc := c.Request.Context(), scope(c)
	if f.BankConnectionID != nil {
		if err := s.checkConnection(ctx, sc, *f.BankConnectionID); err != nil {
			s.handle(c, err)
			return
		}
	}
	rows, err := s.cfg.Store.ListAccounts(ctx, sc, f, storage.Keyset{}, MaxAccounts+1)
	if err != nil {
		s.handle(c, err)
		return
	}
	total := len(rows)
	if total > MaxAccounts {
		rows = rows[:MaxAccounts]
		if total, err = s.cfg.Store.CountAccounts(ctx, sc, f); err != nil {
			s.handle(c, err)
			return
		}
	}
	views := make([]accountView, len(rows))
	for i, a := range rows {
		views[i] = newAccountView(a, s.names)
	}
	c.JSON(http.StatusOK, gin.H{
		"data": views,
		"meta": listMeta{Count: len(views), TotalCount: total, HasMore: len(views) < total},
	})
}

func (s *Server) listConnections(c *gin.Context) {
	rows, err := s.cfg.Store.ListConnections(c.Request.Context(), scope(c), "active")
	if err != nil {
		s.handle(c, err)
		return
	}
	views := make([]connectionView, len(rows))
	for i, bc := range rows {
		views[i] = newConnectionView(bc, s.names)
	}
	c.JSON(http.StatusOK, gin.H{
		"bank_connections": views,
		"meta":             listMeta{Count: len(views), TotalCount: len(views), HasMore: false},
	})
}
