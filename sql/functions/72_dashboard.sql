-- What the dashboard (dashboard/) reads besides the views for psql: views without
-- payloads. Pages read payloads through the views for psql only (pgq.ready, pgq.failed,
-- …), so a role that may not see payloads there sees none in the dashboard either.

-- pgq.job_settings: each live job's frozen settings (S1), counters and where it stands,
-- without its payload: the job page's header. state is ready, scheduled, retrying or
-- running, by the conditions of the views of those names. chunk is the job's chunk of
-- pgq.loads (S85), NULL for a row. batch_id, chain_id and chain_step say which batch or
-- chain it belongs to (chain_step 0: a callback of the batch or chain chain_id, S97). Read it by uuid (jobs_pkey), with
-- chunk IS NOT DISTINCT FROM (SELECT pgq._load_chunk_of(uuid)) to read one chunk.
CREATE OR REPLACE VIEW pgq.job_settings AS
SELECT j.uuid,
       CASE WHEN j.reserved_at IS NOT NULL THEN 'running'
            WHEN j.available_at <= now() THEN 'ready'
            WHEN j.attempts = 0 THEN 'scheduled'
            ELSE 'retrying' END AS state,
       j.job, j.queue, j.priority, j.handler, j.tries, j.backoff, j.max_exceptions, j.timeout,
       j.fail_on_timeout, j.retry_until, j.unique_key, j.unique_until, j.debounce_key, j.middleware,
       j.attempts, j.exceptions, j.lease_expiries, j.interruptions, j.turn_aways,
       j.last_exception_attempt, j.last_exception, j.wait_reason, j.available_at,
       j.reserved_by AS worker, j.reserved_at, j.started_at, j.reserved_until AS lease_until,
       j.cancel_requested_at, j.cancel_requested_by, j.created_at AS dispatched_at, NULL::uuid AS chunk,
       j.batch_id, j.chain_id, j.chain_step
FROM pgq.jobs j
UNION ALL
SELECT l.uuid, CASE WHEN l.available_at <= now() THEN 'ready' ELSE 'scheduled' END,
       l.job, l.queue, l.priority, l.handler, l.tries, l.backoff, l.max_exceptions, l.timeout,
       l.fail_on_timeout, l.retry_until, NULL, NULL, NULL, NULL,
       0, 0, 0, 0, '{}',
       NULL, NULL, 'dispatched', l.available_at,
       NULL, NULL, NULL, NULL,
       NULL, NULL, l.created_at, l.chunk,
       NULL, NULL, NULL
FROM pgq.load_jobs l;

COMMENT ON VIEW pgq.job_settings IS
    'Each live job''s frozen settings (S1), counters and state (ready, scheduled, retrying, running), without its payload.';

-- pgq.failed_job_settings: each failed job's frozen settings (S1) and its failure,
-- without its payload, and its batch or chain. Read it by uuid (failed_jobs_uuid_key).
CREATE OR REPLACE VIEW pgq.failed_job_settings AS
SELECT f.uuid, f.job, f.queue, f.priority, f.handler, f.tries, f.backoff, f.max_exceptions, f.timeout,
       f.fail_on_timeout, f.retry_until, f.unique_key, f.unique_until, f.debounce_key, f.middleware,
       f.attempts, f.dispatched_at, f.failed_at, f.exception, f.batch_id, f.chain_id, f.chain_step
FROM pgq.failed_jobs f;

COMMENT ON VIEW pgq.failed_job_settings IS
    'Each failed job''s frozen settings (S1) and its failure (failed_at, exception), without its payload.';

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
