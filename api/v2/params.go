package v2

import (
	"github.com/gin-gonic/gin"

	"github.com/finsync/finsync/api/middleware"
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

// QueryParams are the query parameters each version 2 operation accepts,
// keyed as in the OpenAPI document ("GET /accounts/{accountId}"); any
// other answers 400 BAD_REQUEST naming it (middleware.StrictQuery). A
// handler reading a parameter not listed for its operation panics, and the
// OpenAPI document's tests check that each operation documents exactly
// these. GET /health is exempt: probes may add what they like.
func QueryParams() middleware.Accepted {
	page := []string{"cursor", "limit"}
	with := func(names ...string) []string { return append(names, page...) }
	return middleware.Accepted{
		"GET /openapi.json":                        nil,
		"GET /me":                                  nil,
		"GET /accounts":                            with("bankConnectionId", "status"),
		"POST /accounts":                           nil,
		"GET /accounts/balance-history":            with("bankConnectionId", "bankAccountId", "startDate", "endDate"),
		"GET /accounts/{accountId}":                nil,
		"PATCH /accounts/{accountId}":              nil,
		"DELETE /accounts/{accountId}":             nil,
		"POST /accounts/{accountId}/not-duplicate": nil,
		"GET /transactions":                        transactionQuery(),
		"PATCH /transactions/{id}":                 nil,
		"GET /bank-connections":                    {"status"},
		"GET /categories":                          nil,
		"POST /categories":                         nil,
		"PATCH /categories/{id}":                   nil,
		"GET /category-groups":                     nil,
		"GET /holdings":                            with("bankConnectionId", "bankAccountId"),
		"GET /investment-transactions":             with("bankConnectionId", "bankAccountId", "startDate", "endDate"),
		"GET /transfers":                           with("bankAccountId", "startDate", "endDate"),
		"POST /transfers":                          nil,
		"DELETE /transfers/{id}":                   nil,
		"GET /rules":                               {"includeArchived"},
		"POST /rules":                              nil,
		"POST /rules/preview":                      page,
		"PATCH /rules/{ruleId}":                    nil,
		"DELETE /rules/{ruleId}":                   nil,
		"POST /webhooks":                           nil,
		"GET /webhooks":                            nil,
		"GET /webhooks/{webhookId}":                nil,
		"DELETE /webhooks/{webhookId}":             nil,
		"GET /webhooks/{webhookId}/deliveries":     page,
	}
}

// transactionQuery are the parameters of GET /transactions.
func transactionQuery() []string {
	return []string{
		"bankConnectionId", "bankAccountId", "categoryId", "status", "startDate", "endDate",
		"cursor", "limit", "includeHidden", "includeDuplicates", "transfers",
	}
}

// newQuery returns the request's query as middleware.StrictQuery parsed
// it for the operation: only its accepted parameters, none refused yet.
func newQuery(c *gin.Context) *query { return &query{middleware.Query(c)} }

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
