-- +goose NO TRANSACTION
-- +goose Up
-- Transfer detection's candidate index, keyed (user, date, hash of the
-- amount). Keyed (user, 16-day bucket, amount, date) (migration 00032), a
-- sync's inserts landed on any leaf of the bucket, by amount: each a full
-- descent of the tree to a page of its own. With the date before the
-- amount, rows written in date order (a sync's are, and a first sync's
-- large batches are copied in date order) land on the last few leaves,
-- which stay in memory. The amount is keyed by its hash (an int4, equal
-- for equal amounts whatever their scale): comparing it is a fraction of
-- comparing numerics, which a dense day's inserts do dozens of times
-- each. A look-up reads one exact key per day of its window and checks
-- the amount itself. Built concurrently: transactions takes writes all
-- the time.
DROP INDEX CONCURRENTLY IF EXISTS transactions_transfer_match_idx;
CREATE INDEX CONCURRENTLY IF NOT EXISTS transactions_transfer_match_idx
    ON transactions (user_id, tx_date, hash_numeric(abs(amount)))
    WHERE status <> 'deleted';

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS transactions_transfer_match_idx;
CREATE INDEX CONCURRENTLY IF NOT EXISTS transactions_transfer_match_idx
    ON transactions (user_id, ((tx_date - DATE '2000-01-01') / 16), (abs(amount)), tx_date)
    WHERE status <> 'deleted';
