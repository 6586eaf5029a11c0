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
	// RequestHash identifies the request (method, path, query and raw
	// body).
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
	// path, query or body).
	IdemMismatch
	// IdemInFlight: the same request holds the key and has not finished.
	IdemInFlight
	// IdemDone: the same request finished; its response is returned
	// (with Dropped set when its body is not kept).
	IdemDone
)

// IdemResponse is a stored response.
type IdemResponse struct {
	Status      int
	ContentType string
	Body        []byte
	// Dropped, when not empty, says why the body is not kept for replay
	// (IdemTooLarge or IdemEvicted): Body is then nil and Size says how
	// large it was.
	Dropped IdemDrop
	Size    int
}

// IdemDrop says why a completed key keeps no answer to replay.
type IdemDrop string

// The reasons an answer is not kept.
const (
	// IdemKept: the answer is kept (the zero value).
	IdemKept IdemDrop = ""
	// IdemTooLarge: the answer was over the size kept for replay, so only
	// its status and size were stored.
	IdemTooLarge IdemDrop = "too_large"
	// IdemEvicted: the answer was dropped to make room for newer answers
	// of its credential (IdemBounds).
	IdemEvicted IdemDrop = "evicted"
)

// IdemBounds bounds the answers one credential keeps for replay.
type IdemBounds struct {
	// MaxBody is the largest body kept; a larger one is stored as its
	// status and size alone (IdemTooLarge).
	MaxBody int
	// MaxAnswers and MaxBytes bound the answers a credential keeps, in
	// number and in total body size; past either, its oldest are dropped
	// (IdemEvicted).
	MaxAnswers int
	MaxBytes   int64
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
    expires_at = excluded.expires_at, status = NULL, content_type = NULL, body = NULL, body_bytes = NULL,
    answer_dropped = NULL, created_at = now()
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
			size        *int
			dropped     *string
		)
		err = s.pool.QueryRow(ctx, `
			SELECT request_hash, status, content_type, body, body_bytes, answer_dropped FROM idempotency_keys
			WHERE user_id = $1 AND credential_id = $2 AND key = $3`,
			c.UserID, c.CredentialID, c.Key).Scan(&hash, &status, &contentType, &body, &size, &dropped)
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
		r := IdemResponse{Status: *status, Body: body, Size: len(body)}
		if contentType != nil {
			r.ContentType = *contentType
		}
		if size != nil {
			r.Size = *size
		}
		if dropped != nil {
			r.Dropped, r.Body = IdemDrop(*dropped), nil
		}
		return IdemDone, r, nil
	}
	return IdemInFlight, IdemResponse{}, nil
}

// CompleteIdempotencyKey stores the response of the request holding the
// claim: its status, Content-Type and size always, its body only when it
// is at most b.MaxBody bytes (otherwise the key is marked IdemTooLarge: it
// still guards the request, but has nothing to replay). It reports false
// when the claim was lost (taken over after its lock passed), in which
// case nothing is stored. The credential's older answers past b's bounds
// are dropped afterwards (TrimIdempotencyAnswers); a failure of that step
// is returned wrapped in ErrIdemTrim, after the response was stored.
// Caveat: it commits with synchronous_commit off (visible to every process
// at once, one WAL flush saved): should PostgreSQL itself crash within a
// fraction of a second (3 × wal_writer_delay) after it, the stored
// response is lost, the key reverts to its in-flight claim and, once the
// claim's lock passes, a retry runs the handler again, as after a serve
// process that died between the handler's commit and this call.
func (s *Store) CompleteIdempotencyKey(ctx context.Context, k IdemKey, claim uuid.UUID, r IdemResponse, b IdemBounds) (bool, error) {
	body, dropped := r.Body, (*string)(nil)
	if len(body) > b.MaxBody {
		reason := string(IdemTooLarge)
		body, dropped = nil, &reason
	}
	tag, err := s.pool.Exec(ctx, `
		WITH off AS (SELECT set_config('synchronous_commit', 'off', true))
		UPDATE idempotency_keys SET status = $5, content_type = $6, body = $7, body_bytes = $8, answer_dropped = $9
		FROM off WHERE user_id = $1 AND credential_id = $2 AND key = $3 AND claim = $4 AND status IS NULL`,
		k.UserID, k.CredentialID, k.Key, claim, r.Status, r.ContentType, body, len(r.Body), dropped)
	if err != nil {
		return false, fmt.Errorf("complete idempotency key: %w", err)
	}
	if tag.RowsAffected() != 1 {
		return false, nil
	}
	if dropped == nil {
		if err := s.TrimIdempotencyAnswers(ctx, k.UserID, k.CredentialID, b); err != nil {
			return true, fmt.Errorf("%w: %w", ErrIdemTrim, err)
		}
	}
	return true, nil
}

// ErrIdemTrim wraps a failure to drop a credential's oldest answers after
// a response was stored: the response is stored, the credential may keep
// more answers than its bounds until its next completion.
var ErrIdemTrim = errors.New("drop the oldest idempotent answers")

// trimIdemSQL drops the bodies of a credential's kept answers beyond the
// newest $3 or beyond $4 bytes in total (newest first), marking them
// evicted. Rows another trim holds are skipped (it drops the same ones),
// so concurrent trims neither wait on nor deadlock with each other. The
// kept answers are read through their partial index and the victims
// locked and updated by primary key: the statement costs the credential's
// kept answers (at most about $3), never a scan of the table, which holds
// every credential's keys (and, between vacuums, their dead versions).
const trimIdemSQL = `
WITH off AS (SELECT set_config('synchronous_commit', 'off', true)),
ranked AS (
    SELECT key, row_number() OVER w AS n, sum(body_bytes) OVER w AS running
    FROM idempotency_keys
    WHERE user_id = $1 AND credential_id = $2 AND status IS NOT NULL AND answer_dropped IS NULL
      AND expires_at > clock_timestamp()
    WINDOW w AS (ORDER BY created_at DESC, key)
), victims AS (
    SELECT v.key FROM ranked r, LATERAL (SELECT k.key FROM idempotency_keys k
        WHERE k.user_id = $1 AND k.credential_id = $2 AND k.key = r.key AND k.answer_dropped IS NULL
        FOR UPDATE SKIP LOCKED) v
    WHERE r.n > $3 OR r.running > $4
)
UPDATE idempotency_keys k SET body = NULL, answer_dropped = 'evicted'
FROM off
WHERE k.user_id = $1 AND k.credential_id = $2 AND k.key = ANY (ARRAY(SELECT key FROM victims))`

// TrimIdempotencyAnswers drops the bodies of the credential's oldest kept
// answers past b.MaxAnswers answers or b.MaxBytes bytes (its newest are
// kept), marking their keys IdemEvicted: they still guard their requests.
// Caveat: concurrent completions of one credential may each see the other
// not yet committed, so the bounds may be passed by the answers completed
// at the same moment, until the next completion trims them.
func (s *Store) TrimIdempotencyAnswers(ctx context.Context, user, credential uuid.UUID, b IdemBounds) error {
	if _, err := s.pool.Exec(ctx, trimIdemSQL, user, credential, b.MaxAnswers, b.MaxBytes); err != nil {
		return fmt.Errorf("trim idempotent answers of credential %s: %w", credential, err)
	}
	return nil
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
