package v2

import (
	"errors"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"github.com/finsync/finsync/storage"
)

// checkFilters answers errNotFound when a filter names a connection,
// account or category the caller cannot see, exactly as for a missing one,
// so that a filter never reveals what lies outside the caller's scope.
func (s *Server) checkFilters(c *gin.Context, connectionID, accountID, categoryID *uuid.UUID) error {
	ctx, sc := c.Request.Context(), scope(c)
	if connectionID != nil {
		ok, err := s.cfg.Store.IsConnectionVisible(ctx, sc, *connectionID)
		if err != nil {
			return err
		}
		if !ok {
			return errNotFound
		}
	}
	if accountID != nil {
		ok, err := s.cfg.Store.IsAccountVisible(ctx, sc, *accountID)
		if err != nil {
			return err
		}
		if !ok {
			return errNotFound
		}
	}
	if categoryID != nil {
		if _, err := s.cfg.Store.GetCategory(ctx, sc, *categoryID); err != nil {
			if errors.Is(err, storage.ErrNotFound) {
				return errNotFound
			}
			return err
		}
	}
	return nil
}
