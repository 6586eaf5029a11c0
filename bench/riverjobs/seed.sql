-- Loads :n River jobs (default 1,000,000) into river_job in one statement,
-- spread over every job state and finsync's four job kinds the way a busy
-- fleet's table looks: mostly finalized jobs kept for River's retention
-- period, with a backlog of queued, scheduled and retried work.
-- Run with: psql -v n=1000000 -f bench/riverjobs/seed.sql DATABASE_URL
\if :{?n}
\else
\set n 1000000
\endif
INSERT INTO river_job (state, kind, queue, args, max_attempts, attempt, scheduled_at, finalized_at, attempted_at)
SELECT s.state, k.kind, k.queue, jsonb_build_object('seq', g), 20,
       CASE WHEN s.state IN ('available', 'pending', 'scheduled') THEN 0 ELSE 1 END,
       now() - (g % 86400) * interval '1 second',
       CASE WHEN s.state IN ('completed', 'cancelled', 'discarded') THEN now() - (g % 86400) * interval '1 second' END,
       CASE WHEN s.state IN ('available', 'pending', 'scheduled') THEN NULL ELSE now() - (g % 86400) * interval '1 second' END
FROM generate_series(1, :n) AS g
CROSS JOIN LATERAL (SELECT (CASE
    WHEN g % 100 < 70 THEN 'completed'
    WHEN g % 100 < 80 THEN 'available'
    WHEN g % 100 < 88 THEN 'scheduled'
    WHEN g % 100 < 92 THEN 'retryable'
    WHEN g % 100 < 94 THEN 'running'
    WHEN g % 100 < 97 THEN 'cancelled'
    WHEN g % 100 < 99 THEN 'discarded'
    ELSE 'pending' END)::river_job_state AS state) s
CROSS JOIN LATERAL (SELECT * FROM (VALUES
    (0, 'sync_connection', 'sync'), (1, 'apply_rules', 'rules'),
    (2, 'deliver_destination', 'default'), (3, 'schedule_syncs', 'default')) AS v(i, kind, queue)
    WHERE v.i = CASE WHEN (g / 100) % 20 < 11 THEN 0 WHEN (g / 100) % 20 < 16 THEN 1 WHEN (g / 100) % 20 < 19 THEN 2 ELSE 3 END) k;
ANALYZE river_job;
