package middleware

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/finsync/finsync/api/apierr"
	"github.com/finsync/finsync/api/params"
)

// queryKey is the gin context key of the query StrictQuery parsed.
const queryKey = "finsync.query"

// codeBadRequest is the envelope code of a refused query, the same in both
// API versions.
const codeBadRequest = "BAD_REQUEST"

// Accepted maps each operation of an API version, written as in its
// OpenAPI document ("GET /accounts/{accountId}", relative to the version's
// prefix), to the query parameters it accepts; an operation that accepts
// none maps to an empty list. It is the one declaration the router, the
// handlers' reads (params.Parse) and the documents' tests agree on.
type Accepted map[string][]string

// StrictQuery parses the query string of each request to an operation of
// accepted (prefix is the version's path prefix, "/v2") and answers 400
// BAD_REQUEST in the endpoint envelope when it does not decode or names a
// parameter the operation does not accept; otherwise it hands the parsed
// query to the handler (Query). A matched route missing from accepted
// answers 500: CheckAccepted, run when the routes are registered, rules
// that out.
func StrictQuery(prefix string, accepted Accepted) gin.HandlerFunc {
	byRoute := make(map[string][]string, len(accepted))
	for op, names := range accepted {
		byRoute[ginRoute(prefix, op)] = names
	}
	return func(c *gin.Context) {
		names, ok := byRoute[c.Request.Method+" "+c.FullPath()]
		if !ok {
			_ = c.Error(fmt.Errorf("strict query: %s %s has no declared query parameters", c.Request.Method, c.FullPath()))
			apierr.Fail(c, http.StatusInternalServerError, "INTERNAL_ERROR", "Internal server error")
			return
		}
		q := params.Parse(c.Request.URL.RawQuery, names...)
		if err := q.Err(); err != nil {
			apierr.Fail(c, http.StatusBadRequest, codeBadRequest, err.Error())
			return
		}
		c.Set(queryKey, q)
		c.Next()
	}
}

// Query returns the query StrictQuery parsed for this request. It panics
// when StrictQuery did not run: a handler that reads its query must be
// registered behind it.
func Query(c *gin.Context) *params.Values {
	q, ok := c.Get(queryKey)
	if !ok {
		panic("middleware: " + c.Request.Method + " " + c.FullPath() + " reads its query without StrictQuery")
	}
	return q.(*params.Values)
}

// CheckAccepted returns an error unless the engine's routes under prefix,
// but the exempt paths (relative to prefix), are exactly the operations of
// accepted: a route registered without a declaration, or a declaration no
// route serves, is a mistake to catch when the API is assembled.
func CheckAccepted(routes gin.RoutesInfo, prefix string, accepted Accepted, exempt ...string) error {
	declared := make(map[string]bool, len(accepted))
	for op := range accepted {
		declared[ginRoute(prefix, op)] = false
	}
	var problems []string
	for _, r := range routes {
		if !strings.HasPrefix(r.Path, prefix+"/") || slices.Contains(exempt, strings.TrimPrefix(r.Path, prefix)) {
			continue
		}
		key := r.Method + " " + r.Path
		if _, ok := declared[key]; !ok {
			problems = append(problems, key+" has no declared query parameters")
			continue
		}
		declared[key] = true
	}
	for key, served := range declared {
		if !served {
			problems = append(problems, key+" is declared but not routed")
		}
	}
	if len(problems) > 0 {
		slices.Sort(problems)
		return fmt.Errorf("query parameter declarations: %s", strings.Join(problems, "; "))
	}
	return nil
}

// ginRoute turns "GET /accounts/{accountId}" into gin's
// "GET /v2/accounts/:accountId".
func ginRoute(prefix, op string) string {
	method, path, _ := strings.Cut(op, " ")
	segments := strings.Split(path, "/")
	for i, s := range segments {
		if strings.HasPrefix(s, "{") && strings.HasSuffix(s, "}") {
			segments[i] = ":" + s[1:len(s)-1]
		}
	}
	return method + " " + prefix + strings.Join(segments, "/")
}
