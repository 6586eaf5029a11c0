-- +goose Up
-- Sessions of the ops console (docs/ops.md, "Sessions"): one row per
-- sign-in, checked on every cookie-authenticated request by every serve
-- process. The cookie holds a random id; only its SHA-256 is stored. A
-- session counts only under the operator token it was made with
-- (token_fingerprint, a keyed digest of the token, never the token), so a
-- new token ends every session; sign-out sets revoked_at. Rows past
-- expires_at are purged.
CREATE TABLE ops_sessions (
    id_hash           bytea PRIMARY KEY CHECK (octet_length(id_hash) = 32),
    token_fingerprint bytea NOT NULL,
    created_at        timestamptz NOT NULL DEFAULT now(),
    expires_at        timestamptz NOT NULL,
    revoked_at        timestamptz
);
CREATE INDEX ops_sessions_expires_idx ON ops_sessions (expires_at);

-- +goose Down
DROP TABLE ops_sessions;
