package v1

import (
	"context"
	"errors"
	"net/url"
	"strconv"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"github.com/finsync/finsync/storage"
)

// DefaultPublicURL is the base of v1's links when Config.PublicURL is nil
// (the binary always sets one: FINSYNC_PUBLIC_URL, else its listen
// address).
const DefaultPublicURL = "http://localhost"

// nextPage is the full URL of the page after this one: the configured
// public base URL (Config.PublicURL, with its path as a prefix), the
// request's path, and its query with cursor replaced. Nothing of it comes
// from the request's Host or forwarding headers, which any client can
// forge (a link pointing elsewhere would carry the next request, and its
// key, to whoever the client named).
func (s *Server) nextPage(c *gin.Context, cursor string) string {
	base := s.cfg.PublicURL
	if base == nil {
		base, _ = url.Parse(DefaultPublicURL)
	}
	r := c.Request
	u := base.JoinPath(r.URL.Path)
	u.User, u.Fragment, u.RawFragment = nil, "", ""
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
func (s *Server) offsetMeta(c *gin.Context, offset, count, total int) listPageMeta {
	m := listPageMeta{Count: count, TotalCount: total, HasMore: count > 0 && offset+count < total}
	if m.HasMore {
		next := s.nextPage(c, strconv.Itoa(offset+count))
		m.NextPage = &next
	}
	return m
}

// checkConnection answers errConnectionNotFound unless the connection is
// the caller's and within the credential's scope.
func (s *Server) checkConnection(ctx context.Context, sc storage.Scope, id uuid.UUID) error {
	ok, err := s.cfg.Store.IsConnectionVisible(ctx, sc, id)
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
