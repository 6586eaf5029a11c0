package storage

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// SlotClaim asks for one of a credential's concurrency slots on behalf of a
// request.
type SlotClaim struct {
	UserID       uuid.UUID
	CredentialID uuid.UUID
	// Cap is how many slots the credential has (at least 1).
	Cap int
	// Holder identifies the process; it is recorded for operators only.
	Holder uuid.UUID
	// TTL is how long the slot stays taken without a renewal.
	TTL time.Duration
}

// Slot is a concurrency slot held by one request: release it with
// ReleaseSlot when the request ends and renew it with RenewSlot while it
// runs longer than its TTL.
type Slot struct {
	UserID       uuid.UUID
	CredentialID uuid.UUID
	Number       int
	Claim        uuid.UUID
	// Expires is when the slot frees itself without a renewal, in the
	// database's clock.
	Expires time.Time
}

// lockSlotsSQL serialises the claims of one credential for the rest of
// the implicit transaction, so the claim that follows sees every slot
// taken before it. The key is a 64-bit hash of the credential id under
// the "finsync.slots" prefix.
const lockSlotsSQL = `SELECT pg_advisory_xact_lock(hashtextextended('finsync.slots:' || $1::text, 0))`

// claimSlotSQL takes the lowest free slot of the credential: one with no
// row, or whose row has expired (a request whose process died). It returns
// no row when every slot is held.
const claimSlotSQL = `
INSERT INTO concurrency_slots (user_id, credential_id, slot, claim, holder, expires_at)
SELECT $1, $2, s, $4, $5, clock_timestamp() + make_interval(secs => $6::float8)
FROM generate_series(1, $3::int) s
WHERE NOT EXISTS (
    SELECT 1 FROM concurrency_slots c
    WHERE c.user_id = $1 AND c.credential_id = $2 AND c.slot = s AND c.expires_at > clock_timestamp())
ORDER BY s
LIMIT 1
ON CONFLICT (user_id, credential_id, slot) DO UPDATE
    SET claim = EXCLUDED.claim, holder = EXCLUDED.holder, expires_at = EXCLUDED.expires_at
    WHERE concurrency_slots.expires_at <= clock_timestamp()
RETURNING slot, expires_at`

// AcquireSlot takes one of the credential's Cap slots in one round trip
// (an advisory lock on the credential and the claim, pipelined as one
// implicit transaction), or reports ok=false when all are held by live
// requests. Guarantee: at no moment do more than Cap unexpired slots of a
// credential exist, whichever processes claim them; no connection is held
// once the call returns. Caveat: a request whose process died keeps its
// slot until the slot's TTL has run out; a request that runs past its TTL
// without RenewSlot loses it.
func (s *Store) AcquireSlot(ctx context.Context, c SlotClaim) (slot Slot, ok bool, err error) {
	if c.Cap < 1 {
		return Slot{}, false, nil
	}
	slot = Slot{UserID: c.UserID, CredentialID: c.CredentialID, Claim: uuid.New()}
	b := &pgx.Batch{}
	b.Queue(lockSlotsSQL, c.CredentialID)
	b.Queue(claimSlotSQL, c.UserID, c.CredentialID, c.Cap, slot.Claim, c.Holder, c.TTL.Seconds()).
		QueryRow(func(row pgx.Row) error {
			err := row.Scan(&slot.Number, &slot.Expires)
			if errors.Is(err, pgx.ErrNoRows) {
				return nil
			}
			ok = err == nil
			return err
		})
	if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
		return Slot{}, false, fmt.Errorf("claim a concurrency slot of credential %s: %w", c.CredentialID, err)
	}
	if !ok {
		return Slot{}, false, nil
	}
	return slot, true, nil
}

// RenewSlot extends a held slot by ttl from now. It reports false when the
// slot is no longer this request's (it expired and another request took
// it, or the credential was deleted).
func (s *Store) RenewSlot(ctx context.Context, slot Slot, ttl time.Duration) (bool, error) {
	tag, err := s.pool.Exec(ctx, `UPDATE concurrency_slots SET expires_at = clock_timestamp() + make_interval(secs => $5::float8)
		WHERE user_id = $1 AND credential_id = $2 AND slot = $3 AND claim = $4`,
		slot.UserID, slot.CredentialID, slot.Number, slot.Claim, ttl.Seconds())
	if err != nil {
		return false, fmt.Errorf("renew concurrency slot %d of credential %s: %w", slot.Number, slot.CredentialID, err)
	}
	return tag.RowsAffected() == 1, nil
}

// ReleaseSlot frees a held slot; a slot already taken over by another
// request is left alone.
func (s *Store) ReleaseSlot(ctx context.Context, slot Slot) error {
	_, err := s.pool.Exec(ctx, `DELETE FROM concurrency_slots
		WHERE user_id = $1 AND credential_id = $2 AND slot = $3 AND claim = $4`,
		slot.UserID, slot.CredentialID, slot.Number, slot.Claim)
	if err != nil {
		return fmt.Errorf("release concurrency slot %d of credential %s: %w", slot.Number, slot.CredentialID, err)
	}
	return nil
}

// PurgeSlots deletes slots that expired before the given time (left by
// processes that died, for credentials that claimed no slot since).
func (s *Store) PurgeSlots(ctx context.Context, before time.Time) (int64, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM concurrency_slots WHERE expires_at < $1`, before)
	if err != nil {
		return 0, fmt.Errorf("purge concurrency slots: %w", err)
	}
	return tag.RowsAffected(), nil
}

// CountHeldSlots counts the credential's unexpired slots (for tests and the
// operators' view).
func (s *Store) CountHeldSlots(ctx context.Context, userID, credentialID uuid.UUID) (int, error) {
	var n int
	err := s.pool.QueryRow(ctx, `SELECT count(*) FROM concurrency_slots
		WHERE user_id = $1 AND credential_id = $2 AND expires_at > clock_timestamp()`, userID, credentialID).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count concurrency slots of credential %s: %w", credentialID, err)
	}
	return n, nil
}
