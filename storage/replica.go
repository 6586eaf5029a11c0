package storage

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Defaults of ReplicaOptions.
const (
	// DefaultReplicaMaxLag is the lag past which a replica is bypassed.
	DefaultReplicaMaxLag = 5 * time.Second
	// DefaultReplicaInterval is how often the replica's position is probed.
	DefaultReplicaInterval = 100 * time.Millisecond
	// DefaultReplicaStaleAfter is how old the last good probe may be before
	// the replica is bypassed (a replica that hangs rather than refuses).
	DefaultReplicaStaleAfter = time.Second
)

// ReplicaOptions tune a Replica; zero fields take the defaults.
type ReplicaOptions struct {
	// MaxLag: reads go to the replica only while it holds every change
	// committed on the primary more than MaxLag ago.
	MaxLag time.Duration
	// Interval between probes of the replica's replay position.
	Interval time.Duration
	// StaleAfter: with no good probe for this long the replica is bypassed.
	StaleAfter time.Duration
	// MaxConns caps the replica's pool (Store.ConnectReplica); 0 keeps
	// pgx's default.
	MaxConns int32
	// Log receives state changes; nil discards them.
	Log *slog.Logger
}

// ReplicaStatus is what the last probe learnt of the replica.
type ReplicaStatus struct {
	// Usable reports whether reads may go to the replica now.
	Usable bool
	// Lag is an upper bound on how far behind the primary the replica was
	// at the last probe (to within one probe interval); math.MaxInt64 when
	// unknown or beyond the samples kept.
	Lag time.Duration
	// ReplayLSN is the WAL position the replica had replayed.
	ReplayLSN int64
	// ProbedAt is when the last good probe ended; zero if none.
	ProbedAt time.Time
}

// lsnSample is the primary's WAL position at a moment.
type lsnSample struct {
	at  time.Time
	lsn int64
}

// Replica watches a PostgreSQL streaming replica: how far it has replayed
// the primary's WAL, in bytes and in time. The guarantee: Status().Usable
// means the replica answered a probe less than StaleAfter ago and then held
// every change committed on the primary more than MaxLag (plus one probe
// interval) before. Caveat: it knows nothing of a caller's own writes;
// Store.RouteRead adds that. Safe for concurrent use.
type Replica struct {
	primary *pgxpool.Pool
	pool    *pgxpool.Pool
	opts    ReplicaOptions

	mu      sync.Mutex
	samples []lsnSample
	status  ReplicaStatus
}

