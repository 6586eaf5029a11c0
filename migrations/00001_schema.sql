-- +goose Up
CREATE TABLE users (
    id            uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    email         text NOT NULL UNIQUE,
    plan          text NOT NULL DEFAULT 'none' CHECK (plan IN ('none', 'standard', 'pro', 'trial')),
    plan_active   boolean NOT NULL DEFAULT true,
    storage_mode  boolean NOT NULL DEFAULT false,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now()
);

-- API keys and OAuth access tokens: only a SHA-256 hash of the secret is kept.
CREATE TABLE credentials (
    id              uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    user_id         uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    kind            text NOT NULL CHECK (kind IN ('api_key', 'oauth_token')),
    name            text NOT NULL DEFAULT '',
    app_name        text NOT NULL DEFAULT '',
    token_hash      bytea NOT NULL UNIQUE,
    display_prefix  text NOT NULL,
    enabled         boolean NOT NULL DEFAULT true,
    expires_at      timestamptz,
    last_used_at    timestamptz,
    all_accounts    boolean NOT NULL DEFAULT true,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX credentials_user_idx ON credentials (user_id);

CREATE TABLE bank_connections (
    id                           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    user_id                      uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    provider                     text NOT NULL,
    institution_id               text NOT NULL DEFAULT '',
    institution_name             text NOT NULL DEFAULT '',
    institution_logo_url         text,
    status                       text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'error', 'disabled')),
    base_url                     text NOT NULL DEFAULT '',
    credentials_encrypted        bytea,
    sync_cursor                  text NOT NULL DEFAULT '',
    sync_state                   jsonb NOT NULL DEFAULT '{}',
    sync_interval                interval,
    last_synced_at               timestamptz,
    last_sync_attempt_at         timestamptz,
    next_sync_at                 timestamptz,
    last_provider_error_code     text,
    last_provider_error_message  text,
    last_error_class             text,
    reconnect_url                text,
    has_investments              boolean NOT NULL DEFAULT false,
    created_at                   timestamptz NOT NULL DEFAULT now(),
    updated_at                   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX bank_connections_user_idx ON bank_connections (user_id, created_at, id);

-- What of a connection's data has ever been stored, and how the last attempt to
-- fetch it ended; it decides between serving stale data and 502.
CREATE TABLE connection_datasets (
    bank_connection_id  uuid NOT NULL REFERENCES bank_connections (id) ON DELETE CASCADE,
    dataset             text NOT NULL CHECK (dataset IN ('accounts', 'transactions', 'holdings', 'investment_transactions')),
    stored_at           timestamptz,
    last_attempt_at     timestamptz,
    last_error_class    text,
    PRIMARY KEY (bank_connection_id, dataset)
);

CREATE TABLE accounts (
    id                   uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    user_id              uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    bank_connection_id   uuid REFERENCES bank_connections (id) ON DELETE CASCADE,
    provider_account_id  text,
    provider             text NOT NULL,
    manual               boolean NOT NULL,
    institution_name     text,
    name                 text NOT NULL,
    mask                 text,
    type                 text,
    subtype              text,
    currency             text NOT NULL,
    current_balance      numeric(19, 4),
    available_balance    numeric(19, 4),
    credit_limit         numeric(19, 4),
    balance_as_of        timestamptz,
    status               text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'closed')),
    closed_at            timestamptz,
    liability            jsonb,
    created_at           timestamptz NOT NULL DEFAULT now(),
    updated_at           timestamptz NOT NULL DEFAULT now(),
    CHECK (manual = (bank_connection_id IS NULL)),
    UNIQUE (bank_connection_id, provider_account_id)
);
CREATE INDEX accounts_user_idx ON accounts (user_id, created_at, id);

-- Accounts a scoped credential may reach (credentials.all_accounts = false).
CREATE TABLE credential_accounts (
    credential_id  uuid NOT NULL REFERENCES credentials (id) ON DELETE CASCADE,
    account_id     uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    PRIMARY KEY (credential_id, account_id)
);

CREATE TABLE category_groups (
    id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    user_id     uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    name        text NOT NULL,
    provider    text NOT NULL DEFAULT 'manual',
    created_at  timestamptz NOT NULL DEFAULT now(),
    UNIQUE (user_id, provider, name)
);

CREATE TABLE categories (
    id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    user_id      uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    provider     text NOT NULL DEFAULT 'manual',
    provider_id  text,
    name         text NOT NULL,
    group_id     uuid REFERENCES category_groups (id) ON DELETE SET NULL,
    description  text NOT NULL DEFAULT '',
    read_only    boolean NOT NULL DEFAULT false,
    user_edited  boolean NOT NULL DEFAULT false,
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now(),
    UNIQUE (user_id, provider, provider_id)
);
CREATE INDEX categories_user_idx ON categories (user_id, name, id);

