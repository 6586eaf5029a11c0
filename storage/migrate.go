package storage

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/finsync/finsync/migrations"
)

// migrate applies River's migrations and finsync's own, so that one command
// brings a database up to date.
func migrate(ctx context.Context, pool *pgxpool.Pool) error {
	rm, err := rivermigrate.New(riverpgxv5.New(pool), nil)
	if err != nil {
		return fmt.Errorf("river migrator: %w", err)
	}
	if _, err := rm.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("river migrations: %w", err)
	}
	gp, closeDB, err := gooseProvider(pool)
	if err != nil {
		return err
	}
	defer closeDB()
	if _, err := gp.Up(ctx); err != nil {
		return fmt.Errorf("finsync migrations: %w", err)
	}
	return nil
}

// migrationsCurrent reports whether both finsync's and River's migrations are
// fully applied (the readiness check).
func migrationsCurrent(ctx context.Context, pool *pgxpool.Pool) (bool, error) {
	gp, closeDB, err := gooseProvider(pool)
	if err != nil {
		return false, err
	}
	defer closeDB()
	pending, err := gp.HasPending(ctx)
	if err != nil {
		return false, fmt.Errorf("check finsync migrations: %w", err)
	}
	if pending {
		return false, nil
	}
	rm, err := rivermigrate.New(riverpgxv5.New(pool), nil)
	if err != nil {
		return false, fmt.Errorf("river migrator: %w", err)
	}
	res, err := rm.Validate(ctx, nil)
	if err != nil {
		return false, fmt.Errorf("check river migrations: %w", err)
	}
	return res.OK, nil
}

func gooseProvider(pool *pgxpool.Pool) (*goose.Provider, func(), error) {
	db := stdlib.OpenDBFromPool(pool)
	gp, err := goose.NewProvider(goose.DialectPostgres, db, migrations.FS)
	if err != nil {
		db.Close()
		return nil, nil, fmt.Errorf("goose provider: %w", err)
	}
	return gp, func() { db.Close() }, nil
}

// Migrate applies River's migrations and finsync's own to the store's
// primary database (see the package function Migrate).
func (s *Store) Migrate(ctx context.Context) error { return migrate(ctx, s.pool) }

// AreMigrationsCurrent reports whether both finsync's and River's migrations
// are fully applied to the store's primary database (the readiness check).
func (s *Store) AreMigrationsCurrent(ctx context.Context) (bool, error) {
	return migrationsCurrent(ctx, s.pool)
}
