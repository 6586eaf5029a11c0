package v2

import (
	"github.com/finsync/finsync/api/params"
	"github.com/finsync/finsync/domain"
)

// Page sizes of the listings.
const (
	DefaultLimit = 50
	MaxLimit     = params.MaxLimit
)

// query reads version 2's query parameters.
type query struct{ *params.Values }

// newQuery reads a request's raw query string; one that does not decode
// is an error (see params.Parse).
func newQuery(rawQuery string) *query { return &query{params.Parse(rawQuery)} }

// dateRange reads the optional startDate and endDate.
func (q *query) dateRange() (start, end *domain.Date) {
	start, end = q.Date("startDate", nil), q.Date("endDate", nil)
	q.CheckRange(start, end)
	return start, end
}

// limit reads the page size, DefaultLimit when absent.
func (q *query) limit() int { return q.Limit(DefaultLimit) }

// filters is the canonical form of the parameters that shape a listing
// (everything but cursor and limit), bound into its cursors.
func (q *query) filters() string { return q.Canonical("cursor", "limit") }
