package storage

import (
	"context"
	"fmt"
	"net/url"
	"time"

	"github.com/jackc/pgx/v5"
)

// PingURL connects once to the database at dsn and disconnects, within 3
// seconds at most: whether a server is there and accepts the URL's
// credentials. It opens no pool.
func PingURL(ctx context.Context, dsn string) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	if err := conn.Close(ctx); err != nil {
		return fmt.Errorf("disconnect: %w", err)
	}
	return nil
}

// EnsureDatabase creates the named database on the server at serverURL
// (a URL naming any database there) unless it exists, and returns
// serverURL with its database replaced by name. Caveat: two callers racing
// to create the same database may see one fail with "already exists".
func EnsureDatabase(ctx context.Context, serverURL, name string) (string, error) {
	conn, err := pgx.Connect(ctx, serverURL)
	if err != nil {
		return "", fmt.Errorf("connect to %s: %w", serverURL, err)
	}
	defer conn.Close(ctx)
	var exists bool
	if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, name).Scan(&exists); err != nil {
		return "", fmt.Errorf("look up database %s: %w", name, err)
	}
	if !exists {
		if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
			return "", fmt.Errorf("create database %s: %w", name, err)
		}
	}
	u, err := url.Parse(serverURL)
	if err != nil {
		return "", fmt.Errorf("parse %s: %w", serverURL, err)
	}
	u.Path = "/" + name
	return u.String(), nil
}
