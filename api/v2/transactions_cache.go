package v2

import (
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/finsync/finsync/api/middleware"
	"github.com/finsync/finsync/api/pagecache"
	"github.com/finsync/finsync/storage"
)

// transactionsRoute is the route whose pages Config.Pages keeps.
const transactionsRoute = prefix + "/transactions"

// pageKey is the key of a transactions page in Config.Pages: the user,
// the credential and whether its scope is limited (a limited scope's
// accounts are noted in the listing version when they change; a key made
// unlimited is not, so it is part of the key), and the query exactly as
// sent. A query is answered alike every time for the same
// credential while the user's listing version stays the same: its
// validation depends on the query alone, and the rows, the filters'
// look-ups and the scope on what the version covers.
func pageKey(c *gin.Context) string {
	p := middleware.GetPrincipal(c)
	scoped := "a"
	if p.Scope().Scoped() {
		scoped = "s"
	}
	return p.UserID.String() + p.CredentialID.String() + scoped + c.Request.URL.RawQuery
}

// pageKeyContext is the gin context key under which servePageFromCache
// leaves a request's page key when the handler should keep its page.
const pageKeyContext = "finsync.pageKey"

// servePageFromCache answers GET /v2/transactions from Config.Pages when
// the page kept for the request's key was read at the user's current
// listing version: one short query, where the reads of the request go,
// instead of the listing's. It runs before the cap on expensive requests,
// which a page served from memory is not. Any other request goes on to
// the handler: a miss with its key left in the context for keepPage; a
// page found stale (or a failed version read, unless the request itself
// ended) and, for pagecache.HoldOff after that, the key's requests
// without it, so that while the user's data keeps changing (a sync
// running) they read the database as if there were no cache, without a
// version query for nothing each time.
func (s *Server) servePageFromCache(c *gin.Context) {
	if s.cfg.Pages == nil || c.Request.Method != http.MethodGet || c.FullPath() != transactionsRoute {
		c.Next()
		return
	}
	key := pageKey(c)
	now := time.Now()
	page, ok, held := s.cfg.Pages.Get(key, now)
	switch {
	case held:
		s.cfg.Pages.Count(pagecache.Bypass)
		c.Next()
		return
	case !ok:
		s.cfg.Pages.Count(pagecache.Miss)
		c.Set(pageKeyContext, key)
		c.Next()
		return
	}
	ctx := c.Request.Context()
	version, err := s.cfg.Store.GetListingVersion(ctx, middleware.GetPrincipal(c).UserID)
	switch {
	case err == nil && version == page.Version:
		s.cfg.Pages.Count(pagecache.Hit)
		writeJSON(c, http.StatusOK, page.Body)
		c.Abort()
		return
	case err != nil && ctx.Err() != nil:
		// The client hung up or the deadline passed: the page is dropped
		// (this request cannot check it again), other requests are not
		// held off.
		s.cfg.Pages.Remove(key)
	case err != nil:
		s.cfg.Log.WarnContext(ctx, "page cache: reading the listing version", "error", err)
		s.cfg.Pages.MarkStale(key, now)
	default:
		s.cfg.Pages.MarkStale(key, now)
	}
	s.cfg.Pages.Count(pagecache.Stale)
	c.Next()
}

// keepingPage returns the key under which the request's page is to be
// kept; false when it is not (no cache, or the key held off).
func keepingPage(c *gin.Context) (string, bool) {
	key := c.GetString(pageKeyContext)
	return key, key != ""
}

// keepPage keeps a transactions page read at version (unknown, -1, when
// the page is empty: an empty page is not kept), when servePageFromCache
// asked for it.
func (s *Server) keepPage(c *gin.Context, version int64, body []byte) {
	key, ok := keepingPage(c)
	if !ok || version < 0 {
		return
	}
	s.cfg.Pages.Put(key, pagecache.Page{Version: version, Body: body})
}

// versionBeforeChecks reads the user's listing version before the
// filters' look-ups when the request has any (a connection, account or
// category it must find) and its page is to be kept; -1 otherwise. Those
// look-ups run in statements of their own, so a page is kept only when
// the listing reads this same version: nothing changed between the
// look-ups and the rows, and the answer is the one the version stands for.
func (s *Server) versionBeforeChecks(c *gin.Context, f storage.TransactionFilter) (int64, error) {
	if _, ok := keepingPage(c); !ok || (f.BankConnectionID == nil && f.AccountID == nil && f.CategoryID == nil) {
		return -1, nil
	}
	return s.cfg.Store.GetListingVersion(c.Request.Context(), middleware.GetPrincipal(c).UserID)
}