CREATE TABLE transactions (
    id                      uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    user_id                 uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    bank_connection_id      uuid REFERENCES bank_connections (id) ON DELETE CASCADE,
    account_id              uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    provider                text NOT NULL,
    provider_id             text NOT NULL,
    status                  text NOT NULL CHECK (status IN ('pending', 'posted', 'deleted')),
    summary                 text NOT NULL DEFAULT '',
    amount                  numeric(19, 4) NOT NULL,
    currency                text NOT NULL,
    authorized_date         date,
    posted_date             date,
    -- The date for ordering and filters: posted, else authorized (pending).
    tx_date                 date GENERATED ALWAYS AS (COALESCE(posted_date, authorized_date)) STORED,
    merchant_name           text,
    provider_merchant_name  text,
    category_id             uuid REFERENCES categories (id) ON DELETE SET NULL,
    category_source         text CHECK (category_source IN ('provider', 'rule', 'user')),
    provider_category_id    uuid REFERENCES categories (id) ON DELETE SET NULL,
    category_rule_id        uuid,
    merchant_rule_id        uuid,
    hidden_rule_id          uuid,
    hidden                  boolean NOT NULL DEFAULT false,
    fees                    numeric(19, 4),
    fee_type                text,
    net_amount              numeric(19, 4),
    sub_account             text,
    payment_channel         text,
    check_number            text,
    original_description    text,
    source                  text,
    type                    text,
    pending_provider_id     text,
    created_at              timestamptz NOT NULL DEFAULT now(),
    posted_at               timestamptz,
    updated_at              timestamptz NOT NULL DEFAULT now(),
    CHECK (COALESCE(posted_date, authorized_date) IS NOT NULL),
    UNIQUE (bank_connection_id, provider_id)
);
CREATE INDEX transactions_user_order_idx ON transactions (user_id, tx_date DESC, id DESC);
CREATE INDEX transactions_account_order_idx ON transactions (account_id, tx_date DESC, id DESC);
CREATE INDEX transactions_category_idx ON transactions (category_id, tx_date DESC, id DESC) WHERE category_id IS NOT NULL;

CREATE TABLE rules (
    id                   uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    user_id              uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    conditions           jsonb NOT NULL,
    outcomes             jsonb NOT NULL,
    priority             integer NOT NULL CHECK (priority BETWEEN 1 AND 100),
    allowed_account_ids  uuid[],
    created_at           timestamptz NOT NULL DEFAULT clock_timestamp(),
    updated_at           timestamptz NOT NULL DEFAULT clock_timestamp(),
    archived_at          timestamptz
);
CREATE INDEX rules_user_idx ON rules (user_id, priority, created_at, id);

-- One stored balance per account per day.
CREATE TABLE balance_history (
    id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    user_id     uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    account_id  uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    date        date NOT NULL,
    balance     numeric(19, 4) NOT NULL,
    currency    text NOT NULL,
    updated_at  timestamptz NOT NULL DEFAULT now(),
    UNIQUE (account_id, date)
);
CREATE INDEX balance_history_user_order_idx ON balance_history (user_id, date DESC, id DESC);
CREATE INDEX balance_history_account_order_idx ON balance_history (account_id, date DESC, id DESC);

CREATE TABLE securities (
    id                    uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    user_id               uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    provider              text NOT NULL,
    provider_security_id  text NOT NULL,
    symbol                text,
    name                  text NOT NULL,
    type                  text NOT NULL,
    close_price           numeric(19, 4),
    currency              text,
    updated_at            timestamptz NOT NULL DEFAULT now(),
    UNIQUE (user_id, provider, provider_security_id)
);

CREATE TABLE holdings (
    id                 uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    user_id            uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    account_id         uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    security_id        uuid NOT NULL REFERENCES securities (id) ON DELETE CASCADE,
    provider           text NOT NULL,
    quantity           numeric(28, 10) NOT NULL,
    cost_basis         numeric(19, 4),
    institution_price  numeric(19, 4) NOT NULL,
    institution_value  numeric(19, 4) NOT NULL,
    currency           text NOT NULL,
    price_as_of        date,
    updated_at         timestamptz NOT NULL DEFAULT now(),
    UNIQUE (account_id, security_id)
);
CREATE INDEX holdings_user_order_idx ON holdings (user_id, id);

CREATE TABLE investment_transactions (
    id                  uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    user_id             uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    bank_connection_id  uuid NOT NULL REFERENCES bank_connections (id) ON DELETE CASCADE,
    account_id          uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    security_id         uuid REFERENCES securities (id) ON DELETE SET NULL,
    provider            text NOT NULL,
    provider_id         text NOT NULL,
    date                date NOT NULL,
    type                text NOT NULL,
    subtype             text NOT NULL DEFAULT '',
    quantity            numeric(28, 10) NOT NULL,
    price               numeric(19, 4) NOT NULL,
    amount              numeric(19, 4) NOT NULL,
    fees                numeric(19, 4),
    currency            text NOT NULL,
    description         text NOT NULL DEFAULT '',
    updated_at          timestamptz NOT NULL DEFAULT now(),
    UNIQUE (bank_connection_id, provider_id)
);
CREATE INDEX investment_transactions_user_order_idx ON investment_transactions (user_id, date DESC, id DESC);

-- +goose Down
DROP TABLE investment_transactions, holdings, securities, balance_history, rules, transactions,
    categories, category_groups, credential_accounts, accounts, connection_datasets,
    bank_connections, credentials, users;
