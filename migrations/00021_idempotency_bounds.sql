-- +goose Up
-- Stored Idempotency-Key answers are bounded (api/idempotency, docs/idempotency.md):
-- body_bytes is the size of the answer's body; answer_dropped says why a
-- completed key keeps no body to replay ('too_large': over the size kept
-- for replay; 'evicted': pushed out by newer answers of its credential past
-- the per-credential count or size), NULL when the body is kept. A key
-- whose answer was dropped still guards its request: a retry is refused,
-- never run again.
ALTER TABLE idempotency_keys
    ADD COLUMN body_bytes integer,
    ADD COLUMN answer_dropped text CHECK (answer_dropped IN ('too_large', 'evicted'));

UPDATE idempotency_keys SET body_bytes = COALESCE(octet_length(body), 0) WHERE status IS NOT NULL;

-- The answers a credential keeps, newest first, with their sizes: read by
-- each eviction without visiting the table's bodies.
CREATE INDEX idempotency_keys_kept ON idempotency_keys (user_id, credential_id, created_at DESC, key)
    INCLUDE (body_bytes, expires_at)
    WHERE status IS NOT NULL AND answer_dropped IS NULL;

-- +goose Down
DROP INDEX idempotency_keys_kept;
ALTER TABLE idempotency_keys DROP COLUMN answer_dropped, DROP COLUMN body_bytes;
