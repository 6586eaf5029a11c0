-- +goose Up
-- Destinations: the spreadsheet and database tools (and webhooks) to which
-- changes of a user's manual accounts are propagated.
CREATE TABLE destinations (
    id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    user_id     uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    kind        text NOT NULL CHECK (kind IN ('airtable', 'google_sheets', 'webhook')),
    name        text NOT NULL DEFAULT '',
    -- config holds the non-secret settings (URL, base, table or sheet).
    config      jsonb NOT NULL DEFAULT '{}',
    -- sealed_secret holds the credentials, encrypted (AES-256-GCM).
    sealed_secret bytea NOT NULL,
    -- all_accounts: every manual account of the user, including future
    -- ones, propagates to the destination (besides explicit links).
    all_accounts boolean NOT NULL DEFAULT false,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX destinations_user_idx ON destinations (user_id);

-- The accounts whose changes a destination receives.
CREATE TABLE destination_accounts (
    destination_id uuid NOT NULL REFERENCES destinations (id) ON DELETE CASCADE,
    account_id     uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    created_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (destination_id, account_id)
);
CREATE INDEX destination_accounts_account_idx ON destination_accounts (account_id);

-- The outbox: one row per change of an account and destination linked at
-- the time of the change, written in the change's transaction and drained
-- in seq order per destination.
CREATE TABLE destination_outbox (
    id             uuid NOT NULL,
    destination_id uuid NOT NULL REFERENCES destinations (id) ON DELETE CASCADE,
    account_id     uuid NOT NULL,
    seq            bigserial NOT NULL,
    type           text NOT NULL CHECK (type IN ('account.created', 'account.updated', 'account.closed')),
    payload        jsonb NOT NULL,
    occurred_at    timestamptz NOT NULL,
    created_at     timestamptz NOT NULL DEFAULT now(),
    attempts       integer NOT NULL DEFAULT 0,
    last_error     text,
    delivered_at   timestamptz,
    failed_at      timestamptz,
    PRIMARY KEY (destination_id, id)
);
CREATE INDEX destination_outbox_pending_idx ON destination_outbox (destination_id, seq)
    WHERE delivered_at IS NULL AND failed_at IS NULL;

-- +goose Down
DROP TABLE destination_outbox;
DROP TABLE destination_accounts;
DROP TABLE destinations;
