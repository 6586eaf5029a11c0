-- +goose Up
-- A derived daily balance was not reported by the provider but computed
-- backwards from the account's earliest recorded balance and its posted
-- transactions (storage.DeriveBalances, docs/balances.md). A sync replaces
-- derived rows freely; a recorded row (derived = false) is never replaced
-- by a derived one.
ALTER TABLE balance_history ADD COLUMN derived boolean NOT NULL DEFAULT false;
-- The first recorded day of an account (the anchor of its derived days),
-- found without reading its derived rows.
CREATE INDEX balance_history_recorded_idx ON balance_history (account_id, date) WHERE NOT derived;

-- +goose Down
DROP INDEX balance_history_recorded_idx;
ALTER TABLE balance_history DROP COLUMN derived;
