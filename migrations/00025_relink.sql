-- +goose Up
-- A re-link (new credentials on an existing connection: a new Plaid Item,
-- a new Enable Banking session) re-issues account and transaction ids.
-- provider_persistent_id is the provider's identity of an account that
-- survives a re-link (Plaid's persistent_account_id, Enable Banking's
-- identification_hash), matched before the account's other attributes.
ALTER TABLE accounts ADD COLUMN provider_persistent_id text;

-- relink_candidates holds, while a re-link's first sync runs, the stored
-- transactions of each account whose provider id was re-issued that the
-- new link has not yet reported: a reported row with an unknown provider
-- id is matched against them, and those still here when the sync
-- finishes (within the dates the new link reported) are removed. Like the
-- other tables added since 00007, it refers to users only (a foreign key
-- to a table whose key 00007 changed would pin that change): a row whose
-- transaction was deleted meanwhile matches nothing and goes when the
-- re-link ends; those of a connection deleted mid-re-link stay until
-- their user is deleted.
CREATE TABLE relink_candidates (
    user_id             uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    bank_connection_id  uuid NOT NULL,
    account_id          uuid NOT NULL,
    transaction_id      uuid NOT NULL,
    amount              numeric(19, 4) NOT NULL,
    tx_date             date NOT NULL,
    PRIMARY KEY (transaction_id, user_id)
);
CREATE INDEX relink_candidates_match_idx ON relink_candidates (bank_connection_id, account_id, amount, tx_date);

-- relinking is set while the connection has relink candidates: an ordinary
-- sync reads it with the connection's row instead of probing the
-- candidates' index (which a large re-link leaves full of dead entries
-- until vacuumed).
ALTER TABLE bank_connections ADD COLUMN relinking boolean NOT NULL DEFAULT false;

-- +goose Down
ALTER TABLE bank_connections DROP COLUMN relinking;
DROP TABLE relink_candidates;
ALTER TABLE accounts DROP COLUMN provider_persistent_id;
