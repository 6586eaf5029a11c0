-- +goose Up
-- A transaction's user and connection are those of its account, which keeps
-- the one foreign key that matters (ON DELETE CASCADE from accounts, which
-- cascade from connections and users). The other four foreign keys cost a
-- trigger each on every row a sync writes and guarded nothing the account
-- key does not: categories are never deleted (a user's deletion removes
-- their transactions through their accounts first).
ALTER TABLE transactions
    DROP CONSTRAINT transactions_user_id_fkey,
    DROP CONSTRAINT transactions_bank_connection_id_fkey,
    DROP CONSTRAINT transactions_category_id_fkey,
    DROP CONSTRAINT transactions_provider_category_id_fkey;

-- Replacing a GoCardless account's pending set reads only its pending rows.
CREATE INDEX transactions_pending_idx ON transactions (account_id) WHERE status = 'pending';

-- +goose Down
DROP INDEX transactions_pending_idx;
ALTER TABLE transactions
    ADD CONSTRAINT transactions_user_id_fkey FOREIGN KEY (user_id) REFERENCES users (id) ON DELETE CASCADE,
    ADD CONSTRAINT transactions_bank_connection_id_fkey FOREIGN KEY (bank_connection_id) REFERENCES bank_connections (id) ON DELETE CASCADE,
    ADD CONSTRAINT transactions_category_id_fkey FOREIGN KEY (category_id) REFERENCES categories (id) ON DELETE SET NULL,
    ADD CONSTRAINT transactions_provider_category_id_fkey FOREIGN KEY (provider_category_id) REFERENCES categories (id) ON DELETE SET NULL;
