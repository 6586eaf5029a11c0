-- +goose Up
-- Connection health (docs/ops.md).

-- The circuit breakers of each worker process (holder), as it last
-- reported them: one row per provider-wide breaker (institution_id '') and
-- per institution breaker. Workers write them at the end of every sync
-- slice; readers take, per breaker, the worst state among the reports made
-- within ten minutes of its latest one. open_until is when an open breaker
-- lets a probe through (it is half-open from then on). Service-level state
-- keyed by the provider's own names, not user-owned.
CREATE TABLE provider_breakers (
    provider             text NOT NULL,
    institution_id       text NOT NULL DEFAULT '',
    holder               uuid NOT NULL,
    state                text NOT NULL CHECK (state IN ('closed', 'open', 'half_open')),
    consecutive_failures integer NOT NULL DEFAULT 0,
    open_until           timestamptz,
    updated_at           timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (provider, institution_id, holder)
);

-- Failed sync attempts of a connection since its last successful sync.
ALTER TABLE bank_connections ADD COLUMN consecutive_failures integer NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE bank_connections DROP COLUMN consecutive_failures;
DROP TABLE provider_breakers;
