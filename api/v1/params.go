package v1

import (
	"net/url"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/finsync/finsync/domain"
)

// Page sizes of the listings.
const (
	MaxLimit                = 250
	DefaultTransactionLimit = 50
	DefaultInvestmentLimit  = 100
)

// InvestmentWindowDays is how far back /investment-transactions looks when
// no startDate is given.
const InvestmentWindowDays = 30

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

// get returns the single value of a parameter and whether it was given.
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

func parseUUID(s string) (uuid.UUID, bool) {
	id, err := uuid.Parse(s)
	return id, err == nil && len(s) == 36
}

// uuid reads an optional UUID parameter.
func (q *query) uuid(name string) *uuid.UUID {
	s, ok := q.get(name)
	if !ok {
		return nil
	}
	id, valid := parseUUID(s)
	if !valid {
		q.fail(name, "must be a UUID")
		return nil
	}
	return &id
}

// requiredUUID reads a required UUID parameter.
func (q *query) requiredUUID(name string) uuid.UUID {
	if _, ok := q.v[name]; !ok {
		q.fail(name, "is required")
		return uuid.Nil
	}
	if id := q.uuid(name); id != nil {
		return *id
	}
	return uuid.Nil
}

// accountIDs reads the comma-separated account ids; nil when absent.
func (q *query) accountIDs() []uuid.UUID {
	s, ok := q.get("accountIds")
	if !ok {
		return nil
	}
	parts := strings.Split(s, ",")
	out := make([]uuid.UUID, 0, len(parts))
	for _, p := range parts {
		id, valid := parseUUID(strings.TrimSpace(p))
		if !valid {
			q.fail("accountIds", "must be a comma-separated list of account ids")
			return nil
		}
		out = append(out, id)
	}
	return out
}

// date reads a YYYY-MM-DD parameter, def when absent (nil def: required).
func (q *query) date(name string, def *domain.Date) *domain.Date {
	s, ok := q.get(name)
	if !ok {
		if def == nil && q.err == nil {
			q.fail(name, "is required")
		}
		return def
	}
	d, err := domain.ParseDate(s)
	if err != nil {
		q.fail(name, "must be YYYY-MM-DD")
		return def
	}
	return &d
}

// dateRange reads startDate and endDate; nil defaults make them required.
func (q *query) dateRange(defStart, defEnd *domain.Date) (start, end *domain.Date) {
	start, end = q.date("startDate", defStart), q.date("endDate", defEnd)
	if start != nil && end != nil && end.Before(start.Time) {
		q.fail("endDate", "must not be before startDate")
	}
	return start, end
}

// limit reads limit, 1 to MaxLimit, def when absent.
func (q *query) limit(def int) int {
	s, ok := q.get("limit")
	if !ok {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > MaxLimit {
		q.fail("limit", "must be an integer between 1 and 250")
		return def
	}
	return n
}

// offsetCursor reads a numeric-offset cursor; 0 when absent.
func (q *query) offsetCursor() int {
	s, ok := q.get("cursor")
	if !ok {
		return 0
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || strconv.Itoa(n) != s {
		q.fail("cursor", "must be a non-negative integer offset taken from meta.nextPage")
		return 0
	}
	return n
}

// idCursor reads a transaction-id cursor; nil when absent.
func (q *query) idCursor() *uuid.UUID {
	s, ok := q.get("cursor")
	if !ok {
		return nil
	}
	id, valid := parseUUID(s)
	if !valid {
		q.fail("cursor", "must be a transaction id taken from meta.nextPage")
		return nil
	}
	return &id
}
