package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
)

// ErrStatementTimeout marks an error of a statement the database cancelled
// because it ran past the statement timeout (SQLSTATE 57014). Caveat: only
// the methods whose documentation says so mark it.
var ErrStatementTimeout = errors.New("statement timeout")

// markTimeout wraps err with ErrStatementTimeout when the database
// cancelled the statement (57014); other errors are returned as they are.
func markTimeout(err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "57014" {
		return fmt.Errorf("%w: %w", ErrStatementTimeout, err)
	}
	return err
}

// Unavailable reports whether err means the database could not be reached
// or went away: an outage to wait out (a 503 for an API client, a retry
// for a job), not a fault in the work itself. That is a failed connection
// attempt, a refused or reset connection, a connection closed under the
// query, the server shutting down or starting up (SQLSTATE 57P01-57P04,
// class 08), too many connections (53300), or a deadline that ran out
// while waiting for the database. Caveats: a query cancelled by
// statement_timeout (57014) and a connection refused for bad credentials
// or a missing database count as faults, not outages; a caller that went
// away (context.Canceled) is neither.
func Unavailable(err error) bool {
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
