// Package storagetest gives each test package its own PostgreSQL database,
// created from a migrated template so that packages can run in parallel
// against the real server.
package storagetest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/finsync/finsync/migrations"
	"github.com/finsync/finsync/storage"
)

// DefaultAdminURL is used when FINSYNC_TEST_DATABASE_URL is unset.
const DefaultAdminURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// AdminURL returns the URL of a database on the test server from which
// databases can be created.
func AdminURL() string {
	if u := os.Getenv("FINSYNC_TEST_DATABASE_URL"); u != "" {
		return u
	}
	return DefaultAdminURL
}

// NewDB creates a fresh, fully migrated database for the test and drops it
// when the test ends. It returns the pool and the database's URL.
func NewDB(tb testing.TB) (*pgxpool.Pool, string) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dbURL, err := CreateDB(ctx)
	if err != nil {
		tb.Fatalf("create test database: %v", err)
	}
	pool, err := storage.Open(ctx, dbURL, storage.Options{MaxConns: 16})
	if err != nil {
		tb.Fatalf("open test database: %v", err)
	}
	tb.Cleanup(func() {
		pool.Close()
		if err := DropDB(context.Background(), dbURL); err != nil {
			tb.Logf("drop test database: %v", err)
		}
	})
	return pool, dbURL
}

// CreateDB creates a new database from the migrated template and returns its URL.
func CreateDB(ctx context.Context) (string, error) {
	admin, err := pgx.Connect(ctx, AdminURL())
	if err != nil {
		return "", fmt.Errorf("connect to test server: %w", err)
	}
	defer admin.Close(ctx)
	tmpl, err := ensureTemplate(ctx, admin)
	if err != nil {
		return "", err
	}
	name := "finsync_test_" + randomSuffix()
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name+" TEMPLATE "+tmpl); err != nil {
		return "", fmt.Errorf("create database %s: %w", name, err)
	}
	return withDatabase(AdminURL(), name)
}

// DropDB drops a database created by CreateDB.
func DropDB(ctx context.Context, dbURL string) error {
	u, err := url.Parse(dbURL)
	if err != nil {
		return fmt.Errorf("parse %s: %w", dbURL, err)
	}
	admin, err := pgx.Connect(ctx, AdminURL())
	if err != nil {
		return fmt.Errorf("connect to test server: %w", err)
	}
	defer admin.Close(ctx)
	name := u.Path[1:]
	_, err = admin.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	return err
}

// ensureTemplate creates, once per schema version, a migrated template
// database; concurrent test packages serialise on an advisory lock.
func ensureTemplate(ctx context.Context, admin *pgx.Conn) (string, error) {
	sum, err := schemaHash()
	if err != nil {
		return "", err
	}
	tmpl := "finsync_tmpl_" + sum
	if _, err := admin.Exec(ctx, "SELECT pg_advisory_lock(4242001)"); err != nil {
		return "", fmt.Errorf("lock template: %w", err)
	}
	defer admin.Exec(context.Background(), "SELECT pg_advisory_unlock(4242001)") //nolint:errcheck
	var exists bool
	if err := admin.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", tmpl).Scan(&exists); err != nil {
		return "", fmt.Errorf("look up template: %w", err)
	}
	if exists {
		return tmpl, nil
	}
	building := tmpl + "_build"
	_, _ = admin.Exec(ctx, "DROP DATABASE IF EXISTS "+building+" WITH (FORCE)")
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+building); err != nil {
		return "", fmt.Errorf("create template: %w", err)
	}
	u, err := withDatabase(AdminURL(), building)
	if err != nil {
		return "", err
	}
	pool, err := storage.Open(ctx, u, storage.Options{MaxConns: 2})
	if err != nil {
		return "", err
	}
	err = storage.New(pool).Migrate(ctx)
	pool.Close()
	if err != nil {
		return "", fmt.Errorf("migrate template: %w", err)
	}
	if _, err := admin.Exec(ctx, "ALTER DATABASE "+building+" RENAME TO "+tmpl); err != nil {
		return "", fmt.Errorf("rename template: %w", err)
	}
	return tmpl, nil
}

// schemaHash names the template after the migration files' content, so a
// changed schema gets a new template.
func schemaHash() (string, error) {
	h := sha256.New()
	err := fs.WalkDir(migrations.FS, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(migrations.FS, path)
		if err != nil {
			return err
		}
		h.Write([]byte(path))
		h.Write(b)
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("hash migrations: %w", err)
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

func withDatabase(base, name string) (string, error) {
	u, err := url.Parse(base)
	if err != nil {
		return "", fmt.Errorf("parse %s: %w", base, err)
	}
	u.Path = "/" + name
	return u.String(), nil
}

func randomSuffix() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
