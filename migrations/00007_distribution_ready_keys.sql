-- +goose Up
-- Every user-owned table is keyed and joined by user_id, so the schema can be
-- distributed by user (Citus, distribution column user_id) without reshaping
-- it; docs/scaling.md explains the path and storage/schema_test.go keeps it
-- open. The rules:
--  * every user-owned table has a NOT NULL user_id;
--  * every primary key and unique constraint of such a table includes
--    user_id (a distributed table cannot enforce uniqueness across shards);
--  * every foreign key between two such tables includes user_id on both
--    sides (so the rows it joins live on the same shard), and none sets
--    columns to NULL on delete (Citus refuses SET NULL once the
--    distribution column is part of the key, even with a column list).
-- users and credentials stay whole (reference tables): e-mail addresses and
-- token hashes are unique across all users, and a request's token must
-- find its user before any user is known.
--
-- user_id is appended to the existing keys rather than put first, so every
-- look-up that used a key's leading columns (by id, by connection and
-- provider id) keeps the same plan. A row's user_id is its owner's: the
-- composite foreign keys enforce that wherever one exists; transactions,
-- which have no foreign key (migrations 00003, 00004), take it from their
-- connection in the writer.

-- 1. user_id on the tables that had none, from their owner.
ALTER TABLE connection_datasets ADD COLUMN user_id uuid;
UPDATE connection_datasets d SET user_id = c.user_id FROM bank_connections c WHERE c.id = d.bank_connection_id;
ALTER TABLE connection_datasets ALTER COLUMN user_id SET NOT NULL;

ALTER TABLE credential_accounts ADD COLUMN user_id uuid;
UPDATE credential_accounts ca SET user_id = c.user_id FROM credentials c WHERE c.id = ca.credential_id;
ALTER TABLE credential_accounts ALTER COLUMN user_id SET NOT NULL;

ALTER TABLE destination_accounts ADD COLUMN user_id uuid;
UPDATE destination_accounts da SET user_id = d.user_id FROM destinations d WHERE d.id = da.destination_id;
ALTER TABLE destination_accounts ALTER COLUMN user_id SET NOT NULL;

ALTER TABLE destination_outbox ADD COLUMN user_id uuid;
UPDATE destination_outbox o SET user_id = d.user_id FROM destinations d WHERE d.id = o.destination_id;
ALTER TABLE destination_outbox ALTER COLUMN user_id SET NOT NULL;

-- 2. The foreign keys between user-owned tables, replaced in step 5.
ALTER TABLE connection_datasets DROP CONSTRAINT connection_datasets_bank_connection_id_fkey;
ALTER TABLE accounts DROP CONSTRAINT accounts_bank_connection_id_fkey;
ALTER TABLE credential_accounts DROP CONSTRAINT credential_accounts_account_id_fkey;
ALTER TABLE categories DROP CONSTRAINT categories_group_id_fkey;
ALTER TABLE balance_history DROP CONSTRAINT balance_history_account_id_fkey;
ALTER TABLE holdings
    DROP CONSTRAINT holdings_account_id_fkey,
    DROP CONSTRAINT holdings_security_id_fkey;
ALTER TABLE investment_transactions
    DROP CONSTRAINT investment_transactions_bank_connection_id_fkey,
    DROP CONSTRAINT investment_transactions_account_id_fkey,
    DROP CONSTRAINT investment_transactions_security_id_fkey;
ALTER TABLE destination_accounts
    DROP CONSTRAINT destination_accounts_destination_id_fkey,
    DROP CONSTRAINT destination_accounts_account_id_fkey;
ALTER TABLE destination_outbox DROP CONSTRAINT destination_outbox_destination_id_fkey;

-- 3. Primary keys with user_id.
ALTER TABLE bank_connections DROP CONSTRAINT bank_connections_pkey, ADD CONSTRAINT bank_connections_pkey PRIMARY KEY (id, user_id);
ALTER TABLE connection_datasets DROP CONSTRAINT connection_datasets_pkey,
    ADD CONSTRAINT connection_datasets_pkey PRIMARY KEY (bank_connection_id, dataset, user_id);
