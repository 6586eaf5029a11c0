package storage

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// RateLease asks a user's shared API budget for tokens on behalf of one
// holder (an API process), giving back what its previous lease left unused.
type RateLease struct {
	UserID uuid.UUID
	// Name names the limit, figures included (a changed limit is a new bucket).
	Name string
	// Holder identifies the process; each holder has at most one live lease
	// per bucket, which this call replaces.
	Holder uuid.UUID
	// Capacity is the bucket's size (the limit's count); PerSecond its refill.
	Capacity  int
	PerSecond float64
	// Want is how many tokens to take at most; 0 only gives back.
	Want int
	// Unused is how many tokens of the holder's previous lease go back.
	Unused int
	// Keep is how many tokens of the holder's previous lease it keeps: they
	// move into the new lease (and its expiry) without leaving the bucket
	// again.
	Keep int
	// TTL is how long the new lease may be spent.
	TTL time.Duration
}

// RateGrant is a lease's outcome, in the database's clock.
type RateGrant struct {
	// Granted is how many tokens the holder may spend until Expires.
	Granted int
	// Tokens is what the bucket holds after the grant (fractional).
	Tokens  float64
	Now     time.Time
	Expires time.Time
}

// ensureRateBucketSQL creates the bucket full or, when it exists, locks it,
// so that the lease statement that follows sees every lease committed
// before it.
const ensureRateBucketSQL = `
INSERT INTO rate_limit_buckets (user_id, name, tokens, updated_at)
VALUES ($1, $2, $3, clock_timestamp())
ON CONFLICT (user_id, name) DO UPDATE SET tokens = rate_limit_buckets.tokens`

// leaseRateSQL refills the bucket (up to its capacity minus the live leases
// of other holders and the tokens the holder keeps, $9), takes back the
// holder's unused tokens ($7), grants up to $6 tokens (at most a tenth of
// what is left, at least one), and replaces the holder's lease with the
// granted and kept tokens. Expired leases of other holders are dropped.
const leaseRateSQL = `
WITH b AS (
    SELECT tokens, updated_at, clock_timestamp() AS now
    FROM rate_limit_buckets WHERE user_id = $1 AND name = $2
), held AS (
    SELECT COALESCE(sum(l.tokens), 0)::float8 AS n
    FROM rate_limit_leases l, b
    WHERE l.user_id = $1 AND l.name = $2 AND l.holder <> $3 AND l.expires_at > b.now
), r AS (
    SELECT b.now, LEAST($4::float8 - held.n - $9::int,
        b.tokens + $7::float8 + GREATEST(0, extract(epoch FROM b.now - b.updated_at)::float8) * $5::float8) AS refilled
    FROM b, held
), g AS (
    SELECT now, refilled,
        CASE WHEN refilled >= 1 AND $6::int > 0
            THEN LEAST($6::int, floor(refilled)::int, GREATEST(1, floor(refilled / 10)::int))
            ELSE 0 END AS granted
    FROM r
), upd AS (
    UPDATE rate_limit_buckets SET tokens = GREATEST(0, g.refilled - g.granted), updated_at = g.now
    FROM g WHERE user_id = $1 AND name = $2
), gone AS (
    DELETE FROM rate_limit_leases l USING g
    WHERE l.user_id = $1 AND l.name = $2
      AND ((l.holder <> $3 AND l.expires_at <= g.now) OR (l.holder = $3 AND g.granted + $9::int = 0))
), lease AS (
    INSERT INTO rate_limit_leases (user_id, name, holder, tokens, expires_at)
    SELECT $1, $2, $3, g.granted + $9::int, g.now + make_interval(secs => $8::float8) FROM g WHERE g.granted + $9::int > 0
    ON CONFLICT (user_id, name, holder) DO UPDATE SET tokens = EXCLUDED.tokens, expires_at = EXCLUDED.expires_at
)
SELECT granted, GREATEST(0, refilled - granted), now, now + make_interval(secs => $8::float8) FROM g`

// LeaseRateTokens takes tokens from a user's shared API budget in one
// round trip: the statements go as one pipelined batch, which
// PostgreSQL runs as one implicit transaction (the first statement's row
// lock serialises every lease of the bucket; the second, in read committed,
// sees every lease committed before it). Guarantee: the tokens the bucket holds
// plus every live lease never exceed Capacity, so all holders together
// never spend more than one token bucket of the limit allows. Caveat: a
// holder that dies keeps its lease's tokens out of the bucket until the
// lease expires (TTL).
func (s *Store) LeaseRateTokens(ctx context.Context, r RateLease) (RateGrant, error) {
	var g RateGrant
	b := &pgx.Batch{}
	// A lease need not wait for its commit to reach the disk: a database
	// crash may forget the last few hundred milliseconds of leases (a
	// budget briefly larger), never a user's data.
	b.Queue(`SELECT set_config('synchronous_commit', 'off', true)`)
	b.Queue(ensureRateBucketSQL, r.UserID, r.Name, float64(r.Capacity))
	b.Queue(leaseRateSQL, r.UserID, r.Name, r.Holder, float64(r.Capacity), r.PerSecond, r.Want, float64(r.Unused), r.TTL.Seconds(), r.Keep).
		QueryRow(func(row pgx.Row) error {
			return row.Scan(&g.Granted, &g.Tokens, &g.Now, &g.Expires)
		})
	if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
		return RateGrant{}, fmt.Errorf("lease %s tokens of user %s: %w", r.Name, r.UserID, err)
	}
	return g, nil
}

// PurgeRateBuckets deletes users' buckets (and their leases) and client
// addresses' authentication failure budgets untouched since before: a
// bucket idle for longer than its period is full, exactly like one created
// anew.
func (s *Store) PurgeRateBuckets(ctx context.Context, before time.Time) (int64, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM rate_limit_buckets WHERE updated_at < $1`, before)
	if err != nil {
		return 0, fmt.Errorf("purge rate buckets: %w", err)
	}
	failures, err := s.pool.Exec(ctx, `DELETE FROM provider_rate_buckets WHERE service = $1 AND updated_at < $2`, authFailuresService, before)
	if err != nil {
		return 0, fmt.Errorf("purge authentication failure budgets: %w", err)
	}
	return tag.RowsAffected() + failures.RowsAffected(), nil
}
