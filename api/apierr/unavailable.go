package apierr

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/jackc/pgx/v5/pgconn"
)

// CodeServiceUnavailable is the code of a 503: a dependency the API needs
// (the database) is down or restarting. Both API versions use it.
const CodeServiceUnavailable = "SERVICE_UNAVAILABLE"

// UnavailableRetryAfter is the wait a 503 advises in its Retry-After
// header: short, because the API serves again as soon as the database does.
const UnavailableRetryAfter = 5 * time.Second

// UnavailableMessage is the message of a 503.
const UnavailableMessage = "The service is temporarily unavailable: its database cannot be reached. Retry after the number of seconds in the Retry-After header."

// Unavailable writes 503 SERVICE_UNAVAILABLE in the envelope with a
// Retry-After header and aborts the request.
func Unavailable(c *gin.Context) {
	c.Header("Retry-After", strconv.Itoa(int(UnavailableRetryAfter/time.Second)))
	Fail(c, http.StatusServiceUnavailable, CodeServiceUnavailable, UnavailableMessage)
}

// DatabaseUnavailable reports whether err means the database could not be
// reached or went away (a 503 for the client), as opposed to a fault in
// the request's own work (a 500): a failed connection attempt, a refused or
// reset connection, a connection closed under the query,
// the server shutting down or starting up (SQLSTATE 57P01–57P04, class
// 08), too many connections (53300), or a deadline that ran out while
// waiting for the database. Caveat: a query cancelled by statement_timeout
// (57014) counts as a fault of the query, not as an outage; and a request
// whose own client went away (context.Canceled) is neither.
func DatabaseUnavailable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return unavailableState(pgErr.Code)
	}
	var connectErr *pgconn.ConnectError
	var netErr net.Error
	switch {
	case errors.As(err, &connectErr),
		errors.Is(err, pgconn.ErrConnClosed),
		errors.Is(err, io.EOF),
		errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNREFUSED),
		errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.EPIPE),
		errors.Is(err, net.ErrClosed),
		errors.As(err, &netErr),
		pgconn.Timeout(err),
		errors.Is(err, context.DeadlineExceeded):
		return true
	}
	return false
}

// unavailableState reports whether a SQLSTATE says the server cannot serve
// now: connection exceptions (class 08), operator intervention by shutdown
// or startup (57P01 admin_shutdown, 57P02 crash_shutdown, 57P03
// cannot_connect_now, 57P04 database_dropped), too many connections.
func unavailableState(code string) bool {
	return strings.HasPrefix(code, "08") || strings.HasPrefix(code, "57P0") || code == "53300"
}