// NewReplica watches replica, a streaming standby of primary. Run must be
// running for the replica ever to be used.
func NewReplica(primary, replica *pgxpool.Pool, opts ReplicaOptions) *Replica {
	if opts.MaxLag <= 0 {
		opts.MaxLag = DefaultReplicaMaxLag
	}
	if opts.Interval <= 0 {
		opts.Interval = DefaultReplicaInterval
	}
	if opts.StaleAfter <= 0 {
		opts.StaleAfter = DefaultReplicaStaleAfter
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	return &Replica{primary: primary, pool: replica, opts: opts, status: ReplicaStatus{Lag: math.MaxInt64}}
}

// MaxLag is the lag bound in force.
func (r *Replica) MaxLag() time.Duration { return r.opts.MaxLag }

// Run probes the replica every Interval until ctx ends.
func (r *Replica) Run(ctx context.Context) {
	t := time.NewTicker(r.opts.Interval)
	defer t.Stop()
	for {
		r.probe(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// probe samples the primary's WAL position, then the replica's replay
// position, and updates the status.
func (r *Replica) probe(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, r.opts.StaleAfter)
	defer cancel()
	start := time.Now()
	var primary int64
	if err := r.primary.QueryRow(ctx, `SELECT (pg_current_wal_lsn() - '0/0'::pg_lsn)::bigint`).Scan(&primary); err != nil {
		r.fail(fmt.Errorf("primary wal position: %w", err))
		return
	}
	var replay *int64
	if err := r.pool.QueryRow(ctx, `SELECT (pg_last_wal_replay_lsn() - '0/0'::pg_lsn)::bigint`).Scan(&replay); err != nil {
		r.fail(fmt.Errorf("replica replay position: %w", err))
		return
	}
	if replay == nil {
		r.fail(errors.New("replica replay position: the read database is not a standby in recovery"))
		return
	}
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.samples = append(r.samples, lsnSample{at: start, lsn: primary})
	// Keep the samples of the last 2×MaxLag: enough to measure any lag
	// that is still within the bound.
	keep := 0
	for keep < len(r.samples)-1 && now.Sub(r.samples[keep].at) > 2*r.opts.MaxLag {
		keep++
	}
	r.samples = r.samples[keep:]
	lag := time.Duration(math.MaxInt64)
	for i := len(r.samples) - 1; i >= 0; i-- {
		if r.samples[i].lsn <= *replay {
			// Everything the primary had written at samples[i].at is replayed.
			if i == len(r.samples)-1 {
				lag = 0
			} else {
				lag = now.Sub(r.samples[i+1].at)
			}
			break
		}
	}
	was := r.status.Usable
	r.status = ReplicaStatus{Usable: lag <= r.opts.MaxLag, Lag: lag, ReplayLSN: *replay, ProbedAt: now}
	if was != r.status.Usable {
		if r.status.Usable {
			r.opts.Log.Info("read replica in use", "lag", lag.String())
		} else {
			r.opts.Log.Warn("read replica bypassed: lag past the bound", "max_lag", r.opts.MaxLag.String())
		}
	}
}

// fail marks the replica unusable after a failed probe or read.
func (r *Replica) fail(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.status.Usable {
		r.opts.Log.Warn("read replica bypassed", "error", err)
	}
	r.status.Usable = false
}

// Status returns the last probe's findings; Usable is false when that
// probe is older than StaleAfter.
func (r *Replica) Status() ReplicaStatus {
	r.mu.Lock()
	st := r.status
	r.mu.Unlock()
	if st.Usable && time.Since(st.ProbedAt) > r.opts.StaleAfter {
		st.Usable = false
	}
	return st
}

// replicaKey marks a context whose reads may go to the replica.
type replicaKey struct{}

// RouteRead returns the context for a read made on behalf of userID: marked
// for the replica when one is configured, Usable, and has replayed past the
// user's last recorded write (RecordWrite); ctx unchanged otherwise, so the
// read goes to the primary. Cost: one indexed primary look-up of the
// user's write position per call while the replica is usable. Caveat: only
// writes recorded with RecordWrite are waited for.
func (s *Store) RouteRead(ctx context.Context, userID uuid.UUID) context.Context {
	if s.replica == nil {
		return ctx
	}
	st := s.replica.Status()
	if !st.Usable {
		return ctx
	}
	var written int64
	err := s.pool.QueryRow(ctx, `SELECT (lsn - '0/0'::pg_lsn)::bigint FROM user_write_positions WHERE user_id = $1`, userID).Scan(&written)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return ctx
	}
	if written > st.ReplayLSN {
		return ctx
	}
	return context.WithValue(ctx, replicaKey{}, true)
}

// RecordWrite records, for userID, the primary's WAL insert position after
// a write acknowledged to the user, so that RouteRead sends the user's
// reads to the primary until the replica has replayed it. It must run after
// the write commits and before the answer leaves. Without a replica it
// does nothing. Committed with synchronous_commit off: visible to every
// process at once, not waiting for the WAL flush.
func (s *Store) RecordWrite(ctx context.Context, userID uuid.UUID) error {
	if s.replica == nil {
		return nil
	}
	_, err := s.pool.Exec(ctx, `WITH off AS (SELECT set_config('synchronous_commit', 'off', true))
		INSERT INTO user_write_positions (user_id, lsn, written_at)
		SELECT $1, pg_current_wal_insert_lsn(), now() FROM off
		ON CONFLICT (user_id) DO UPDATE SET lsn = greatest(user_write_positions.lsn, excluded.lsn), written_at = excluded.written_at`, userID)
	if err != nil {
		return fmt.Errorf("record write position: %w", err)
	}
	return nil
}

// GetReadCounts returns how many reads went to the replica and to the primary
// through the routed read methods since the Store was made.
func (s *Store) GetReadCounts() (replica, primary uint64) {
	return s.replicaReads.Load(), s.primaryReads.Load()
}

// Replica returns the watched read replica, or nil.
func (s *Store) Replica() *Replica { return s.replica }

// reader is the querier for a read: the replica when ctx was marked by
// RouteRead, falling back to the primary when the replica cannot be
// reached; the primary otherwise.
func (s *Store) reader(ctx context.Context) querier {
	if s.replica != nil && ctx.Value(replicaKey{}) != nil {
		s.replicaReads.Add(1)
		return fallbackQuerier{s: s}
	}
	s.primaryReads.Add(1)
	return s.pool
}

// recoveryConflict is the SQLSTATE of a standby query cancelled because it
// conflicted with WAL replay (serialization_failure on a hot standby).
const recoveryConflict = "40001"

// fallbackQuerier runs a read on the replica and, when the replica is
// unreachable (Unavailable), again on the primary, marking the replica
// unusable until its next good probe; a read the standby cancelled for a
// recovery conflict is also run again on the primary. Caveat: an error met while reading
// rows after the first is not retried.
type fallbackQuerier struct{ s *Store }

func (f fallbackQuerier) retry(err error) bool {
	if err == nil {
		return false
	}
	var pgErr *pgconn.PgError
	switch {
	case Unavailable(err):
		f.s.replica.fail(err)
	case errors.As(err, &pgErr) && pgErr.Code == recoveryConflict:
		// A query the standby cancelled to go on replaying: the replica
		// is fine, this read alone goes to the primary.
	default:
		return false
	}
	f.s.replicaReads.Add(^uint64(0))
	f.s.primaryReads.Add(1)
	return true
}

func (f fallbackQuerier) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	tag, err := f.s.replica.pool.Exec(ctx, sql, args...)
	if f.retry(err) {
		return f.s.pool.Exec(ctx, sql, args...)
	}
	return tag, err
}

func (f fallbackQuerier) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	rows, err := f.s.replica.pool.Query(ctx, sql, args...)
	if f.retry(err) {
		return f.s.pool.Query(ctx, sql, args...)
	}
	if err != nil {
		return rows, err
	}
	return &fallbackRows{Rows: rows, f: f, ctx: ctx, sql: sql, args: args}, nil
}

