-- +goose Up
-- Consumer webhooks (docs/webhooks.md): a user's subscriptions to events of
-- their own data, and the outbox of their deliveries. Both tables are
-- user-owned (distributable by user_id, docs/scaling.md).
CREATE TABLE webhook_subscriptions (
    id            uuid NOT NULL DEFAULT gen_random_uuid(),
    user_id       uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    url           text NOT NULL,
    events        text[] NOT NULL CHECK (cardinality(events) > 0),
    -- sealed_secret is the signing secret, sealed like destination secrets.
    sealed_secret bytea NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (id, user_id)
);
CREATE INDEX webhook_subscriptions_user_idx ON webhook_subscriptions (user_id, created_at, id);

-- One row per event and subscription, written in the transaction of the
-- change that caused the event and delivered in seq order per subscription.
CREATE TABLE webhook_deliveries (
    subscription_id uuid NOT NULL,
    event_id        uuid NOT NULL,
    user_id         uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    seq             bigserial NOT NULL,
    type            text NOT NULL,
    data            jsonb NOT NULL,
    created_at      timestamptz NOT NULL,
    attempts        integer NOT NULL DEFAULT 0,
    last_error      text,
    last_attempt_at timestamptz,
    next_attempt_at timestamptz,
    delivered_at    timestamptz,
    failed_at       timestamptz,
    PRIMARY KEY (subscription_id, event_id, user_id),
    FOREIGN KEY (subscription_id, user_id) REFERENCES webhook_subscriptions (id, user_id) ON DELETE CASCADE
);
CREATE INDEX webhook_deliveries_pending_idx ON webhook_deliveries (subscription_id, seq)
    WHERE delivered_at IS NULL AND failed_at IS NULL;
CREATE INDEX webhook_deliveries_seq_idx ON webhook_deliveries (subscription_id, seq);

-- +goose Down
DROP TABLE webhook_deliveries;
DROP TABLE webhook_subscriptions;
