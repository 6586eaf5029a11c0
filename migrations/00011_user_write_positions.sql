-- +goose Up
-- Read-your-writes with a streaming replica (docs/replicas.md): the
-- primary's WAL insert position just after a user's last acknowledged API
-- write. A read of that user goes to the replica only once the replica has
-- replayed past it. Written with synchronous_commit off (only visibility to
-- the other API processes matters, not durability: after a primary crash
-- the replica is rebuilt anyway).
CREATE TABLE user_write_positions (
    user_id    uuid PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
    lsn        pg_lsn NOT NULL,
    written_at timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE user_write_positions;
