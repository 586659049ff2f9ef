-- What the dashboard (dashboard/) reads besides the views for psql: one view, without
-- payloads. Pages read payloads through the psql views only (pgq.ready, pgq.failed, …),
-- so a role that may not see payloads there sees none in the dashboard either.

-- pgq.job_settings: each live or failed job's frozen settings (S1), counters and where it
-- stands, one row per job, without its payload: the job page's header. state is ready,
-- scheduled, retrying or running (pgq.jobs; the conditions of the views of those names)
-- or failed (pgq.failed_jobs). Read it by uuid: each branch has a unique index on uuid.
-- Counters a failed job no longer keeps (exceptions, lease_expiries, interruptions,
-- turn_aways) are NULL for it: its attempts in pgq.attempts tell them.
CREATE OR REPLACE VIEW pgq.job_settings AS
SELECT f.uuid, 'failed'::text AS state, f.job, f.queue, f.priority, f.handler, f.tries, f.backoff,
       f.max_exceptions, f.timeout, f.fail_on_timeout, f.retry_until, f.unique_key, f.unique_until,
       f.debounce_key, f.middleware, f.attempts,
       NULL::int AS exceptions, NULL::int AS lease_expiries, NULL::int AS interruptions, NULL::jsonb AS turn_aways,
       NULL::text AS wait_reason, NULL::timestamptz AS available_at, NULL::text AS worker,
       NULL::timestamptz AS reserved_at, NULL::timestamptz AS started_at, NULL::timestamptz AS lease_until,
       NULL::timestamptz AS cancel_requested_at, NULL::text AS cancel_requested_by,
       f.dispatched_at, nf.failed_at, nf.exception
FROM pgq.failed_jobs f
-- The join to itself only tells sqlc that failed_at and exception may be NULL (as they
-- are for live jobs): sqlc types a UNION's columns by its first branch. PostgreSQL drops
-- the join when neither column is read, and reads one index entry when one is.
LEFT JOIN pgq.failed_jobs nf ON nf.id = f.id
UNION ALL
SELECT j.uuid,
       CASE WHEN j.reserved_at IS NOT NULL THEN 'running'
            WHEN j.available_at <= now() THEN 'ready'
            WHEN j.attempts = 0 THEN 'scheduled'
            ELSE 'retrying' END,
       j.job, j.queue, j.priority, j.handler, j.tries, j.backoff,
       j.max_exceptions, j.timeout, j.fail_on_timeout, j.retry_until, j.unique_key, j.unique_until,
       j.debounce_key, j.middleware, j.attempts,
       j.exceptions, j.lease_expiries, j.interruptions, j.turn_aways,
       j.wait_reason, j.available_at, j.reserved_by,
       j.reserved_at, j.started_at, j.reserved_until,
       j.cancel_requested_at, j.cancel_requested_by,
       j.created_at, NULL, j.last_exception
FROM pgq.jobs j;

COMMENT ON VIEW pgq.job_settings IS
    'Each live or failed job''s frozen settings (S1), counters and state (ready, scheduled, retrying, running, failed), without its payload. exception: the failure, or a live job''s last exception.';
