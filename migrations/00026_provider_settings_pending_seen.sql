-- +goose Up
-- Provider-level settings an operator sets once for every connection of a
-- provider (an application's id and signing key), sealed like connection
-- credentials; the worker hands them to the adapter with each connection's
-- own credentials.
CREATE TABLE provider_settings (
    id                  uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    provider            text NOT NULL UNIQUE,
    settings_encrypted  bytea NOT NULL,
    updated_at          timestamptz NOT NULL DEFAULT now()
);

-- The provider ids of the pending transactions the sync under way has
-- stored so far, so that a page replacing an account's pending set keeps
-- those of the sync's earlier pages (a provider that pages an account's
-- rows); emptied when the sync's last page is stored.
ALTER TABLE bank_connections ADD COLUMN sync_pending_seen text[] NOT NULL DEFAULT '{}';

-- +goose Down
ALTER TABLE bank_connections DROP COLUMN sync_pending_seen;
DROP TABLE provider_settings;