ALTER TABLE accounts DROP CONSTRAINT accounts_pkey, ADD CONSTRAINT accounts_pkey PRIMARY KEY (id, user_id);
ALTER TABLE credential_accounts DROP CONSTRAINT credential_accounts_pkey,
    ADD CONSTRAINT credential_accounts_pkey PRIMARY KEY (credential_id, account_id, user_id);
ALTER TABLE category_groups DROP CONSTRAINT category_groups_pkey, ADD CONSTRAINT category_groups_pkey PRIMARY KEY (id, user_id);
ALTER TABLE categories DROP CONSTRAINT categories_pkey, ADD CONSTRAINT categories_pkey PRIMARY KEY (id, user_id);
ALTER TABLE transactions DROP CONSTRAINT transactions_pkey, ADD CONSTRAINT transactions_pkey PRIMARY KEY (id, user_id);
ALTER TABLE rules DROP CONSTRAINT rules_pkey, ADD CONSTRAINT rules_pkey PRIMARY KEY (id, user_id);
ALTER TABLE balance_history DROP CONSTRAINT balance_history_pkey, ADD CONSTRAINT balance_history_pkey PRIMARY KEY (id, user_id);
ALTER TABLE securities DROP CONSTRAINT securities_pkey, ADD CONSTRAINT securities_pkey PRIMARY KEY (id, user_id);
ALTER TABLE holdings DROP CONSTRAINT holdings_pkey, ADD CONSTRAINT holdings_pkey PRIMARY KEY (id, user_id);
ALTER TABLE investment_transactions DROP CONSTRAINT investment_transactions_pkey,
    ADD CONSTRAINT investment_transactions_pkey PRIMARY KEY (id, user_id);
ALTER TABLE destinations DROP CONSTRAINT destinations_pkey, ADD CONSTRAINT destinations_pkey PRIMARY KEY (id, user_id);
ALTER TABLE destination_accounts DROP CONSTRAINT destination_accounts_pkey,
    ADD CONSTRAINT destination_accounts_pkey PRIMARY KEY (destination_id, account_id, user_id);
ALTER TABLE destination_outbox DROP CONSTRAINT destination_outbox_pkey,
    ADD CONSTRAINT destination_outbox_pkey PRIMARY KEY (destination_id, id, user_id);

