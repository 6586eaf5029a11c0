package v2

import (
	"errors"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/finsync/finsync/storage"
)

var categoryFields = []string{"name", "group", "description"}

func (s *Server) createCategory(c *gin.Context) {
	m, err := readObject(c, categoryFields...)
	if err != nil {
		s.handle(c, err)
		return
	}
	if !m.has("name") {
		s.handle(c, badf("name: is required"))
		return
	}
	in, err := categoryInputFrom(m)
	if err != nil {
		s.handle(c, err)
		return
	}
	cat, err := s.cfg.Store.CreateCategory(c.Request.Context(), scope(c).UserID, in)
	if err != nil {
		s.handle(c, err)
		return
	}
	c.JSON(http.StatusCreated, newCategoryView(cat))
}

func (s *Server) updateCategory(c *gin.Context) {
	id, ok := s.pathID(c, "id")
	if !ok {
		return
	}
	m, err := readObject(c, categoryFields...)
	if err != nil {
		s.handle(c, err)
		return
	}
	if len(m) == 0 {
		s.handle(c, badf("body: name at least one field to change"))
		return
	}
	in, err := categoryInputFrom(m)
	if err != nil {
		s.handle(c, err)
		return
	}
	if sc := scope(c); sc.Scoped() {
		// A scoped key edits only the categories it can list.
		if _, err := s.cfg.Store.GetCategory(c.Request.Context(), sc, id); err != nil {
			s.handle(c, err)
			return
		}
	}
	cat, err := s.cfg.Store.UpdateCategory(c.Request.Context(), scope(c).UserID, id, in)
	if errors.Is(err, storage.ErrReadOnly) {
		err = badf("category: categories of the business bank are read-only")
	}
	if err != nil {
		s.handle(c, err)
		return
	}
	c.JSON(http.StatusOK, newCategoryView(cat))
}

// categoryInputFrom reads the fields of a category body that are present.
func categoryInputFrom(m members) (storage.CategoryInput, error) {
	var in storage.CategoryInput
	if m.has("name") {
		name, err := m.name("name")
		if err != nil {
			return in, err
		}
		in.Name = &name
	}
	if m.has("group") {
		in.SetGroup = true
		g, err := m.label("group", true)
		if err != nil {
			return in, err
		}
		if g != nil && *g == "" {
			g = nil
		}
		in.Group = g
	}
	if m.has("description") {
		d, err := m.str("description", false)
		if err != nil {
			return in, err
		}
		in.Description = d
	}
	return in, nil
}
