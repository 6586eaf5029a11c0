package v2

import (
	"net/http"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"github.com/finsync/finsync/domain"
)

// categoryView is the version 2 Category object.
type categoryView struct {
	ID              uuid.UUID  `json:"id"`
	Provider        string     `json:"provider"`
	ProviderID      *string    `json:"providerId"`
	Name            string     `json:"name"`
	Group           *string    `json:"group"`
	CategoryGroupID *uuid.UUID `json:"categoryGroupId"`
	Description     string     `json:"description"`
}

func newCategoryView(cat domain.Category) categoryView {
	return categoryView{
		ID:              cat.ID,
		Provider:        cat.Provider,
		ProviderID:      optional(cat.ProviderID),
		Name:            cat.Name,
		Group:           optional(cat.Group),
		CategoryGroupID: cat.CategoryGroupID,
		Description:     cat.Description,
	}
}

func (s *Server) listCategories(c *gin.Context) {
	rows, err := s.cfg.Store.ListCategories(c.Request.Context(), scope(c))
	if err != nil {
		s.handle(c, err)
		return
	}
	out := make([]categoryView, len(rows))
	for i, cat := range rows {
		out[i] = newCategoryView(cat)
	}
	c.JSON(http.StatusOK, gin.H{"categories": out})
}

func (s *Server) listCategoryGroups(c *gin.Context) {
	rows, err := s.cfg.Store.ListCategoryGroups(c.Request.Context(), scope(c))
	if err != nil {
		s.handle(c, err)
		return
	}
	type group struct {
		ID       uuid.UUID `json:"id"`
		Name     string    `json:"name"`
		Provider string    `json:"provider"`
	}
	out := make([]group, len(rows))
	for i, g := range rows {
		out[i] = group{g.ID, g.Name, g.Provider}
	}
	c.JSON(http.StatusOK, gin.H{"categoryGroups": out})
}
