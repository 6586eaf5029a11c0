package v1

import (
	"context"
	"errors"
	"strconv"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"github.com/finsync/finsync/storage"
)

// nextPage is the full URL of the page after this one: the request's own
// URL with cursor replaced. The scheme is https when the request came over
// TLS or a proxy says so (X-Forwarded-Proto), http otherwise.
func nextPage(c *gin.Context, cursor string) string {
	r := c.Request
	u := *r.URL
	u.Scheme = "http"
	if r.TLS != nil || r.Header.Get("X-Forwarded-Proto") == "https" {
		u.Scheme = "https"
	}
	u.Host = r.Host
	u.User = nil
	u.Fragment = ""
	q := r.URL.Query()
	q.Set("cursor", cursor)
	u.RawQuery = q.Encode()
	return u.String()
}

// listMeta is the meta of the account and connection lists.
type listMeta struct {
	Count      int  `json:"count"`
	TotalCount int  `json:"totalCount"`
	HasMore    bool `json:"hasMore"`
}

// listPageMeta is the meta of the holdings and investment-transaction lists.
type listPageMeta struct {
	Count      int     `json:"count"`
	TotalCount int     `json:"totalCount"`
	HasMore    bool    `json:"hasMore"`
	NextPage   *string `json:"nextPage"`
}

// offsetMeta is the meta of a page of count rows found at offset among total.
func offsetMeta(c *gin.Context, offset, count, total int) listPageMeta {
	m := listPageMeta{Count: count, TotalCount: total, HasMore: count > 0 && offset+count < total}
	if m.HasMore {
		next := nextPage(c, strconv.Itoa(offset+count))
		m.NextPage = &next
	}
	return m
}

// checkConnection answers errConnectionNotFound unless the connection is
// the caller's and within the credential's scope.
func (s *Server) checkConnection(ctx context.Context, sc storage.Scope, id uuid.UUID) error {
	ok, err := s.cfg.Store.ConnectionVisible(ctx, sc, id)
	if err != nil {
		return err
	}
	if !ok {
		return errConnectionNotFound
	}
	return nil
}

// connectionProvider returns the provider of the caller's connection, or
// errConnectionNotFound.
func (s *Server) connectionProvider(ctx context.Context, sc storage.Scope, id uuid.UUID) (string, error) {
	bc, err := s.cfg.Store.GetConnection(ctx, sc, id)
	if errors.Is(err, storage.ErrNotFound) {
		return "", errConnectionNotFound
	}
	if err != nil {
		return "", err
	}
	return bc.Provider, nil
}