// fallbackRows are a replica's rows that, when the replica fails before
// the first row arrives (the query went out on a connection the stopping
// server had closed, and the failure surfaces at the first Next), run the
// query again on the primary and read its rows instead. A failure after a
// row was read is returned as it is.
type fallbackRows struct {
	pgx.Rows
	f        fallbackQuerier
	ctx      context.Context
	sql      string
	args     []any
	started  bool
	replaced bool
}

// Next advances to the next row, from the primary when the replica failed
// before its first row.
func (r *fallbackRows) Next() bool {
	if r.Rows.Next() {
		r.started = true
		return true
	}
	if r.started || r.replaced {
		return false
	}
	r.replaced = true
	err := r.Rows.Err()
	if !r.f.retry(err) {
		return false
	}
	r.Rows.Close()
	rows, qerr := r.f.s.pool.Query(r.ctx, r.sql, r.args...)
	if qerr != nil {
		r.Rows = errRows{Rows: r.Rows, err: qerr}
		return false
	}
	r.Rows = rows
	return r.Next()
}

// errRows are closed rows that report err.
type errRows struct {
	pgx.Rows
	err error
}

func (e errRows) Err() error { return e.err }

func (f fallbackQuerier) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return fallbackRow{f: f, ctx: ctx, sql: sql, args: args}
}

type fallbackRow struct {
	f    fallbackQuerier
	ctx  context.Context
	sql  string
	args []any
}

func (r fallbackRow) Scan(dest ...any) error {
	err := r.f.s.replica.pool.QueryRow(r.ctx, r.sql, r.args...).Scan(dest...)
	if r.f.retry(err) {
		return r.f.s.pool.QueryRow(r.ctx, r.sql, r.args...).Scan(dest...)
	}
	return err
}

// readTx runs fn in one read-only transaction of the given isolation on
// the replica when ctx was marked by RouteRead, else on the primary. fn
// must only read: when the replica cannot be reached, or cancels the
// transaction for a recovery conflict, fn runs again, whole, on the
// primary (and an unreachable replica is marked unusable until its next
// good probe). Caveat: on the replica a repeatable read sees the
// replica's snapshot, within the lag bound and past the user's own
// writes, like every routed read.
func (s *Store) readTx(ctx context.Context, iso pgx.TxIsoLevel, fn func(pgx.Tx) error) error {
	opts := pgx.TxOptions{IsoLevel: iso, AccessMode: pgx.ReadOnly}
	if s.replica == nil || ctx.Value(replicaKey{}) == nil {
		s.primaryReads.Add(1)
		return pgx.BeginTxFunc(ctx, s.pool, opts, fn)
	}
	s.replicaReads.Add(1)
	err := pgx.BeginTxFunc(ctx, s.replica.pool, opts, fn)
	if ctx.Err() == nil && (fallbackQuerier{s: s}).retry(err) {
		return pgx.BeginTxFunc(ctx, s.pool, opts, fn)
	}
	return err
}
