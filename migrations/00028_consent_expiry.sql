-- +goose Up
-- Consent lifetime (docs/ops.md, "Connection health"): when the user's
-- consent to the provider ends, as the provider last reported it at a
-- successful sync (a GoCardless agreement, an Enable Banking session, a
-- Plaid Item's consent); null when the provider reports none. A re-auth
-- clears it until the new consent's first sync reports it.
-- consent_warned_for is the end that connection.consent_expiring was sent
-- for: one warning per consent.
ALTER TABLE bank_connections
    ADD COLUMN consent_expires_at timestamptz,
    ADD COLUMN consent_warned_for timestamptz;

-- +goose Down
ALTER TABLE bank_connections DROP COLUMN consent_warned_for, DROP COLUMN consent_expires_at;
