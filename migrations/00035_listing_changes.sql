-- +goose Up
-- A log of which users' listed data changed, written by triggers in the
-- changing transaction, whoever writes (a sync, a rule job, the API, the
-- CLI, an operator's own SQL). A user's version is the sum of their rows'
-- weights: every committed change adds to it, and compaction (many rows of
-- a user replaced by one row of their total, in one statement) leaves it
-- as it is. The API keeps pages of GET /v2/transactions with the version
-- read in the same statement and serves a page again only while the
-- version it reads is the same (docs/read-cache.md).
--
-- Insert-only, its key drawn from a sequence: a writer takes no lock
-- another writer of the same user waits for, so the log adds no wait and no
-- deadlock to any write path.
CREATE TABLE listing_changes (
    user_id uuid   NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    id      bigint GENERATED ALWAYS AS IDENTITY,
    weight  bigint NOT NULL DEFAULT 1 CHECK (weight > 0),
    PRIMARY KEY (user_id, id) INCLUDE (weight)
);

-- The users of the changed rows that still exist: a user's deletion
-- cascades to their rows, whose changes need no note (and could not
-- reference the user).
-- +goose StatementBegin
CREATE FUNCTION note_listing_change_new() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO listing_changes (user_id)
        SELECT u.id FROM users u WHERE u.id IN (SELECT r.user_id FROM changed_rows r);
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION note_listing_change_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO listing_changes (user_id)
        SELECT u.id FROM users u
        WHERE u.id IN (SELECT r.user_id FROM changed_rows r UNION ALL SELECT o.user_id FROM old_rows o);
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- Statement-level, one row per user a statement changed (none when it
-- changed no row). Every table a transaction listing or its filters read:
-- the rows, their transfers, the accounts (duplicate marks, deletion) and a
-- scoped key's accounts on every change; the connections and categories a
-- filter must find only as they come and go (a filter checks that they
-- exist, and a sync updates its connection's row all the time).
-- +goose StatementBegin
DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['transactions', 'transfers', 'accounts', 'credential_accounts', 'bank_connections', 'categories'] LOOP
        EXECUTE format('CREATE TRIGGER %I AFTER INSERT ON %I REFERENCING NEW TABLE AS changed_rows '
            'FOR EACH STATEMENT EXECUTE FUNCTION note_listing_change_new()', t || '_listing_insert', t);
        EXECUTE format('CREATE TRIGGER %I AFTER DELETE ON %I REFERENCING OLD TABLE AS changed_rows '
            'FOR EACH STATEMENT EXECUTE FUNCTION note_listing_change_new()', t || '_listing_delete', t);
    END LOOP;
    FOREACH t IN ARRAY ARRAY['transactions', 'transfers', 'accounts', 'credential_accounts'] LOOP
        EXECUTE format('CREATE TRIGGER %I AFTER UPDATE ON %I REFERENCING NEW TABLE AS changed_rows OLD TABLE AS old_rows '
            'FOR EACH STATEMENT EXECUTE FUNCTION note_listing_change_update()', t || '_listing_update', t);
    END LOOP;
END
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['transactions', 'transfers', 'accounts', 'credential_accounts', 'bank_connections', 'categories'] LOOP
        EXECUTE format('DROP TRIGGER %I ON %I', t || '_listing_insert', t);
        EXECUTE format('DROP TRIGGER %I ON %I', t || '_listing_delete', t);
        EXECUTE format('DROP TRIGGER IF EXISTS %I ON %I', t || '_listing_update', t);
    END LOOP;
END
$$;
-- +goose StatementEnd
DROP FUNCTION note_listing_change_update();
DROP FUNCTION note_listing_change_new();
DROP TABLE listing_changes;
