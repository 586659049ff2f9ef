-- What the dashboard (dashboard/) reads besides the views for psql: views without
-- payloads. Pages read payloads through the views for psql only (pgq.ready, pgq.failed,
-- …), so a role that may not see payloads there sees none in the dashboard either.

-- pgq.job_settings: each live job's frozen settings (S1), counters and where it stands,
-- without its payload: the job page's header. state is ready, scheduled, retrying or
-- running, by the conditions of the views of those names. batch_id, chain_id and
-- chain_step say which batch or chain it belongs to (chain_step 0: a callback of the
-- batch or chain chain_id, S97). Read one job with pgq.live_job(uuid), which has these
-- columns and more.
CREATE OR REPLACE VIEW pgq.job_settings AS
SELECT l.uuid, l.state, l.job, l.queue, l.priority, l.handler, l.tries, l.backoff, l.max_exceptions, l.timeout,
       l.fail_on_timeout, l.retry_until, l.unique_key, l.unique_until, l.debounce_key, l.middleware,
       l.attempts, l.exceptions, l.lease_expiries, l.interruptions, l.turn_aways,
       l.last_exception_attempt, l.last_exception, l.wait_reason, l.available_at,
       l.reserved_by AS worker, l.reserved_at, l.started_at, l.reserved_until AS lease_until,
       l.cancel_requested_at, l.cancel_requested_by, l.created_at AS dispatched_at,
       l.batch_id, l.chain_id, l.chain_step
FROM pgq.live_jobs l;

COMMENT ON VIEW pgq.job_settings IS
    'Each live job''s frozen settings (S1), counters, state (ready, scheduled, retrying, running) and its batch or chain, without its payload.';

-- pgq.failed_job_settings: each failed job's frozen settings (S1) and its failure,
-- without its payload, and its batch or chain. Read it by uuid (failed_jobs_uuid_key).
CREATE OR REPLACE VIEW pgq.failed_job_settings AS
SELECT f.uuid, f.job, f.queue, f.priority, f.handler, f.tries, f.backoff, f.max_exceptions, f.timeout,
       f.fail_on_timeout, f.retry_until, f.unique_key, f.unique_until, f.debounce_key, f.middleware,
       f.attempts, f.dispatched_at, f.failed_at, f.exception, f.exception_detail, f.exception_hint,
       f.batch_id, f.chain_id, f.chain_step
FROM pgq.failed_jobs f;

COMMENT ON VIEW pgq.failed_job_settings IS
    'Each failed job''s frozen settings (S1), its failure (failed_at, exception with its DETAIL and HINT) and its batch or chain, without its payload.';

-- pgq.queue_overview: per queue, the figures of pgq.queue_stats (jobs ready, scheduled,
-- retrying, running and failed, the oldest wait) in one pass over pgq.jobs and one over
-- pgq.failed_jobs, with whether the queue is paused and its lease. Lists every queue
-- with a pgq.queues row, a live job or a failed job.
CREATE OR REPLACE VIEW pgq.queue_overview AS
WITH live AS (
    SELECT j.queue,
           sum(j.n) FILTER (WHERE j.reserved_at IS NULL AND j.available_at <= now()) AS ready,
           sum(j.n) FILTER (WHERE j.reserved_at IS NULL AND j.available_at > now() AND j.attempts = 0) AS scheduled,
           sum(j.n) FILTER (WHERE j.reserved_at IS NULL AND j.available_at > now() AND j.attempts > 0) AS retrying,
           sum(j.n) FILTER (WHERE j.reserved_at IS NOT NULL) AS running,
           min(j.available_at) FILTER (WHERE j.reserved_at IS NULL AND j.available_at <= now()) AS oldest_available_at
    FROM pgq._live_counted j
    GROUP BY j.queue
), failed AS (
    SELECT f.queue, count(*) AS failed
    FROM pgq.failed_jobs f
    GROUP BY f.queue
), names AS (
    SELECT q.name AS queue FROM pgq.queues q
    UNION SELECT l.queue FROM live l
    UNION SELECT f.queue FROM failed f
)
SELECT n.queue,
       coalesce(l.ready, 0)::bigint AS ready, coalesce(l.scheduled, 0)::bigint AS scheduled,
       coalesce(l.retrying, 0)::bigint AS retrying, coalesce(l.running, 0)::bigint AS running, coalesce(f.failed, 0) AS failed,
       coalesce(now() - l.oldest_available_at, interval '0')::interval AS oldest_wait,
       coalesce(q.paused, false) AS paused, q.retry_after
FROM names n
LEFT JOIN live l ON l.queue = n.queue
LEFT JOIN failed f ON f.queue = n.queue
LEFT JOIN pgq.queues q ON q.name = n.queue;

COMMENT ON VIEW pgq.queue_overview IS
    'Per queue: jobs ready, scheduled, retrying, running and failed, the oldest wait (pgq.queue_stats''s figures, in one pass over the live jobs), whether it is paused, its retry_after (NULL: no pgq.queues row, 90).';
