-- +goose Up
-- A derived daily balance was not reported by the provider but computed
-- backwards from the account's earliest recorded balance and its posted
-- transactions (storage.DeriveBalances, docs/balances.md). A sync replaces
-- derived rows freely; a recorded row (derived = false) is never replaced
-- by a derived one.
ALTER TABLE balance_history ADD COLUMN derived boolean NOT NULL DEFAULT false;

-- +goose Down
ALTER TABLE balance_history DROP COLUMN derived;
