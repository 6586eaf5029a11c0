package apierr_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/finsync/finsync/api/apierr"
)

// refusedConnect is the error of a real connection attempt to a port
// nothing listens on.
func refusedConnect(t *testing.T) error {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	_, err = pgx.Connect(context.Background(), fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?connect_timeout=2", port))
	if err == nil {
		t.Fatal("connected to a closed port")
	}
	return err
}

func TestDatabaseUnavailable(t *testing.T) {
	expired, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"connection refused", fmt.Errorf("list accounts: %w", refusedConnect(t)), true},
		{"admin shutdown", &pgconn.PgError{Code: "57P01"}, true},
		{"crash shutdown", &pgconn.PgError{Code: "57P02"}, true},
		{"starting up", &pgconn.PgError{Code: "57P03"}, true},
		{"connection failure", &pgconn.PgError{Code: "08006"}, true},
		{"too many connections", &pgconn.PgError{Code: "53300"}, true},
		{"conn closed", fmt.Errorf("query: %w", pgconn.ErrConnClosed), true},
		{"deadline", fmt.Errorf("acquire: %w", expired.Err()), true},
		{"unique violation", &pgconn.PgError{Code: "23505"}, false},
		{"numeric overflow", &pgconn.PgError{Code: "22003"}, false},
		{"statement timeout", &pgconn.PgError{Code: "57014"}, false},
		{"no rows", fmt.Errorf("get: %w", pgx.ErrNoRows), false},
		{"client gone", fmt.Errorf("query: %w", context.Canceled), false},
		{"a bug", errors.New("nil map"), false},
		{"nil", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := apierr.DatabaseUnavailable(tt.err); got != tt.want {
				t.Errorf("DatabaseUnavailable(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}

func TestUnavailableWritesEnvelopeAndRetryAfter(t *testing.T) {
	gin.SetMode(gin.ReleaseMode)
	rec := httptest.NewRecorder()
	c, _ := gin.CreateTestContext(rec)
	apierr.Unavailable(c)
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") != "5" {
		t.Fatalf("status %d, Retry-After %q", rec.Code, rec.Header().Get("Retry-After"))
	}
	want := `{"error":{"code":"SERVICE_UNAVAILABLE","message":"` + apierr.UnavailableMessage + `"}}`
	if rec.Body.String() != want {
		t.Fatalf("body %s, want %s", rec.Body, want)
	}
	if !c.IsAborted() {
		t.Fatal("request not aborted")
	}
}
