package v1

import (
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/finsync/finsync/api/middleware"
	"github.com/finsync/finsync/api/params"

	"github.com/google/uuid"

	"github.com/finsync/finsync/domain"
)

// Page sizes of the listings.
const (
	MaxLimit                = params.MaxLimit
	DefaultTransactionLimit = 50
	DefaultInvestmentLimit  = 100
)

// InvestmentWindowDays is how far back /investment-transactions looks when
// no startDate is given.
const InvestmentWindowDays = 30

// query reads version 1's query parameters.
type query struct{ *params.Values }

// QueryParams are the query parameters each version 1 operation accepts,
// keyed as in the OpenAPI document ("GET /transactions"); any other
// answers 400 BAD_REQUEST naming it (middleware.StrictQuery). A handler
// reading a parameter not listed for its operation panics, and the OpenAPI
// document's tests check that each operation documents exactly these.
// GET /health is exempt: probes may add what they like.
func QueryParams() middleware.Accepted {
	return middleware.Accepted{
		"GET /openapi.json":            nil,
		"GET /accounts":                {"connectionId"},
		"GET /bank-connections":        nil,
		"GET /transactions":            {"bankConnectionId", "accountIds", "startDate", "endDate", "limit", "cursor"},
		"GET /holdings":                {"bankConnectionId", "accountIds", "limit", "cursor"},
		"GET /investment-transactions": {"bankConnectionId", "accountIds", "startDate", "endDate", "limit", "cursor"},
	}
}

// newQuery returns the request's query as middleware.StrictQuery parsed
// it for the operation: only its accepted parameters, none refused yet.
func newQuery(c *gin.Context) *query { return &query{middleware.Query(c)} }

// requiredUUID reads a required UUID parameter.
func (q *query) requiredUUID(name string) uuid.UUID {
	if !q.Has(name) {
		q.Fail(name, "is required")
		return uuid.Nil
	}
	if id := q.UUID(name); id != nil {
		return *id
	}
	return uuid.Nil
}

// accountIDs reads the comma-separated account ids; nil when absent.
func (q *query) accountIDs() []uuid.UUID {
	s, ok := q.Get("accountIds")
	if !ok {
		return nil
	}
	parts := strings.Split(s, ",")
	out := make([]uuid.UUID, 0, len(parts))
	for _, p := range parts {
		id, valid := params.ParseUUID(strings.TrimSpace(p))
		if !valid {
			q.Fail("accountIds", "must be a comma-separated list of account ids")
			return nil
		}
		out = append(out, id)
	}
	return out
}

// date reads a YYYY-MM-DD parameter, def when absent (nil def: required).
func (q *query) date(name string, def *domain.Date) *domain.Date {
	if def == nil && !q.Has(name) {
		q.Fail(name, "is required")
		return nil
	}
	return q.Date(name, def)
}

// dateRange reads startDate and endDate; nil defaults make them required.
func (q *query) dateRange(defStart, defEnd *domain.Date) (start, end *domain.Date) {
	start, end = q.date("startDate", defStart), q.date("endDate", defEnd)
	q.CheckRange(start, end)
	return start, end
}

// limit reads limit, 1 to MaxLimit, def when absent.
func (q *query) limit(def int) int { return q.Limit(def) }

// offsetCursor reads a numeric-offset cursor; 0 when absent.
func (q *query) offsetCursor() int {
	s, ok := q.Get("cursor")
	if !ok {
		return 0
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || strconv.Itoa(n) != s {
		q.Fail("cursor", "must be a non-negative integer offset taken from meta.nextPage")
		return 0
	}
	return n
}

// idCursor reads a transaction-id cursor; nil when absent.
func (q *query) idCursor() *uuid.UUID {
	s, ok := q.Get("cursor")
	if !ok {
		return nil
	}
	id, valid := params.ParseUUID(s)
	if !valid {
		q.Fail("cursor", "must be a transaction id taken from meta.nextPage")
		return nil
	}
	return &id
}
