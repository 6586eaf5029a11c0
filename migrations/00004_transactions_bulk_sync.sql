-- +goose Up
-- The last foreign key of transactions (to accounts) fired a trigger for
-- every row a sync writes, about a quarter of a first sync's database time.
-- Its two guarantees stay, at a cost per statement instead of per row:
--  * a sync locks (FOR KEY SHARE) the accounts a batch writes to, once per
--    batch, and fails if one is gone (storage.TransactionWriter);
--  * deleting accounts, directly or by cascade from a connection or a user,
--    deletes their transactions, by the statement trigger below.
ALTER TABLE transactions DROP CONSTRAINT transactions_account_id_fkey;

-- +goose StatementBegin
CREATE FUNCTION delete_account_transactions() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM transactions t USING gone g WHERE t.account_id = g.id;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER accounts_delete_transactions AFTER DELETE ON accounts
    REFERENCING OLD TABLE AS gone
    FOR EACH STATEMENT EXECUTE FUNCTION delete_account_transactions();

-- Carrying a user's category from a pending transaction to the posted one
-- looks the pending one up among the connection's few user-categorised
-- rows, and is skipped at once when there are none.
CREATE INDEX transactions_user_category_idx ON transactions (bank_connection_id, provider_id)
    WHERE category_source = 'user';

-- +goose Down
DROP INDEX transactions_user_category_idx;
DROP TRIGGER accounts_delete_transactions ON accounts;
DROP FUNCTION delete_account_transactions();
DELETE FROM transactions t WHERE NOT EXISTS (SELECT 1 FROM accounts a WHERE a.id = t.account_id);
ALTER TABLE transactions
    ADD CONSTRAINT transactions_account_id_fkey FOREIGN KEY (account_id) REFERENCES accounts (id) ON DELETE CASCADE;
