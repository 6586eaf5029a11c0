package v2

import (
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/finsync/finsync/domain"
)

// Page sizes of the listings.
const (
	DefaultLimit = 50
	MaxLimit     = 250
)

// query reads query parameters, keeping the first error; every message
// starts with the parameter's name.
type query struct {
	v   url.Values
	err error
}

func newQuery(v url.Values) *query { return &query{v: v} }

func (q *query) fail(name, msg string) {
	if q.err == nil {
		q.err = badf("%s: %s", name, msg)
	}
}

// get returns the single value of a parameter, "" when absent.
func (q *query) get(name string) (string, bool) {
	vals, ok := q.v[name]
	if !ok {
		return "", false
	}
	if len(vals) != 1 {
		q.fail(name, "must be given at most once")
		return "", false
	}
	return vals[0], true
}

func (q *query) uuid(name string) *uuid.UUID {
	s, ok := q.get(name)
	if !ok {
		return nil
	}
	id, err := uuid.Parse(s)
	if err != nil || len(s) != 36 {
		q.fail(name, "must be a UUID")
		return nil
	}
	return &id
}

func (q *query) date(name string) *domain.Date {
	s, ok := q.get(name)
	if !ok {
		return nil
	}
	d, err := domain.ParseDate(s)
	if err != nil {
		q.fail(name, "must be a date in YYYY-MM-DD form")
		return nil
	}
	return &d
}

func (q *query) dateRange() (start, end *domain.Date) {
	start, end = q.date("startDate"), q.date("endDate")
	if start != nil && end != nil && end.Before(start.Time) {
		q.fail("endDate", "must not be before startDate")
	}
	return start, end
}

func (q *query) limit() int {
	s, ok := q.get("limit")
	if !ok {
		return DefaultLimit
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > MaxLimit {
		q.fail("limit", "must be an integer between 1 and 250")
		return DefaultLimit
	}
	return n
}

func (q *query) enum(name, def string, allowed ...string) string {
	s, ok := q.get(name)
	if !ok {
		return def
	}
	for _, a := range allowed {
		if s == a {
			return s
		}
	}
	q.fail(name, "must be one of "+strings.Join(allowed, ", "))
	return def
}

func (q *query) boolean(name string) bool {
	s, ok := q.get(name)
	if !ok {
		return false
	}
	switch s {
	case "true":
		return true
	case "false":
		return false
	}
	q.fail(name, "must be true or false")
	return false
}

// filters is the canonical form of the parameters that shape a listing
// (everything but cursor and limit), bound into its cursors.
func (q *query) filters() string {
	keys := make([]string, 0, len(q.v))
	for k := range q.v {
		if k != "cursor" && k != "limit" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(strings.Join(q.v[k], ","))
		b.WriteByte('&')
	}
	return b.String()
}
