package storage_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/finsync/finsync/storage"
	"github.com/finsync/finsync/storage/storagetest"
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

// missingDatabase is the error of a real connection to a database that does
// not exist on the test server.
func missingDatabase(t *testing.T) error {
	t.Helper()
	u, err := url.Parse(storagetest.AdminURL())
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/finsync_no_such_database"
	_, err = pgx.Connect(context.Background(), u.String())
	if err == nil {
		t.Fatal("connected to a missing database")
	}
	return err
}

func TestUnavailable(t *testing.T) {
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
		{"missing database", missingDatabase(t), false},
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
			if got := storage.Unavailable(tt.err); got != tt.want {
				t.Errorf("Unavailable(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}
