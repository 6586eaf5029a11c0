package storage

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// takeProviderTokenSQL refills a service's bucket and takes one token in
// one statement; it returns no row when less than one token is left.
const takeProviderTokenSQL = `
INSERT INTO provider_rate_buckets AS b (service, bucket, tokens, updated_at)
VALUES ($1, $2, $3::float8 - 1, clock_timestamp())
ON CONFLICT (service, bucket) DO UPDATE
SET tokens = LEAST($3::float8, b.tokens + GREATEST(0, extract(epoch FROM clock_timestamp() - b.updated_at)::float8) * $4::float8) - 1,
    updated_at = clock_timestamp()
WHERE LEAST($3::float8, b.tokens + GREATEST(0, extract(epoch FROM clock_timestamp() - b.updated_at)::float8) * $4::float8) >= 1
RETURNING tokens`

// providerTokensSQL reads what a bucket holds now, refill included.
const providerTokensSQL = `
SELECT LEAST($3::float8, tokens + GREATEST(0, extract(epoch FROM clock_timestamp() - updated_at)::float8) * $4::float8)
FROM provider_rate_buckets WHERE service = $1 AND bucket = $2`

// TakeProviderToken takes one token from the shared bucket of an outbound
// service (burst tokens, refilled at perSecond), atomically for every
// process. When none is left it returns ok=false and how long until one
// is. Caveat: one statement per call (provider calls are few and slow).
func (s *Store) TakeProviderToken(ctx context.Context, service, bucket string, perSecond float64, burst int) (time.Duration, bool, error) {
	var left float64
	err := s.pool.QueryRow(ctx, takeProviderTokenSQL, service, bucket, float64(burst), perSecond).Scan(&left)
	if err == nil {
		return 0, true, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return 0, false, fmt.Errorf("take %s/%s token: %w", service, bucket, err)
	}
	if err := s.pool.QueryRow(ctx, providerTokensSQL, service, bucket, float64(burst), perSecond).Scan(&left); err != nil {
		return 0, false, fmt.Errorf("read %s/%s tokens: %w", service, bucket, err)
	}
	if perSecond <= 0 {
		return time.Hour, false, nil
	}
	wait := time.Duration((1 - left) / perSecond * float64(time.Second))
	return max(wait, time.Millisecond), false, nil
}

// authFailuresService names the failed-authentication budgets among the
// shared buckets, one per client address.
const authFailuresService = "api.auth-failures"

// TakeAuthFailureToken spends one token of a client address's budget of
// failed authentications (burst tokens, refilled at perSecond), atomically
// for every API process; ok=false says none was left and how long until
// one is. PurgeRateBuckets deletes idle budgets.
func (s *Store) TakeAuthFailureToken(ctx context.Context, address string, perSecond float64, burst int) (time.Duration, bool, error) {
	wait, ok, err := s.TakeProviderToken(ctx, authFailuresService, address, perSecond, burst)
	if err != nil {
		return 0, false, fmt.Errorf("authentication failure budget of %s: %w", address, err)
	}
	return wait, ok, nil
}

// GetProviderQuota returns what is known of a provider's quota for one of its
// resources and endpoints: the calls left and when the count resets.
// known is false when nothing was ever recorded.
func (s *Store) GetProviderQuota(ctx context.Context, provider, resource, endpoint string) (remaining int, reset time.Time, known bool, err error) {
	err = s.pool.QueryRow(ctx,
		`SELECT remaining, reset_at FROM provider_quotas WHERE provider = $1 AND resource = $2 AND endpoint = $3`,
		provider, resource, endpoint).Scan(&remaining, &reset)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, time.Time{}, false, nil
	}
	if err != nil {
		return 0, time.Time{}, false, fmt.Errorf("read %s quota of %s/%s: %w", provider, resource, endpoint, err)
	}
	return remaining, reset, true, nil
}

// NoteProviderQuota records a quota a provider reported. Within one quota
// window (a reset no more than a minute later than the recorded one) the
// lower count wins, so reports of concurrent calls arriving out of order
// never raise it; a later reset starts a new window.
func (s *Store) NoteProviderQuota(ctx context.Context, provider, resource, endpoint string, remaining int, reset time.Time) error {
	_, err := s.pool.Exec(ctx, `
INSERT INTO provider_quotas AS q (provider, resource, endpoint, remaining, reset_at, updated_at)
VALUES ($1, $2, $3, $4, $5, now())
ON CONFLICT (provider, resource, endpoint) DO UPDATE SET
    remaining = CASE WHEN q.reset_at > now() AND EXCLUDED.reset_at <= q.reset_at + interval '1 minute'
        THEN LEAST(q.remaining, EXCLUDED.remaining) ELSE EXCLUDED.remaining END,
    reset_at = CASE WHEN q.reset_at > now() AND EXCLUDED.reset_at <= q.reset_at + interval '1 minute'
        THEN GREATEST(q.reset_at, EXCLUDED.reset_at) ELSE EXCLUDED.reset_at END,
    updated_at = now()`,
		provider, resource, endpoint, remaining, reset)
	if err != nil {
		return fmt.Errorf("note %s quota of %s/%s: %w", provider, resource, endpoint, err)
	}
	return nil
}

// spendProviderQuotaSQL spends one call of a counted quota in one
// statement: a window not reset by $7 (the caller's now) loses one call if
// it has one left, an ended or missing one starts anew with $4 calls. It
// returns no row when nothing is left.
const spendProviderQuotaSQL = `
INSERT INTO provider_quotas AS q (provider, resource, endpoint, remaining, reset_at, updated_at)
VALUES ($1, $2, $3, $4::int - 1, $5, now())
ON CONFLICT (provider, resource, endpoint) DO UPDATE SET
    remaining = CASE WHEN q.reset_at > $6 THEN q.remaining - 1 ELSE EXCLUDED.remaining END,
    reset_at = CASE WHEN q.reset_at > $6 THEN q.reset_at ELSE EXCLUDED.reset_at END,
    updated_at = now()
WHERE q.reset_at <= $6 OR q.remaining > 0
RETURNING remaining`

// SpendProviderQuota spends one call of a quota the caller counts itself
// (limit calls per window ending at reset), atomically for every process;
// ok=false says the window current at now has none left. Windows are
// judged on the caller's clock now, not the database's, so that an adapter
// and the provider agree on the day. Caveat: limit below 1 never spends.
func (s *Store) SpendProviderQuota(ctx context.Context, provider, resource, endpoint string, limit int, reset, now time.Time) (bool, error) {
	if limit < 1 {
		return false, nil
	}
	var left int
	err := s.pool.QueryRow(ctx, spendProviderQuotaSQL, provider, resource, endpoint, limit, reset, now).Scan(&left)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("spend %s quota of %s/%s: %w", provider, resource, endpoint, err)
	}
	return true, nil
}