-- 4. Unique constraints with user_id (the sync's ON CONFLICT targets).
ALTER TABLE accounts DROP CONSTRAINT accounts_bank_connection_id_provider_account_id_key,
    ADD CONSTRAINT accounts_bank_connection_id_provider_account_id_key UNIQUE (bank_connection_id, provider_account_id, user_id);
ALTER TABLE transactions DROP CONSTRAINT transactions_connection_provider_key,
    ADD CONSTRAINT transactions_connection_provider_key UNIQUE (bank_connection_id, provider_id, user_id) INCLUDE (sync_hash);
ALTER TABLE balance_history DROP CONSTRAINT balance_history_account_id_date_key,
    ADD CONSTRAINT balance_history_account_id_date_key UNIQUE (account_id, date, user_id);
ALTER TABLE holdings DROP CONSTRAINT holdings_account_id_security_id_key,
    ADD CONSTRAINT holdings_account_id_security_id_key UNIQUE (account_id, security_id, user_id);
ALTER TABLE investment_transactions DROP CONSTRAINT investment_transactions_bank_connection_id_provider_id_key,
    ADD CONSTRAINT investment_transactions_bank_connection_id_provider_id_key UNIQUE (bank_connection_id, provider_id, user_id);

-- 5. Foreign keys between user-owned tables, with user_id. The two that set
-- NULL on delete (a category's group, an investment transaction's security)
-- become NO ACTION: nothing deletes a group or a security but the deletion
-- of their user, which removes the rows pointing at them in the same
-- statement.
ALTER TABLE connection_datasets ADD CONSTRAINT connection_datasets_bank_connection_id_fkey
    FOREIGN KEY (bank_connection_id, user_id) REFERENCES bank_connections (id, user_id) ON DELETE CASCADE;
ALTER TABLE accounts ADD CONSTRAINT accounts_bank_connection_id_fkey
    FOREIGN KEY (bank_connection_id, user_id) REFERENCES bank_connections (id, user_id) ON DELETE CASCADE;
ALTER TABLE credential_accounts ADD CONSTRAINT credential_accounts_account_id_fkey
    FOREIGN KEY (account_id, user_id) REFERENCES accounts (id, user_id) ON DELETE CASCADE;
ALTER TABLE categories ADD CONSTRAINT categories_group_id_fkey
    FOREIGN KEY (group_id, user_id) REFERENCES category_groups (id, user_id);
ALTER TABLE balance_history ADD CONSTRAINT balance_history_account_id_fkey
    FOREIGN KEY (account_id, user_id) REFERENCES accounts (id, user_id) ON DELETE CASCADE;
ALTER TABLE holdings
    ADD CONSTRAINT holdings_account_id_fkey
        FOREIGN KEY (account_id, user_id) REFERENCES accounts (id, user_id) ON DELETE CASCADE,
    ADD CONSTRAINT holdings_security_id_fkey
        FOREIGN KEY (security_id, user_id) REFERENCES securities (id, user_id) ON DELETE CASCADE;
ALTER TABLE investment_transactions
    ADD CONSTRAINT investment_transactions_bank_connection_id_fkey
        FOREIGN KEY (bank_connection_id, user_id) REFERENCES bank_connections (id, user_id) ON DELETE CASCADE,
    ADD CONSTRAINT investment_transactions_account_id_fkey
        FOREIGN KEY (account_id, user_id) REFERENCES accounts (id, user_id) ON DELETE CASCADE,
    ADD CONSTRAINT investment_transactions_security_id_fkey
        FOREIGN KEY (security_id, user_id) REFERENCES securities (id, user_id);
ALTER TABLE destination_accounts
    ADD CONSTRAINT destination_accounts_destination_id_fkey
        FOREIGN KEY (destination_id, user_id) REFERENCES destinations (id, user_id) ON DELETE CASCADE,
    ADD CONSTRAINT destination_accounts_account_id_fkey
        FOREIGN KEY (account_id, user_id) REFERENCES accounts (id, user_id) ON DELETE CASCADE;
ALTER TABLE destination_outbox ADD CONSTRAINT destination_outbox_destination_id_fkey
    FOREIGN KEY (destination_id, user_id) REFERENCES destinations (id, user_id) ON DELETE CASCADE;

-- The rows that now carry user_id refer to their user like every other
-- user-owned table (users is a reference table).
ALTER TABLE connection_datasets ADD CONSTRAINT connection_datasets_user_id_fkey
    FOREIGN KEY (user_id) REFERENCES users (id) ON DELETE CASCADE;
ALTER TABLE credential_accounts ADD CONSTRAINT credential_accounts_user_id_fkey
    FOREIGN KEY (user_id) REFERENCES users (id) ON DELETE CASCADE;
ALTER TABLE destination_accounts ADD CONSTRAINT destination_accounts_user_id_fkey
    FOREIGN KEY (user_id) REFERENCES users (id) ON DELETE CASCADE;
ALTER TABLE destination_outbox ADD CONSTRAINT destination_outbox_user_id_fkey
    FOREIGN KEY (user_id) REFERENCES users (id) ON DELETE CASCADE;

-- +goose Down
ALTER TABLE destination_outbox DROP CONSTRAINT destination_outbox_user_id_fkey;
ALTER TABLE destination_accounts DROP CONSTRAINT destination_accounts_user_id_fkey;
ALTER TABLE credential_accounts DROP CONSTRAINT credential_accounts_user_id_fkey;
ALTER TABLE connection_datasets DROP CONSTRAINT connection_datasets_user_id_fkey;

ALTER TABLE connection_datasets DROP CONSTRAINT connection_datasets_bank_connection_id_fkey;
ALTER TABLE accounts DROP CONSTRAINT accounts_bank_connection_id_fkey;
ALTER TABLE credential_accounts DROP CONSTRAINT credential_accounts_account_id_fkey;
ALTER TABLE categories DROP CONSTRAINT categories_group_id_fkey;
ALTER TABLE balance_history DROP CONSTRAINT balance_history_account_id_fkey;
ALTER TABLE holdings
    DROP CONSTRAINT holdings_account_id_fkey,
    DROP CONSTRAINT holdings_security_id_fkey;
ALTER TABLE investment_transactions
    DROP CONSTRAINT investment_transactions_bank_connection_id_fkey,
    DROP CONSTRAINT investment_transactions_account_id_fkey,
    DROP CONSTRAINT investment_transactions_security_id_fkey;
ALTER TABLE destination_accounts
    DROP CONSTRAINT destination_accounts_destination_id_fkey,
    DROP CONSTRAINT destination_accounts_account_id_fkey;
ALTER TABLE destination_outbox DROP CONSTRAINT destination_outbox_destination_id_fkey;

ALTER TABLE accounts DROP CONSTRAINT accounts_bank_connection_id_provider_account_id_key,
    ADD CONSTRAINT accounts_bank_connection_id_provider_account_id_key UNIQUE (bank_connection_id, provider_account_id);
ALTER TABLE transactions DROP CONSTRAINT transactions_connection_provider_key,
    ADD CONSTRAINT transactions_connection_provider_key UNIQUE (bank_connection_id, provider_id) INCLUDE (sync_hash);
ALTER TABLE balance_history DROP CONSTRAINT balance_history_account_id_date_key,
    ADD CONSTRAINT balance_history_account_id_date_key UNIQUE (account_id, date);
ALTER TABLE holdings DROP CONSTRAINT holdings_account_id_security_id_key,
    ADD CONSTRAINT holdings_account_id_security_id_key UNIQUE (account_id, security_id);
ALTER TABLE investment_transactions DROP CONSTRAINT investment_transactions_bank_connection_id_provider_id_key,
    ADD CONSTRAINT investment_transactions_bank_connection_id_provider_id_key UNIQUE (bank_connection_id, provider_id);

ALTER TABLE bank_connections DROP CONSTRAINT bank_connections_pkey, ADD CONSTRAINT bank_connections_pkey PRIMARY KEY (id);
ALTER TABLE connection_datasets DROP CONSTRAINT connection_datasets_pkey,
    ADD CONSTRAINT connection_datasets_pkey PRIMARY KEY (bank_connection_id, dataset);
ALTER TABLE accounts DROP CONSTRAINT accounts_pkey, ADD CONSTRAINT accounts_pkey PRIMARY KEY (id);
ALTER TABLE credential_accounts DROP CONSTRAINT credential_accounts_pkey,
    ADD CONSTRAINT credential_accounts_pkey PRIMARY KEY (credential_id, account_id);
ALTER TABLE category_groups DROP CONSTRAINT category_groups_pkey, ADD CONSTRAINT category_groups_pkey PRIMARY KEY (id);
ALTER TABLE categories DROP CONSTRAINT categories_pkey, ADD CONSTRAINT categories_pkey PRIMARY KEY (id);
ALTER TABLE transactions DROP CONSTRAINT transactions_pkey, ADD CONSTRAINT transactions_pkey PRIMARY KEY (id);
ALTER TABLE rules DROP CONSTRAINT rules_pkey, ADD CONSTRAINT rules_pkey PRIMARY KEY (id);
ALTER TABLE balance_history DROP CONSTRAINT balance_history_pkey, ADD CONSTRAINT balance_history_pkey PRIMARY KEY (id);
ALTER TABLE securities DROP CONSTRAINT securities_pkey, ADD CONSTRAINT securities_pkey PRIMARY KEY (id);
ALTER TABLE holdings DROP CONSTRAINT holdings_pkey, ADD CONSTRAINT holdings_pkey PRIMARY KEY (id);
ALTER TABLE investment_transactions DROP CONSTRAINT investment_transactions_pkey,
    ADD CONSTRAINT investment_transactions_pkey PRIMARY KEY (id);
ALTER TABLE destinations DROP CONSTRAINT destinations_pkey, ADD CONSTRAINT destinations_pkey PRIMARY KEY (id);
ALTER TABLE destination_accounts DROP CONSTRAINT destination_accounts_pkey,
    ADD CONSTRAINT destination_accounts_pkey PRIMARY KEY (destination_id, account_id);
ALTER TABLE destination_outbox DROP CONSTRAINT destination_outbox_pkey,
    ADD CONSTRAINT destination_outbox_pkey PRIMARY KEY (destination_id, id);

ALTER TABLE connection_datasets ADD CONSTRAINT connection_datasets_bank_connection_id_fkey
    FOREIGN KEY (bank_connection_id) REFERENCES bank_connections (id) ON DELETE CASCADE;
ALTER TABLE accounts ADD CONSTRAINT accounts_bank_connection_id_fkey
    FOREIGN KEY (bank_connection_id) REFERENCES bank_connections (id) ON DELETE CASCADE;
ALTER TABLE credential_accounts ADD CONSTRAINT credential_accounts_account_id_fkey
    FOREIGN KEY (account_id) REFERENCES accounts (id) ON DELETE CASCADE;
ALTER TABLE categories ADD CONSTRAINT categories_group_id_fkey
    FOREIGN KEY (group_id) REFERENCES category_groups (id) ON DELETE SET NULL;
ALTER TABLE balance_history ADD CONSTRAINT balance_history_account_id_fkey
    FOREIGN KEY (account_id) REFERENCES accounts (id) ON DELETE CASCADE;
ALTER TABLE holdings
    ADD CONSTRAINT holdings_account_id_fkey FOREIGN KEY (account_id) REFERENCES accounts (id) ON DELETE CASCADE,
    ADD CONSTRAINT holdings_security_id_fkey FOREIGN KEY (security_id) REFERENCES securities (id) ON DELETE CASCADE;
ALTER TABLE investment_transactions
    ADD CONSTRAINT investment_transactions_bank_connection_id_fkey
        FOREIGN KEY (bank_connection_id) REFERENCES bank_connections (id) ON DELETE CASCADE,
    ADD CONSTRAINT investment_transactions_account_id_fkey
        FOREIGN KEY (account_id) REFERENCES accounts (id) ON DELETE CASCADE,
    ADD CONSTRAINT investment_transactions_security_id_fkey
        FOREIGN KEY (security_id) REFERENCES securities (id) ON DELETE SET NULL;
ALTER TABLE destination_accounts
    ADD CONSTRAINT destination_accounts_destination_id_fkey
        FOREIGN KEY (destination_id) REFERENCES destinations (id) ON DELETE CASCADE,
    ADD CONSTRAINT destination_accounts_account_id_fkey
        FOREIGN KEY (account_id) REFERENCES accounts (id) ON DELETE CASCADE;
ALTER TABLE destination_outbox ADD CONSTRAINT destination_outbox_destination_id_fkey
    FOREIGN KEY (destination_id) REFERENCES destinations (id) ON DELETE CASCADE;

ALTER TABLE destination_outbox DROP COLUMN user_id;
ALTER TABLE destination_accounts DROP COLUMN user_id;
ALTER TABLE credential_accounts DROP COLUMN user_id;
ALTER TABLE connection_datasets DROP COLUMN user_id;
