-- +goose Up
-- A log of which users' listed data changed, written by triggers in the
-- changing transaction, whoever writes (a sync, a rule job, the API, the
-- CLI, an operator's own SQL). A user's version is the sum of their rows'
-- weights: every committed change adds a random positive weight to it, and
-- compaction (many rows of a user replaced by one row of their total, in
-- one statement) leaves it as it is. The API keeps pages of
-- GET /v2/transactions with the version read in the same statement and
-- serves a page again only while the version it reads is the same
-- (docs/read-cache.md). The weights are random so that two different
-- histories (a replica's order of commits against the primary's, a
-- history lost in a failover and written again) reach the same sum only by
-- a chance of about one in two billion.
--
-- One row per user and writing transaction (xid: the transaction's id), so
-- a sync batch of many statements notes its user once. Insert-only, and no
-- foreign key (whose check would lock the user's row): the only key a
-- writer can meet is its own transaction's, so it takes no lock that
-- another writer, or a user's deletion, waits for, and the log adds no wait
-- and no deadlock to any write path. A user's deletion removes their rows
-- by the trigger on users below.
CREATE TABLE listing_changes (
    user_id uuid   NOT NULL,
    xid     bigint NOT NULL DEFAULT txid_current(),
    weight  bigint NOT NULL DEFAULT (1 + floor(random() * 2147483647))::bigint CHECK (weight > 0),
    PRIMARY KEY (user_id, xid) INCLUDE (weight)
);

-- The users of the changed rows that still exist: a user's deletion
-- cascades to their rows, whose changes need no note.
-- +goose StatementBegin
CREATE FUNCTION note_listing_change_new() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO listing_changes (user_id)
        SELECT u.id FROM users u WHERE u.id IN (SELECT r.user_id FROM changed_rows r)
        ON CONFLICT (user_id, xid) DO NOTHING;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- An account's update matters to a listing only through the columns a
-- listing reads (duplicate marks, the provider a scoped key's categories
-- follow, its user): a sync updates every account's balance, which no
-- listing shows.
-- +goose StatementBegin
CREATE FUNCTION note_account_listing_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO listing_changes (user_id)
        SELECT u.id FROM users u
        WHERE u.id IN (
            SELECT n.user_id FROM changed_rows n JOIN old_rows o ON o.id = n.id
            WHERE n.duplicate_of_account_id IS DISTINCT FROM o.duplicate_of_account_id
               OR n.provider IS DISTINCT FROM o.provider OR n.user_id IS DISTINCT FROM o.user_id
            UNION ALL
            SELECT o.user_id FROM old_rows o JOIN changed_rows n ON n.id = o.id WHERE n.user_id IS DISTINCT FROM o.user_id)
        ON CONFLICT (user_id, xid) DO NOTHING;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION forget_listing_changes() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM listing_changes lc USING gone_users g WHERE lc.user_id = g.id;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER users_forget_listing_changes AFTER DELETE ON users REFERENCING OLD TABLE AS gone_users
    FOR EACH STATEMENT EXECUTE FUNCTION forget_listing_changes();

-- +goose StatementBegin
CREATE FUNCTION note_listing_change_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO listing_changes (user_id)
        SELECT u.id FROM users u
        WHERE u.id IN (SELECT r.user_id FROM changed_rows r UNION ALL SELECT o.user_id FROM old_rows o)
        ON CONFLICT (user_id, xid) DO NOTHING;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- Statement-level: a row for each user a statement changed, unless the
-- transaction noted the user already (none when it changed no row). Every
-- table a transaction listing or its filters read:
-- the rows, their transfers and a scoped key's accounts on every change;
-- the accounts as they come and go and when a column a listing reads
-- changes (above); the connections and categories a
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
    FOREACH t IN ARRAY ARRAY['transactions', 'transfers', 'credential_accounts'] LOOP
        EXECUTE format('CREATE TRIGGER %I AFTER UPDATE ON %I REFERENCING NEW TABLE AS changed_rows OLD TABLE AS old_rows '
            'FOR EACH STATEMENT EXECUTE FUNCTION note_listing_change_update()', t || '_listing_update', t);
    END LOOP;
    CREATE TRIGGER accounts_listing_update AFTER UPDATE ON accounts REFERENCING NEW TABLE AS changed_rows OLD TABLE AS old_rows
        FOR EACH STATEMENT EXECUTE FUNCTION note_account_listing_change();
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
DROP TRIGGER users_forget_listing_changes ON users;
DROP FUNCTION forget_listing_changes();
DROP FUNCTION note_account_listing_change();
DROP FUNCTION note_listing_change_update();
DROP FUNCTION note_listing_change_new();
DROP TABLE listing_changes;
