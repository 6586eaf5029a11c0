-- +goose Up
-- Sync history (docs/ops.md, "A connection's page"): one row per finished
-- sync of a connection, written by the worker when the sync ends (in the
-- transaction that records the outcome on the connection, where there is
-- one): when it started and finished, the transaction pages and rows it
-- stored, and how it ended (the worker's outcome: ok, or the failure's
-- class) with the provider's error. Bounded: storage keeps the newest rows
-- of each connection (storage.SyncHistoryKept) and deletes older ones as it
-- writes, through the index below. A held-back attempt, which calls no
-- provider, is not a sync and writes no row. No foreign key to
-- bank_connections (it would pin the key 00007 changes): a trigger deletes
-- a deleted connection's rows, and the user's go with the user.
CREATE TABLE sync_history (
    id                  bigint GENERATED ALWAYS AS IDENTITY,
    user_id             uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    bank_connection_id  uuid NOT NULL,
    started_at          timestamptz NOT NULL,
    finished_at         timestamptz NOT NULL,
    pages               bigint NOT NULL DEFAULT 0 CHECK (pages >= 0),
    rows_added          bigint NOT NULL DEFAULT 0 CHECK (rows_added >= 0),
    rows_modified       bigint NOT NULL DEFAULT 0 CHECK (rows_modified >= 0),
    rows_removed        bigint NOT NULL DEFAULT 0 CHECK (rows_removed >= 0),
    outcome             text NOT NULL CHECK (outcome ~ '^[a-z_]+$'),
    error_code          text,
    error_message       text,
    PRIMARY KEY (id, user_id),
    CHECK (finished_at >= started_at),
    CHECK (outcome <> 'ok' OR (error_code IS NULL AND error_message IS NULL))
);
CREATE INDEX sync_history_connection_started_idx ON sync_history (bank_connection_id, started_at DESC, id DESC);

-- +goose StatementBegin
CREATE FUNCTION delete_connection_sync_history() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM sync_history h USING gone g WHERE h.bank_connection_id = g.id AND h.user_id = g.user_id;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER bank_connections_delete_sync_history AFTER DELETE ON bank_connections
    REFERENCING OLD TABLE AS gone
    FOR EACH STATEMENT EXECUTE FUNCTION delete_connection_sync_history();

-- +goose Down
DROP TRIGGER bank_connections_delete_sync_history ON bank_connections;
DROP FUNCTION delete_connection_sync_history();
DROP TABLE sync_history;
