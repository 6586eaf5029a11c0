package storage

import (
	"context"
	"fmt"
	"time"
)

// writeBudgetService and writeBudgetBucket name the shared bucket of the
// sync write budget among the rate buckets.
const (
	writeBudgetService = "finsync"
	writeBudgetBucket  = "sync-rows"
)

// reserveRowsSQL refills the write budget's bucket and takes n tokens in
// one statement, letting it go into debt; the tokens left (negative: the
// debt) come back.
const reserveRowsSQL = `
INSERT INTO provider_rate_buckets AS b (service, bucket, tokens, updated_at)
VALUES ($1, $2, $3::float8 - $5::float8, clock_timestamp())
ON CONFLICT (service, bucket) DO UPDATE
SET tokens = LEAST($3::float8, b.tokens + GREATEST(0, extract(epoch FROM clock_timestamp() - b.updated_at)::float8) * $4::float8) - $5::float8,
    updated_at = clock_timestamp()
RETURNING tokens`

// ReserveSyncRows reserves n rows of the sync write budget that every
// worker shares (perSecond rows a second, up to burst banked while idle)
// and returns how long the caller must wait before writing them: zero
// while the budget has rows, else until the debt it leaves is repaid.
// Reservations are taken in the order they reach the database, so
// concurrent syncs share the budget fairly. Caveat: a caller that gives up
// after reserving does not give the rows back; the budget stays owed.
func (s *Store) ReserveSyncRows(ctx context.Context, n int, perSecond float64, burst int) (time.Duration, error) {
	if perSecond <= 0 || n <= 0 {
		return 0, nil
	}
	var left float64
	if err := s.pool.QueryRow(ctx, reserveRowsSQL, writeBudgetService, writeBudgetBucket, float64(burst), perSecond, float64(n)).Scan(&left); err != nil {
		return 0, fmt.Errorf("reserve %d rows of the sync write budget: %w", n, err)
	}
	if left >= 0 {
		return 0, nil
	}
	return time.Duration(-left / perSecond * float64(time.Second)), nil
}
