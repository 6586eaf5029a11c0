-- +goose NO TRANSACTION
-- +goose Up
-- The ops console lists every user's connections in creation order, a page
-- at a time, each page seeking past the previous one's last (created_at,
-- id) (storage.OpsConnections): this index serves the seek and the order
-- without a sort of the whole table. Built concurrently: bank_connections
-- takes writes all the time.
CREATE INDEX CONCURRENTLY IF NOT EXISTS bank_connections_created_idx ON bank_connections (created_at, id);

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS bank_connections_created_idx;
