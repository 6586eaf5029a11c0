-- +goose Up
-- Rate limits and quotas that hold for every process of a fleet together
-- (docs/rate-limits.md).

-- A user's API budget for one limit (name carries the limit's figures, so a
-- plan change starts a fresh bucket): a token bucket refilled at the
-- limit's rate up to its count, minus what live leases hold.
CREATE TABLE rate_limit_buckets (
    user_id    uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    name       text NOT NULL,
    tokens     double precision NOT NULL,
    updated_at timestamptz NOT NULL,
    PRIMARY KEY (user_id, name)
);
CREATE INDEX rate_limit_buckets_updated_idx ON rate_limit_buckets (updated_at);

-- The tokens one API process (holder) has taken from a bucket and may spend
-- until expires_at; a bucket never refills past its count minus the live
-- leases of other holders.
CREATE TABLE rate_limit_leases (
    user_id    uuid NOT NULL,
    name       text NOT NULL,
    holder     uuid NOT NULL,
    tokens     integer NOT NULL CHECK (tokens >= 0),
    expires_at timestamptz NOT NULL,
    PRIMARY KEY (user_id, name, holder),
    FOREIGN KEY (user_id, name) REFERENCES rate_limit_buckets (user_id, name) ON DELETE CASCADE
);

-- Token buckets of outbound services (a provider's client-wide limit, or
-- one credential's), shared by every worker. Service-level state keyed by
-- the provider's own names, not user-owned.
CREATE TABLE provider_rate_buckets (
    service    text NOT NULL,
    bucket     text NOT NULL,
    tokens     double precision NOT NULL,
    updated_at timestamptz NOT NULL,
    PRIMARY KEY (service, bucket)
);

-- Quotas a provider grants per resource of its own (GoCardless: successful
-- calls per account and endpoint per day): calls left until reset_at.
-- Keyed by the provider's identifiers, not user-owned.
CREATE TABLE provider_quotas (
    provider   text NOT NULL,
    resource   text NOT NULL,
    endpoint   text NOT NULL,
    remaining  integer NOT NULL,
    reset_at   timestamptz NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (provider, resource, endpoint)
);

-- +goose Down
DROP TABLE provider_quotas;
DROP TABLE provider_rate_buckets;
DROP TABLE rate_limit_leases;
DROP TABLE rate_limit_buckets;
