-- +goose Up
-- A counter that every change to what authenticates a request bumps in the
-- changing transaction (a credential issued, disabled, expired or deleted; a
-- user's plan, plan activity, storage mode or e-mail changed), whoever makes
-- it: the API, the CLI or an operator's own SQL. Every API process reads it
-- once a second and drops its credential cache when it moved, so a change
-- reaches every process even when its NOTIFY is lost (docs/consistency.md).
CREATE TABLE credentials_version (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    version   bigint NOT NULL
);
INSERT INTO credentials_version (singleton, version) VALUES (true, 0);

-- +goose StatementBegin
CREATE FUNCTION bump_credentials_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE credentials_version SET version = version + 1;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- Statement-level: one bump per statement, whatever its row count.
-- last_used_at writes are not listed, so they never bump it.
CREATE TRIGGER credentials_version_on_credentials
    AFTER INSERT OR DELETE OR UPDATE OF enabled, expires_at, all_accounts, token_hash, user_id, kind
    ON credentials FOR EACH STATEMENT EXECUTE FUNCTION bump_credentials_version();
CREATE TRIGGER credentials_version_on_users
    AFTER DELETE OR UPDATE OF plan, plan_active, storage_mode, email
    ON users FOR EACH STATEMENT EXECUTE FUNCTION bump_credentials_version();

-- +goose Down
DROP TRIGGER credentials_version_on_users ON users;
DROP TRIGGER credentials_version_on_credentials ON credentials;
DROP FUNCTION bump_credentials_version();
DROP TABLE credentials_version;
