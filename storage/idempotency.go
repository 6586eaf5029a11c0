package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// IdemKey names one Idempotency-Key of one credential (table
// idempotency_keys, migration 00014).
type IdemKey struct {
	UserID       uuid.UUID
	CredentialID uuid.UUID
	Key          string
}

// IdemClaim asks for a key on behalf of one request.
type IdemClaim struct {
	IdemKey
	// RequestHash identifies the request (method, path and raw body).
	RequestHash []byte
	// Claim identifies this request's hold on the key; only it can
	// complete or release the key.
	Claim uuid.UUID
	// Lock bounds how long the claim holds the key while in flight: after
	// it, a retry may take the key over (the claimer is presumed dead).
	Lock time.Duration
	// TTL is how long the key and its stored response live.
	TTL time.Duration
}

// IdemState says what ClaimIdempotencyKey found.
type IdemState int

// The outcomes of a claim.
const (
	// IdemClaimed: the key was free (new, expired, or left by a dead
	// claimer) and now belongs to the request.
	IdemClaimed IdemState = iota
	// IdemMismatch: the key was used for another request (another method,
	// path or body).
	IdemMismatch
	// IdemInFlight: the same request holds the key and has not finished.
	IdemInFlight
	// IdemDone: the same request finished; its response is returned.
	IdemDone
)

// IdemResponse is a stored response.
type IdemResponse struct {
	Status      int
	ContentType string
	Body        []byte
}

// claimIdemSQL inserts the claim, or takes over a row that expired or
// whose in-flight claim outlived its lock; it returns no row when the key
// is held (in flight or done) within its bounds. It commits with
// synchronous_commit off, saving a WAL flush per request: the claim is
// visible to every process at once, and it is durable as soon as the
// handler's own (synchronous) commit is, WAL being flushed in order.
const claimIdemSQL = `
WITH off AS (SELECT set_config('synchronous_commit', 'off', true))
INSERT INTO idempotency_keys AS k (user_id, credential_id, key, request_hash, claim, locked_until, expires_at)
SELECT $1, $2, $3, $4, $5, clock_timestamp() + $6::float8 * interval '1 second', clock_timestamp() + $7::float8 * interval '1 second'
FROM off
ON CONFLICT (user_id, credential_id, key) DO UPDATE SET
    request_hash = excluded.request_hash, claim = excluded.claim, locked_until = excluded.locked_until,
    expires_at = excluded.expires_at, status = NULL, content_type = NULL, body = NULL, created_at = now()
WHERE k.expires_at <= clock_timestamp() OR (k.status IS NULL AND k.locked_until <= clock_timestamp())
RETURNING true`

// ClaimIdempotencyKey claims the key for a request, or reports who holds
// it: the stored response when the same request already finished. It holds
// across API processes (one row per key, claimed by one statement).
// Caveat: a claim whose lock has passed is taken over even if its request
// is in fact still running, so Lock must exceed the request deadline.
func (s *Store) ClaimIdempotencyKey(ctx context.Context, c IdemClaim) (IdemState, IdemResponse, error) {
	// A row released between the claim and the read is claimed again; two
	// rounds suffice unless the key is released repeatedly.
	for range 3 {
		var claimed bool
		err := s.pool.QueryRow(ctx, claimIdemSQL, c.UserID, c.CredentialID, c.Key, c.RequestHash, c.Claim,
			c.Lock.Seconds(), c.TTL.Seconds()).Scan(&claimed)
		if err == nil {
			return IdemClaimed, IdemResponse{}, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return 0, IdemResponse{}, fmt.Errorf("claim idempotency key: %w", err)
		}
		var (
			hash        []byte
			status      *int
			contentType *string
			body        []byte
		)
		err = s.pool.QueryRow(ctx, `
			SELECT request_hash, status, content_type, body FROM idempotency_keys
			WHERE user_id = $1 AND credential_id = $2 AND key = $3`,
			c.UserID, c.CredentialID, c.Key).Scan(&hash, &status, &contentType, &body)
		if errors.Is(err, pgx.ErrNoRows) {
			continue
		}
		if err != nil {
			return 0, IdemResponse{}, fmt.Errorf("read idempotency key: %w", err)
		}
		switch {
		case !bytes.Equal(hash, c.RequestHash):
			return IdemMismatch, IdemResponse{}, nil
		case status == nil:
			return IdemInFlight, IdemResponse{}, nil
		}
		r := IdemResponse{Status: *status, Body: body}
		if contentType != nil {
			r.ContentType = *contentType
		}
		return IdemDone, r, nil
	}
	return IdemInFlight, IdemResponse{}, nil
}

// CompleteIdempotencyKey stores the response of the request holding the
// claim. It reports false when the claim was lost (taken over after its
// lock passed), in which case nothing is stored. Caveat: it commits with
// synchronous_commit off (visible to every process at once, one WAL flush
// saved): should PostgreSQL itself crash within a fraction of a second
// (3 × wal_writer_delay) after it, the stored response is lost, the key
// reverts to its in-flight claim and, once the claim's lock passes, a
// retry runs the handler again, as after a serve process that died between
// the handler's commit and this call.
func (s *Store) CompleteIdempotencyKey(ctx context.Context, k IdemKey, claim uuid.UUID, r IdemResponse) (bool, error) {
	tag, err := s.pool.Exec(ctx, `
		WITH off AS (SELECT set_config('synchronous_commit', 'off', true))
		UPDATE idempotency_keys SET status = $5, content_type = $6, body = $7
		FROM off WHERE user_id = $1 AND credential_id = $2 AND key = $3 AND claim = $4 AND status IS NULL`,
		k.UserID, k.CredentialID, k.Key, claim, r.Status, r.ContentType, r.Body)
	if err != nil {
		return false, fmt.Errorf("complete idempotency key: %w", err)
	}
	return tag.RowsAffected() == 1, nil
}

// ReleaseIdempotencyKey deletes the claim, so the next request with the
// key runs (after a 5xx, or when no response was written).
func (s *Store) ReleaseIdempotencyKey(ctx context.Context, k IdemKey, claim uuid.UUID) error {
	if _, err := s.pool.Exec(ctx, `
		DELETE FROM idempotency_keys
		WHERE user_id = $1 AND credential_id = $2 AND key = $3 AND claim = $4 AND status IS NULL`,
		k.UserID, k.CredentialID, k.Key, claim); err != nil {
		return fmt.Errorf("release idempotency key: %w", err)
	}
	return nil
}

// PurgeIdempotencyKeys deletes up to limit expired keys and returns how
// many it deleted.
func (s *Store) PurgeIdempotencyKeys(ctx context.Context, limit int) (int64, error) {
	tag, err := s.pool.Exec(ctx, `
		DELETE FROM idempotency_keys WHERE ctid IN (
			SELECT ctid FROM idempotency_keys WHERE expires_at <= clock_timestamp() LIMIT $1)`, limit)
	if err != nil {
		return 0, fmt.Errorf("purge idempotency keys: %w", err)
	}
	return tag.RowsAffected(), nil
}
