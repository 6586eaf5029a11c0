-- +goose Up
-- Double links (docs/accounts.md): an account that a user's newer
-- connection reaches while an older one already does is marked with the
-- older account's id. No foreign key: a distributed schema refuses SET
-- NULL on delete (migration 00007), so a trigger clears the marks that
-- point at a deleted account, and deletes its rejected pairs (which keep
-- no foreign key either, as transactions and transfers: one to
-- accounts (id, user_id) would pin the key that migration 00007 down
-- drops).
ALTER TABLE accounts ADD COLUMN duplicate_of_account_id uuid;
ALTER TABLE accounts ADD CONSTRAINT accounts_duplicate_not_self CHECK (duplicate_of_account_id <> id);

-- The listings' filter reads a user's marked accounts.
CREATE INDEX accounts_duplicates_idx ON accounts (user_id, id, duplicate_of_account_id)
    WHERE duplicate_of_account_id IS NOT NULL;

-- +goose StatementBegin
CREATE FUNCTION clear_duplicate_marks() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE accounts a SET duplicate_of_account_id = NULL, updated_at = now()
        FROM gone g
        WHERE a.user_id = g.user_id AND a.duplicate_of_account_id = g.id;
    DELETE FROM account_duplicate_rejections r USING gone g
        WHERE r.user_id = g.user_id AND (r.account_id = g.id OR r.original_account_id = g.id);
    RETURN NULL;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER accounts_clear_duplicate_marks AFTER DELETE ON accounts
    REFERENCING OLD TABLE AS gone
    FOR EACH STATEMENT EXECUTE FUNCTION clear_duplicate_marks();

-- A mark the user cleared (POST /v2/accounts/{id}/not-duplicate): that
-- pair is never marked again.
CREATE TABLE account_duplicate_rejections (
    user_id              uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    account_id           uuid NOT NULL,
    original_account_id  uuid NOT NULL,
    created_at           timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (account_id, original_account_id, user_id)
);
CREATE INDEX account_duplicate_rejections_original_idx ON account_duplicate_rejections (original_account_id, user_id);

-- +goose Down
DROP TABLE account_duplicate_rejections;
DROP TRIGGER accounts_clear_duplicate_marks ON accounts;
DROP FUNCTION clear_duplicate_marks();
DROP INDEX accounts_duplicates_idx;
ALTER TABLE accounts DROP CONSTRAINT accounts_duplicate_not_self;
ALTER TABLE accounts DROP COLUMN duplicate_of_account_id;
