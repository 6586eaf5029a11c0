// Package params reads and checks API input for both API versions: query
// parameters (each reader keeps the first error, and every message starts
// with the parameter's name: "limit: must be an integer between 1 and 250";
// a parameter the operation does not accept is named in quotes instead:
// `unknown query parameter "acount_id"; accepted: ...`), and the limits
// every string and number of a request obeys.
package params

import (
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/finsync/finsync/domain"
)

// MaxLimit is the largest page size of every listing.
const MaxLimit = 250

// Error is an invalid parameter or body, with the message the client sees.
type Error struct{ Msg string }

// Error implements error.
func (e *Error) Error() string { return e.Msg }

// Errorf returns an *Error with a formatted message.
func Errorf(format string, args ...any) error { return &Error{Msg: fmt.Sprintf(format, args...)} }

// Values reads query parameters, keeping the first error.
type Values struct {
	v        url.Values
	accepted []string
	err      error
}

// Parse reads the raw query string of a request to an operation that
// accepts the named parameters and no others. A query string that does not
// decode (a malformed percent-escape, a semicolon separator) is an error
// recorded at once, never a parameter silently dropped; so is a parameter
// not accepted, named with the accepted ones (Unknown). (Every value read
// is then parsed strictly, so a NUL character or an overlong value fails
// its reader.) Caveat: reading a parameter that is not accepted panics:
// the operation's declaration must list every parameter its handler reads.
func Parse(rawQuery string, accepted ...string) *Values {
	v, err := url.ParseQuery(rawQuery)
	q := &Values{v: v, accepted: accepted}
	if err != nil {
		q.err = Errorf("query: cannot be decoded: %s", queryProblem(err))
		return q
	}
	q.err = Unknown(v, accepted)
	return q
}

// maxNameShown is the longest parameter name quoted back in a message, in
// bytes; a longer one is cut (an unknown name may be megabytes long).
const maxNameShown = 64

// Unknown returns an *Error naming a parameter of v that is not among
// accepted, with the accepted ones in their order
// (`unknown query parameter "acount_id"; accepted: bankAccountId, limit`),
// or nil when every parameter is accepted. Of several unknown names it
// names the first in byte order, so the message does not vary between
// requests.
func Unknown(v url.Values, accepted []string) error {
	var unknown []string
	for name := range v {
		if !contains(accepted, name) {
			unknown = append(unknown, name)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	sort.Strings(unknown)
	name := unknown[0]
	if len(name) > maxNameShown {
		name = strings.ToValidUTF8(name[:maxNameShown], "") + "..."
	}
	if len(accepted) == 0 {
		return Errorf("unknown query parameter %s; this operation accepts no query parameters", strconv.Quote(name))
	}
	return Errorf("unknown query parameter %s; accepted: %s", strconv.Quote(name), strings.Join(accepted, ", "))
}

// queryProblem words a url.ParseQuery error for a client.
func queryProblem(err error) string {
	var esc url.EscapeError
	if errors.As(err, &esc) {
		return "invalid percent-encoding " + strconv.Quote(string(esc))
	}
	return strings.TrimPrefix(err.Error(), "invalid ")
}

// Err returns the first error met, or nil.
func (q *Values) Err() error { return q.err }

// Fail records "<name>: <msg>" unless an error was already recorded.
func (q *Values) Fail(name, msg string) {
	if q.err == nil {
		q.err = Errorf("%s: %s", name, msg)
	}
}

// Has reports whether the parameter was given. It panics when name is not
// accepted (see Parse).
func (q *Values) Has(name string) bool {
	q.mustAccept(name)
	_, ok := q.v[name]
	return ok
}

// Get returns the single value of a parameter and whether it was given; a
// parameter given twice is an error. It panics when name is not accepted
// (see Parse).
func (q *Values) Get(name string) (string, bool) {
	q.mustAccept(name)
	vals, ok := q.v[name]
	if !ok {
		return "", false
	}
	if len(vals) != 1 {
		q.Fail(name, "must be given at most once")
		return "", false
	}
	return vals[0], true
}

// mustAccept panics when a handler reads a parameter its operation does not
// declare: a request naming it would have been refused as unknown, so the
// read could never see a value, and the declaration has drifted from the
// handler.
func (q *Values) mustAccept(name string) {
	if !contains(q.accepted, name) {
		panic(fmt.Sprintf("params: query parameter %q is read but not among the operation's accepted ones %q", name, q.accepted))
	}
}

// ParseUUID parses the canonical 36-character form only.
func ParseUUID(s string) (uuid.UUID, bool) {
	id, err := uuid.Parse(s)
	return id, err == nil && len(s) == 36
}

// UUID reads an optional UUID parameter.
func (q *Values) UUID(name string) *uuid.UUID {
	s, ok := q.Get(name)
	if !ok {
		return nil
	}
	id, valid := ParseUUID(s)
	if !valid {
		q.Fail(name, "must be a UUID")
		return nil
	}
	return &id
}

// Date reads a YYYY-MM-DD parameter; def when absent.
func (q *Values) Date(name string, def *domain.Date) *domain.Date {
	s, ok := q.Get(name)
	if !ok {
		return def
	}
	d, err := domain.ParseDate(s)
	if err != nil {
		q.Fail(name, "must be YYYY-MM-DD")
		return def
	}
	return &d
}

// CheckRange fails when end is before start.
func (q *Values) CheckRange(start, end *domain.Date) {
	if start != nil && end != nil && end.Before(start.Time) {
		q.Fail("endDate", "must not be before startDate")
	}
}

// Limit reads the page size, 1 to MaxLimit; def when absent.
func (q *Values) Limit(def int) int {
	s, ok := q.Get("limit")
	if !ok {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > MaxLimit {
		q.Fail("limit", "must be an integer between 1 and 250")
		return def
	}
	return n
}

// Enum reads one of the allowed values; def when absent.
func (q *Values) Enum(name, def string, allowed ...string) string {
	s, ok := q.Get(name)
	if !ok {
		return def
	}
	for _, a := range allowed {
		if s == a {
			return s
		}
	}
	q.Fail(name, "must be one of "+strings.Join(allowed, ", "))
	return def
}

// Bool reads true or false; false when absent.
func (q *Values) Bool(name string) bool {
	s, ok := q.Get(name)
	if !ok {
		return false
	}
	switch s {
	case "true":
		return true
	case "false":
		return false
	}
	q.Fail(name, "must be true or false")
	return false
}

// Canonical is a canonical form of every parameter except those skipped
// (such as cursor and limit), for binding cursors to the filters.
func (q *Values) Canonical(skip ...string) string {
	keys := make([]string, 0, len(q.v))
	for k := range q.v {
		if !contains(skip, k) {
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

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
