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

-- sync_hash is a digest of the provider's side of a transaction (the
-- columns a sync compares) as the sync last wrote it, or NULL. Carried in
-- the unique index, it lets a sync that receives rows it already stored
-- recognise them from the index alone. Any other change to those columns
-- (a removal marking a row deleted, say) clears it, so an equal digest
-- always means an equal row.
ALTER TABLE transactions ADD COLUMN sync_hash bytea;
ALTER TABLE transactions
    ADD CONSTRAINT transactions_connection_provider_key UNIQUE (bank_connection_id, provider_id) INCLUDE (sync_hash);
ALTER TABLE transactions DROP CONSTRAINT transactions_bank_connection_id_provider_id_key;

-- +goose StatementBegin
CREATE FUNCTION clear_transaction_sync_hash() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.sync_hash := NULL;
    RETURN NEW;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER transactions_clear_sync_hash
    BEFORE UPDATE OF account_id, status, summary, amount, currency, authorized_date, posted_date,
        provider_merchant_name, provider_category_id, fees, fee_type, net_amount, sub_account,
        payment_channel, check_number, original_description, type, pending_provider_id, posted_at
    ON transactions
    FOR EACH ROW
    WHEN (OLD.sync_hash IS NOT NULL AND NEW.sync_hash IS NOT DISTINCT FROM OLD.sync_hash
        AND (OLD.account_id, OLD.status, OLD.summary, OLD.amount, OLD.currency, OLD.authorized_date, OLD.posted_date,
            OLD.provider_merchant_name, OLD.provider_category_id, OLD.fees, OLD.fee_type, OLD.net_amount,
            OLD.sub_account, OLD.payment_channel, OLD.check_number, OLD.original_description, OLD.type,
            OLD.pending_provider_id, OLD.posted_at)
        IS DISTINCT FROM
            (NEW.account_id, NEW.status, NEW.summary, NEW.amount, NEW.currency, NEW.authorized_date, NEW.posted_date,
            NEW.provider_merchant_name, NEW.provider_category_id, NEW.fees, NEW.fee_type, NEW.net_amount,
            NEW.sub_account, NEW.payment_channel, NEW.check_number, NEW.original_description, NEW.type,
            NEW.pending_provider_id, NEW.posted_at))
    EXECUTE FUNCTION clear_transaction_sync_hash();

-- +goose Down
DROP TRIGGER transactions_clear_sync_hash ON transactions;
DROP FUNCTION clear_transaction_sync_hash();
ALTER TABLE transactions ADD CONSTRAINT transactions_bank_connection_id_provider_id_key UNIQUE (bank_connection_id, provider_id);
ALTER TABLE transactions DROP CONSTRAINT transactions_connection_provider_key;
ALTER TABLE transactions DROP COLUMN sync_hash;
DROP INDEX transactions_user_category_idx;
DROP TRIGGER accounts_delete_transactions ON accounts;
DROP FUNCTION delete_account_transactions();
DELETE FROM transactions t WHERE NOT EXISTS (SELECT 1 FROM accounts a WHERE a.id = t.account_id);
ALTER TABLE transactions
    ADD CONSTRAINT transactions_account_id_fkey FOREIGN KEY (account_id) REFERENCES accounts (id) ON DELETE CASCADE;
