package storage

import (
	"context"
	"fmt"
	"time"
)

// opsFailuresService names the ops console's failed-authentication budgets
// among the shared buckets of provider_rate_buckets.
const opsFailuresService = "ops.auth-failures"

// FailureBudget is one token bucket of the ops console's failed
// authentications, shared by every serve process: Burst tokens, refilled
// at PerSecond; Bucket names it (a client address, or the global budget).
type FailureBudget struct {
	Bucket    string
	Burst     int
	PerSecond float64
}

// opsFailureLevelsSQL reads what the named buckets hold now, refill
// included; a bucket with no row is full and returns none.
const opsFailureLevelsSQL = `
SELECT x.bucket, LEAST(x.burst, b.tokens + GREATEST(0, extract(epoch FROM clock_timestamp() - b.updated_at)::float8) * x.rate)
FROM unnest($2::text[], $3::float8[], $4::float8[]) AS x(bucket, burst, rate)
JOIN provider_rate_buckets b ON b.service = $1 AND b.bucket = x.bucket`

// GetOpsFailureWait reports how long until every budget holds a whole token:
// zero when each does now. It spends nothing (one read).
func (s *Store) GetOpsFailureWait(ctx context.Context, budgets ...FailureBudget) (time.Duration, error) {
	names := make([]string, len(budgets))
	bursts := make([]float64, len(budgets))
	rates := make([]float64, len(budgets))
	byName := make(map[string]FailureBudget, len(budgets))
	for i, b := range budgets {
		names[i], bursts[i], rates[i] = b.Bucket, float64(b.Burst), b.PerSecond
		byName[b.Bucket] = b
	}
	rows, err := s.pool.Query(ctx, opsFailureLevelsSQL, opsFailuresService, names, bursts, rates)
	if err != nil {
		return 0, fmt.Errorf("read ops failure budgets: %w", err)
	}
	defer rows.Close()
	var wait time.Duration
	for rows.Next() {
		var name string
		var left float64
		if err := rows.Scan(&name, &left); err != nil {
			return 0, fmt.Errorf("read ops failure budgets: %w", err)
		}
		wait = max(wait, untilToken(left, byName[name].PerSecond))
	}
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("read ops failure budgets: %w", err)
	}
	return wait, nil
}

// SpendOpsFailure spends one token of every budget for a failed
// authentication, atomically per budget for every process; ok=false says
// at least one was empty, and wait how long until all hold a token again.
func (s *Store) SpendOpsFailure(ctx context.Context, budgets ...FailureBudget) (wait time.Duration, ok bool, err error) {
	ok = true
	for _, b := range budgets {
		w, took, err := s.TakeProviderToken(ctx, opsFailuresService, b.Bucket, b.PerSecond, b.Burst)
		if err != nil {
			return 0, false, fmt.Errorf("spend ops failure budget: %w", err)
		}
		if !took {
			ok, wait = false, max(wait, w)
		}
	}
	return wait, ok, nil
}

// PurgeOpsFailureBudgets deletes the ops console's failure budgets
// untouched since before (one idle for longer than its refill is full,
// exactly like one created anew), and returns how many.
func (s *Store) PurgeOpsFailureBudgets(ctx context.Context, before time.Time) (int64, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM provider_rate_buckets WHERE service = $1 AND updated_at < $2`, opsFailuresService, before)
	if err != nil {
		return 0, fmt.Errorf("purge ops failure budgets: %w", err)
	}
	return tag.RowsAffected(), nil
}

// untilToken is how long a bucket holding left tokens, refilled at
// perSecond, takes to hold one: zero when it does.
func untilToken(left, perSecond float64) time.Duration {
	if left >= 1 {
		return 0
	}
	if perSecond <= 0 {
		return time.Hour
	}
	return max(time.Duration((1-left)/perSecond*float64(time.Second)), time.Millisecond)
}
