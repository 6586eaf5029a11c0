// Package storage keeps finsync's data in PostgreSQL and holds all of its
// SQL. Callers see a small set of types and never the driver:
//
//   - Store: every read and single-statement write, one file per resource
//     (accounts.go, transactions.go, rules.go, webhooks.go, ...);
//   - Tx: the writes that must commit together, opened by Store.Atomic,
//     with Enqueue for a River job committed with them;
//   - SyncSession: a provider sync's writes, page batch by page batch
//     (sync_session.go);
//   - Replica: a watched streaming replica that Store routes reads to.
//
// Every query that reads user data is scoped by user and, where a
// credential is limited to some accounts, by that account scope.
// TestFaceNamesNoDriverType keeps driver types out of the exported names.
package storage

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// ErrNotFound is returned when a row does not exist or lies outside the
// caller's scope; the two are deliberately indistinguishable.
var ErrNotFound = errors.New("not found")

// DefaultStatementTimeout bounds every query run through a Store's pool.
const DefaultStatementTimeout = 10 * time.Second

// Store is finsync's PostgreSQL store.
type Store struct {
	pool *pgxpool.Pool
	// replica, when set, serves the reads RouteRead allows (replica.go).
	replica      *Replica
	replicaReads atomic.Uint64
	primaryReads atomic.Uint64
}

// Options tune a pool opened by Open.
type Options struct {
	// MaxConns caps the pool size; 0 keeps pgx's default.
	MaxConns int32
	// StatementTimeout bounds every statement; 0 means DefaultStatementTimeout.
	StatementTimeout time.Duration
	// Lazy skips the connection check: the pool connects on first use, so
	// a database that is down at start does not fail Open.
	Lazy bool
	// Tracer, when set, sees every statement of every connection (the
	// benchmarks time statements with it); nil traces nothing.
	Tracer pgx.QueryTracer
}

// Open connects to PostgreSQL at url with a statement timeout on every query.
func Open(ctx context.Context, url string, opts Options) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("parse database url: %w", err)
	}
	timeout := opts.StatementTimeout
	if timeout == 0 {
		timeout = DefaultStatementTimeout
	}
	cfg.ConnConfig.RuntimeParams["statement_timeout"] = fmt.Sprint(timeout.Milliseconds())
	cfg.ConnConfig.RuntimeParams["timezone"] = "UTC"
	if opts.MaxConns > 0 {
		cfg.MaxConns = opts.MaxConns
	}
	cfg.AfterConnect = registerTypes
	cfg.ConnConfig.Tracer = opts.Tracer
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open database pool: %w", err)
	}
	if opts.Lazy {
		return pool, nil
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("ping database: %w", err)
	}
	return pool, nil
}

// New wraps an open pool.
func New(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

// NewWithReplica wraps an open primary pool and a watched streaming
// replica: reads routed by RouteRead go to the replica, everything else to
// the primary. A nil replica is New.
func NewWithReplica(pool *pgxpool.Pool, replica *Replica) *Store {
	return &Store{pool: pool, replica: replica}
}

// querier is what a storage function needs to run SQL: the pool or a transaction.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// inTx runs fn inside one database transaction, committing when fn returns
// nil and rolling back otherwise. Atomic is its face for callers outside
// storage.
func (s *Store) inTx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, s.pool, fn)
}
