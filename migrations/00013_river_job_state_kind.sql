-- +goose NO TRANSACTION
-- +goose Up
-- finsync_river_jobs (worker.JobCollector) counts River's jobs by state and
-- kind, each count stopping at a cap: with this index a count reads at most
-- that many index entries, however many jobs of other kinds share the state
-- (River's own indexes lead with state then queue, or with kind alone).
-- Built concurrently: river_job takes writes all the time.
CREATE INDEX CONCURRENTLY IF NOT EXISTS river_job_state_kind ON river_job (state, kind);

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS river_job_state_kind;
