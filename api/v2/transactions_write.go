package v2

import (
	"errors"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/finsync/finsync/storage"
)

// updateTransaction sets or clears a transaction's category: the user's
// choice, which later syncs and rules keep.
func (s *Server) updateTransaction(c *gin.Context) {
	id, ok := s.pathID(c, "id")
	if !ok {
		return
	}
	m, err := readObject(c, "categoryId")
	if err != nil {
		s.handle(c, err)
		return
	}
	if !m.has("categoryId") {
		s.handle(c, badf("categoryId: is required (a category id, or null to clear)"))
		return
	}
	catID, err := m.uuidOrNull("categoryId")
	if err != nil {
		s.handle(c, err)
		return
	}
	t, err := s.cfg.Store.SetTransactionCategory(c.Request.Context(), scope(c), id, catID)
	if errors.Is(err, storage.ErrUnknownCategory) {
		err = badf("categoryId: no such category")
	}
	if err != nil {
		s.handle(c, err)
		return
	}
	writeJSON(c, http.StatusOK, appendTransaction(nil, &t))
}
