-- +goose NO TRANSACTION
-- +goose Up
-- Transfer detection's candidate index, keyed by date first. Its keys were
-- (user, amount, date): amounts arrive in no order, so every insert of a
-- sync landed on a random leaf of the user's whole history, and at a
-- million rows that cost a first sync more than a quarter of its time.
-- Keyed by (user, 16-day bucket of the date, amount, date), a sync's
-- inserts land among the leaves of the few buckets its rows fall in, and a
-- look-up (a window of 5 days either side of a row's date spans at most
-- two buckets) is still an exact range per bucket. Built concurrently:
-- transactions takes writes all the time.
DROP INDEX CONCURRENTLY IF EXISTS transactions_transfer_match_idx;
CREATE INDEX CONCURRENTLY IF NOT EXISTS transactions_transfer_match_idx
    ON transactions (user_id, ((tx_date - DATE '2000-01-01') / 16), (abs(amount)), tx_date)
    WHERE status <> 'deleted';

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS transactions_transfer_match_idx;
CREATE INDEX CONCURRENTLY IF NOT EXISTS transactions_transfer_match_idx ON transactions (user_id, (abs(amount)), tx_date)
    WHERE status <> 'deleted';
