-- +goose Up
-- idempotency_keys holds, per credential and Idempotency-Key, the response
-- of the first v2 POST or PATCH that carried the key (api/idempotency). A
-- row with a NULL status is a claim still in flight: locked_until bounds it,
-- so a claim left by a process that died frees the key after that time.
-- Rows live until expires_at (24 hours after the claim) and are then purged.
-- The table is user-owned (distributable by user_id, docs/scaling.md).
CREATE TABLE idempotency_keys (
    user_id        uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    credential_id  uuid NOT NULL REFERENCES credentials (id) ON DELETE CASCADE,
    key            text NOT NULL CHECK (length(key) BETWEEN 1 AND 255),
    request_hash   bytea NOT NULL,
    claim          uuid NOT NULL,
    locked_until   timestamptz NOT NULL,
    status         integer,
    content_type   text,
    body           bytea,
    created_at     timestamptz NOT NULL DEFAULT now(),
    expires_at     timestamptz NOT NULL,
    PRIMARY KEY (user_id, credential_id, key)
);

CREATE INDEX idempotency_keys_expires_at ON idempotency_keys (expires_at);

-- +goose Down
DROP TABLE idempotency_keys;
