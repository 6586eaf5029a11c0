-- +goose Up
-- Provider notifications (docs/webhooks.md, "Provider notifications in"):
-- provider_link_id is the provider's own id of a connection's link (a
-- Plaid Item's item_id, a Stripe connected account's id), as the adapter
-- last reported it at a successful sync; notifications name the link by
-- it. sync_requested_at is when a notification asked for a sync while one
-- was running: that sync's end then leaves the next one due at once.
ALTER TABLE bank_connections
    ADD COLUMN provider_link_id text,
    ADD COLUMN sync_requested_at timestamptz;

CREATE INDEX bank_connections_provider_link_idx ON bank_connections (provider, provider_link_id)
    WHERE provider_link_id IS NOT NULL;

-- +goose Down
DROP INDEX bank_connections_provider_link_idx;
ALTER TABLE bank_connections DROP COLUMN sync_requested_at, DROP COLUMN provider_link_id;
