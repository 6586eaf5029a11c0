-- +goose Up
-- Held-back syncs (docs/ops.md, "Connection health"): when a worker holds a
-- connection's sync job back without calling the provider, or because the
-- provider asked it to wait, it records until when and why; the next sync
-- that runs clears both. Both are set or both are null.
ALTER TABLE bank_connections
    ADD COLUMN held_back_until timestamptz,
    ADD COLUMN held_back_reason text
        CHECK (held_back_reason IN ('provider_quota', 'rate_limit', 'breaker_open')),
    ADD CONSTRAINT bank_connections_held_back_whole
        CHECK ((held_back_until IS NULL) = (held_back_reason IS NULL));

-- +goose Down
ALTER TABLE bank_connections
    DROP CONSTRAINT bank_connections_held_back_whole,
    DROP COLUMN held_back_reason,
    DROP COLUMN held_back_until;
