package storage

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"
)

// Connect opens a pool on the database at url with Open's settings (the
// statement timeout, UTC, opts.MaxConns, opts.Lazy) and returns the store
// over it. The caller closes it with Close. Caveat: a Store made by New
// around a pool the caller opened is closed by its opener, not by Close's
// caller.
func Connect(ctx context.Context, url string, opts Options) (*Store, error) {
	pool, err := Open(ctx, url, opts)
	if err != nil {
		return nil, err
	}
	return New(pool), nil
}

// Close closes the store's primary pool, waiting for connections in use to
// be released. A read replica's pool is closed by the replica's Close.
func (s *Store) Close() { s.pool.Close() }

// Ping checks that the primary database answers (the readiness check).
func (s *Store) Ping(ctx context.Context) error {
	if err := s.pool.Ping(ctx); err != nil {
		return fmt.Errorf("ping database: %w", err)
	}
	return nil
}

// PoolStats is a snapshot of the primary pool's connections.
type PoolStats struct {
	// Acquired is the connections in use.
	Acquired int32
	// Idle is the open connections not in use.
	Idle int32
	// Total is all open connections (and ones being opened).
	Total int32
	// EmptyAcquires counts, since the pool opened, acquires that had to
	// wait for a connection.
	EmptyAcquires int64
	// Max is the pool's size (FINSYNC_DB_MAX_CONNS or the command's default).
	Max int32
}

// PoolStats returns the primary pool's statistics; the fields are read one
// after another, so they need not add up exactly under load.
func (s *Store) PoolStats() PoolStats {
	st := s.pool.Stat()
	return PoolStats{Acquired: st.AcquiredConns(), Idle: st.IdleConns(), Total: st.TotalConns(), EmptyAcquires: st.EmptyAcquireCount(), Max: st.MaxConns()}
}

// ValidateURL reports whether s is a PostgreSQL connection string (URL or
// key=value form) that Connect accepts. It does not connect.
func ValidateURL(s string) error {
	if _, err := pgconn.ParseConfig(s); err != nil {
		return fmt.Errorf("parse database url: %w", err)
	}
	return nil
}

// ConnectReplica opens a lazily connecting pool (Open's settings, of
// opts.MaxConns connections) on the
// streaming replica at url and watches it against the store's primary; its
// Run must be running for reads ever to go to it. The caller closes it
// with the replica's Close after the stores using it are done.
func (s *Store) ConnectReplica(ctx context.Context, url string, opts ReplicaOptions) (*Replica, error) {
	pool, err := Open(ctx, url, Options{Lazy: true, MaxConns: opts.MaxConns})
	if err != nil {
		return nil, err
	}
	return NewReplica(s.pool, pool, opts), nil
}

// WithReplica returns a store over the same primary pool whose reads
// routed by RouteRead go to rep. The receiver is unchanged; a nil rep
// gives a store without a replica.
func (s *Store) WithReplica(rep *Replica) *Store { return NewWithReplica(s.pool, rep) }

// Close closes the replica's pool; the primary's is left to its store.
func (r *Replica) Close() { r.pool.Close() }
