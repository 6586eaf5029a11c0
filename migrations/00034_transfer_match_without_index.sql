-- +goose NO TRANSACTION
-- +goose Up
-- Transfer detection no longer looks candidates up row by row: every
-- batch reads its window's days once (transactions_user_order_idx, or
-- transactions_account_order_idx per account) and matches amounts in
-- memory (docs/transfers.md). The candidate index only those look-ups
-- read goes; keeping it cost every inserted row an eighth index entry
-- (about 2 s of a 1,000,000-row first sync). Dropped concurrently:
-- transactions takes writes all the time.
DROP INDEX CONCURRENTLY IF EXISTS transactions_transfer_match_idx;

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS transactions_transfer_match_idx;
CREATE INDEX CONCURRENTLY IF NOT EXISTS transactions_transfer_match_idx
    ON transactions (user_id, tx_date, hash_numeric(abs(amount)))
    WHERE status <> 'deleted';
