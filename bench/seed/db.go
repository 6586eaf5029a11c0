package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/sync/errgroup"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/storage"
)

// recreateDatabase drops and creates the database named in url, through
// the server's "postgres" database.
func recreateDatabase(ctx context.Context, url string) error {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return fmt.Errorf("parse database url: %w", err)
	}
	name := cfg.Database
	if !benchName(name) {
		return fmt.Errorf("refusing to drop database %q: its name does not contain \"bench\" (use -recreate=false)", name)
	}
	cfg.Database = "postgres"
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("connect to the postgres database: %w", err)
	}
	defer conn.Close(context.Background())
	ident := pgx.Identifier{name}.Sanitize()
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+ident+" WITH (FORCE)"); err != nil {
		return fmt.Errorf("drop database %s: %w", name, err)
	}
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+ident); err != nil {
		return fmt.Errorf("create database %s: %w", name, err)
	}
	return nil
}

// seeder writes the benchmark data through one pool.
type seeder struct {
	pool *pgxpool.Pool
	st   *storage.Store
}

func openSeeder(ctx context.Context, url string) (*seeder, error) {
	pool, err := storage.Open(ctx, url, storage.Options{MaxConns: 4, StatementTimeout: time.Hour})
	if err != nil {
		return nil, err
	}
	return &seeder{pool: pool, st: storage.New(pool)}, nil
}

func (s *seeder) close() { s.pool.Close() }

func (s *seeder) migrate(ctx context.Context) error { return s.st.Migrate(ctx) }

// insertOwners copies the users, their connections, accounts, category
// groups and categories in one database transaction.
func (s *seeder) insertOwners(ctx context.Context, users []user) error {
	var userRows, connRows, accountRows, categoryRows [][]any
	for _, u := range users {
		userRows = append(userRows, []any{u.id, u.email, domain.PlanPro, true, true})
		connRows = append(connRows, []any{u.connectionID, u.id, "plaid", "ins_109508", "First Platypus Bank", "active"})
		for j, a := range u.accounts {
			k := accountKinds[j]
			accountRows = append(accountRows, []any{a, u.id, u.connectionID, fmt.Sprintf("pacc_%s", a), "plaid", false,
				"First Platypus Bank", k[2], fmt.Sprintf("%04d", 1000+j*1111), k[0], k[1], "USD"})
		}
		for j, c := range u.categories {
			categoryRows = append(categoryRows, []any{c, u.id, "plaid", fmt.Sprintf("cat_%d", j), categoryNames[j], true})
		}
	}
	copies := []struct {
		table string
		cols  []string
		rows  [][]any
	}{
		{"users", []string{"id", "email", "plan", "plan_active", "storage_mode"}, userRows},
		{"bank_connections", []string{"id", "user_id", "provider", "institution_id", "institution_name", "status"}, connRows},
		{"accounts", []string{"id", "user_id", "bank_connection_id", "provider_account_id", "provider", "manual",
			"institution_name", "name", "mask", "type", "subtype", "currency"}, accountRows},
		{"categories", []string{"id", "user_id", "provider", "provider_id", "name", "read_only"}, categoryRows},
	}
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		for _, c := range copies {
			if _, err := tx.CopyFrom(ctx, pgx.Identifier{c.table}, c.cols, pgx.CopyFromRows(c.rows)); err != nil {
				return fmt.Errorf("copy %s: %w", c.table, err)
			}
		}
		return nil
	})
}

// insertTransactions copies the generated transactions.
func (s *seeder) insertTransactions(ctx context.Context, src *txSource) error {
	n, err := s.pool.CopyFrom(ctx, pgx.Identifier{"transactions"}, transactionColumns, src)
	if err != nil {
		return fmt.Errorf("copy transactions: %w", err)
	}
	if int(n) != src.total {
		return fmt.Errorf("copied %d transactions, want %d", n, src.total)
	}
	return nil
}

// detectTransfers runs the store's transfer detection over each user's
// transactions, as syncs would have run it on them.
func (s *seeder) detectTransfers(ctx context.Context, users []user) error {
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(2)
	for i := range users {
		g.Go(func() error {
			var ids []uuid.UUID
			if err := s.pool.QueryRow(ctx, `SELECT COALESCE(array_agg(id), '{}') FROM transactions WHERE user_id = $1`, users[i].id).Scan(&ids); err != nil {
				return fmt.Errorf("transactions of %s: %w", users[i].id, err)
			}
			_, err := s.st.DetectTransfers(ctx, users[i].id, ids)
			return err
		})
	}
	return g.Wait()
}

// issueKeys issues one API key per user through the store and writes the
// secrets to path, one per line, in user order.
func (s *seeder) issueKeys(ctx context.Context, users []user, path string) error {
	keys := make([]string, len(users))
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(4)
	for i := range users {
		g.Go(func() error {
			ic, err := s.st.IssueCredential(ctx, storage.NewCredential{
				UserID: users[i].id, Kind: storage.CredentialAPIKey, Name: "load benchmark",
			})
			keys[i] = ic.Secret
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	return writeLines(path, keys)
}

func writeLines(path string, lines []string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	w := bufio.NewWriter(f)
	for _, l := range lines {
		if _, err := w.WriteString(l + "\n"); err != nil {
			f.Close()
			return fmt.Errorf("write %s: %w", path, err)
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Close()
}

// analyze vacuums and analyzes the seeded tables, so the benchmark sees
// fresh statistics, set hint bits and a current visibility map.
func (s *seeder) analyze(ctx context.Context) error {
	for _, t := range []string{"users", "credentials", "bank_connections", "accounts", "categories", "transactions", "transfers"} {
		if _, err := s.pool.Exec(ctx, "VACUUM (ANALYZE) "+t); err != nil {
			return fmt.Errorf("vacuum analyze %s: %w", t, err)
		}
	}
	return nil
}
