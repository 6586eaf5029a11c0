-- +goose Up
-- A transfer pairs an outflow in one of a user's accounts with the inflow
-- it became in another (docs/transfers.md). Each transaction is in at most
-- one transfer. The accounts and the outflow's date are copied from the
-- transactions so that listings filter and page on this table's own
-- indexes; a pair follows a pending transaction to the posted one.
CREATE TABLE transfers (
    id                      uuid NOT NULL DEFAULT gen_random_uuid(),
    user_id                 uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    outflow_transaction_id  uuid NOT NULL,
    inflow_transaction_id   uuid NOT NULL,
    outflow_account_id      uuid NOT NULL,
    inflow_account_id       uuid NOT NULL,
    date                    date NOT NULL,
    amount                  numeric(19, 4) NOT NULL CHECK (amount > 0),
    currency                text NOT NULL,
    inflow_amount           numeric(19, 4) NOT NULL CHECK (inflow_amount > 0),
    inflow_currency         text NOT NULL,
    confidence              numeric(4, 3) NOT NULL CHECK (confidence BETWEEN 0 AND 1),
    source                  text NOT NULL CHECK (source IN ('detected', 'user')),
    reasons                 text[] NOT NULL DEFAULT '{}',
    created_at              timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (id, user_id),
    UNIQUE (outflow_transaction_id, user_id),
    UNIQUE (inflow_transaction_id, user_id),
    CHECK (outflow_account_id <> inflow_account_id)
);
CREATE INDEX transfers_user_date_idx ON transfers (user_id, date DESC, id DESC);

-- Transactions have no foreign keys (migrations 00003, 00004): a deleted
-- account's transactions go by a statement trigger, and its transfers
-- with them, by this one.
-- +goose StatementBegin
CREATE FUNCTION delete_account_transfers() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM transfers tr USING gone g
        WHERE tr.user_id = g.user_id AND (tr.outflow_account_id = g.id OR tr.inflow_account_id = g.id);
    RETURN NULL;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER accounts_delete_transfers AFTER DELETE ON accounts
    REFERENCING OLD TABLE AS gone
    FOR EACH STATEMENT EXECUTE FUNCTION delete_account_transfers();

-- A transaction marked deleted (a removal by the provider, a pending row
-- that vanished) leaves its transfer, whatever statement marks it: two
-- unique-index look-ups per deleted row. Rejections stay.
-- +goose StatementBegin
CREATE FUNCTION drop_deleted_transaction_transfers() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM transfers WHERE outflow_transaction_id = NEW.id AND user_id = NEW.user_id;
    DELETE FROM transfers WHERE inflow_transaction_id = NEW.id AND user_id = NEW.user_id;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER transactions_deleted_drop_transfers AFTER UPDATE OF status ON transactions
    FOR EACH ROW WHEN (NEW.status = 'deleted' AND OLD.status <> 'deleted')
    EXECUTE FUNCTION drop_deleted_transaction_transfers();

-- A pair a user unpaired (DELETE /v2/transfers/{id}): never detected again.
-- Transaction ids are stable across re-syncs; the rows follow a pending
-- transaction to the posted one as transfers do.
CREATE TABLE transfer_rejections (
    user_id                 uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    outflow_transaction_id  uuid NOT NULL,
    inflow_transaction_id   uuid NOT NULL,
    created_at              timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (outflow_transaction_id, inflow_transaction_id, user_id)
);
CREATE INDEX transfer_rejections_inflow_idx ON transfer_rejections (inflow_transaction_id, user_id);
-- Whether a user has rejected any pair (detection of a large batch checks
-- its candidates against rejections only then).
CREATE INDEX transfer_rejections_user_idx ON transfer_rejections (user_id);

-- Candidate search of transfer detection: a user's live rows by absolute
-- amount and date.
CREATE INDEX transactions_transfer_match_idx ON transactions (user_id, (abs(amount)), tx_date)
    WHERE status <> 'deleted';

-- +goose Down
DROP INDEX transactions_transfer_match_idx;
DROP TABLE transfer_rejections;
DROP TRIGGER transactions_deleted_drop_transfers ON transactions;
DROP FUNCTION drop_deleted_transaction_transfers();
DROP TRIGGER accounts_delete_transfers ON accounts;
DROP FUNCTION delete_account_transfers();
DROP TABLE transfers;
