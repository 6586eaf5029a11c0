-- +goose Up
-- A credential's slots for expensive API requests (rule previews, large
-- listings), shared by every serve process (docs/rate-limits.md,
-- "Concurrent expensive requests"). A request holds one row while it runs:
-- slot is its number (1 to the cap), claim identifies the request, holder
-- the process, and expires_at bounds the row's life: the process renews it
-- while the request runs and deletes it when the request ends, so a row
-- left by a process that died is taken over once it has expired. No
-- connection is held for a slot. User-owned (keyed by user_id first,
-- docs/scaling.md).
CREATE TABLE concurrency_slots (
    user_id        uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    credential_id  uuid NOT NULL REFERENCES credentials (id) ON DELETE CASCADE,
    slot           integer NOT NULL CHECK (slot >= 1),
    claim          uuid NOT NULL,
    holder         uuid NOT NULL,
    expires_at     timestamptz NOT NULL,
    PRIMARY KEY (user_id, credential_id, slot)
);

CREATE INDEX concurrency_slots_expires_at ON concurrency_slots (expires_at);

-- +goose Down
DROP TABLE concurrency_slots;
