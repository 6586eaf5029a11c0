package v2

import (
	"github.com/gin-gonic/gin"

	"github.com/finsync/finsync/api/cursor"
	"github.com/finsync/finsync/internal/jsonw"
	"github.com/finsync/finsync/storage"
)

// pager reads a listing's cursor and limit and writes its pageInfo.
type pager struct {
	codec   *cursor.Codec
	binding cursor.Binding
	limit   int
	after   storage.Keyset
}

// newPager reads limit and cursor from the query; the cursor must have been
// issued for the same listing, user and filters.
func (s *Server) newPager(c *gin.Context, listing string, q *query) *pager {
	p := &pager{
		codec:   s.cfg.Cursors,
		binding: cursor.Binding{Listing: listing, UserID: scope(c).UserID, Filters: q.filters()},
		limit:   q.limit(),
	}
	if raw, ok := q.Get("cursor"); ok {
		k, err := p.codec.Decode(p.binding, raw)
		if err != nil {
			q.Fail("cursor", "is not a cursor issued for this listing and these filters")
		}
		p.after = k
	}
	return p
}

// fetch is the number of rows to ask for: one more than the page, to learn
// whether another page follows.
func (p *pager) fetch() int { return p.limit + 1 }

// trim reports whether there are more rows than the page holds.
func (p *pager) more(n int) bool { return n > p.limit }

// appendInfo appends `"pageInfo":{...}` for a page whose last row is last.
func (p *pager) appendInfo(o *jsonw.Object, hasMore bool, last storage.Keyset) {
	info := jsonw.Start(nil)
	if hasMore {
		info.String("nextCursor", p.codec.Encode(p.binding, last))
	} else {
		info.Raw("nextCursor", []byte("null"))
	}
	info.Bool("hasMore", hasMore)
	o.Raw("pageInfo", info.End())
}

// pageInfo is the map form of pageInfo, for handlers that encode with encoding/json.
func (p *pager) pageInfo(hasMore bool, last storage.Keyset) gin.H {
	var next any
	if hasMore {
		next = p.codec.Encode(p.binding, last)
	}
	return gin.H{"nextCursor": next, "hasMore": hasMore}
}
